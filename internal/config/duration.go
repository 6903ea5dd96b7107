package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads a span of time as settings and flags give it: Go's duration syntax ("720h", "90m"), whole days
// ("90d"), or "0".
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (such as 90d or 720h)", s)
	}
	return d, nil
}
