package rollout

import (
	"fmt"
	"strings"
)

// short abbreviates a commit SHA.
func short(rev string) string {
	if len(rev) > 10 && (len(rev) == 40 || len(rev) == 64) {
		return rev[:10]
	}
	return rev
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
