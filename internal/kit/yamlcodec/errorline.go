package yamlcodec

import (
	"strconv"
	"strings"
)

// ErrorLine splits a gopkg.in/yaml.v3 error ("yaml: line 3: did not find expected key") into its line (1 when it
// names none) and its message, for the one-line `file:line: …` problems of the files fleetwave reads (the release
// policy, the instances file).
func ErrorLine(err error) (line int, msg string) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return max(line, 1), msg
}
