// Package hostileyaml writes the hostile YAML the guards against it are tested with. It is imported by tests
// only.
package hostileyaml

import (
	"fmt"
	"strings"
)

// AliasBomb is a "billion laughs" of the given depth, each line indented by indent (to sit under a mapping
// key): l0 a list of nine scalars, each next level a list of nine aliases of the one before, so 9 levels
// expand to 9^9 nodes from about 500 bytes.
func AliasBomb(indent string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [x,x,x,x,x,x,x,x,x]\n", indent)
	for i := 1; i < levels; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(p+",", 9), ","))
	}
	return b.String()
}
