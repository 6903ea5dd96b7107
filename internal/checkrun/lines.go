package checkrun

import (
	"regexp"
	"strings"
)

// manifestLine finds where to annotate an Application in a YAML stream: within the document whose
// metadata.name is name (the first "name: <name>" line; an ApplicationSet's templated name never matches, so
// its whole file is searched), the line of the first of keys found, else the name line, else the first
// "kind: Application…" line, else 1. Lines are 1-based.
func manifestLine(data []byte, name string, keys ...string) int {
	lines := strings.Split(string(data), "\n")
	start, end := 0, len(lines)
	nameLine := -1
	if name != "" {
		nameRE := regexp.MustCompile(`^\s*name:\s*["']?` + regexp.QuoteMeta(name) + `["']?\s*(#.*)?$`)
		for i, l := range lines {
			if nameRE.MatchString(l) {
				nameLine = i
				break
			}
		}
	}
	if nameLine >= 0 {
		start, end = docBounds(lines, nameLine)
	}
	if i := findKey(lines[start:end], keys...); i >= 0 {
		return start + i + 1
	}
	if nameLine >= 0 {
		return nameLine + 1
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "kind: Application") {
			return i + 1
		}
	}
	return 1
}

// policyWaveLine is the line of wave's "name:" in a policy file, 0 when absent.
func policyWaveLine(data []byte, wave string) int {
	if wave == "" {
		return 0
	}
	re := regexp.MustCompile(`^\s*(-\s*)?name:\s*["']?` + regexp.QuoteMeta(wave) + `["']?\s*(#.*)?$`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

// docBounds returns the YAML document (between "---" separators) holding line i, as [start, end).
func docBounds(lines []string, i int) (int, int) {
	start, end := 0, len(lines)
	for j := i; j >= 0; j-- {
		if isSeparator(lines[j]) {
			start = j + 1
			break
		}
	}
	for j := i + 1; j < len(lines); j++ {
		if isSeparator(lines[j]) {
			end = j
			break
		}
	}
	return start, end
}

func isSeparator(l string) bool {
	return l == "---" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "---\t")
}

// findKey returns the index of the first line that is one of keys ("key:" after indentation or "- "), -1 when
// none is.
func findKey(lines []string, keys ...string) int {
	for i, l := range lines {
		t := strings.TrimLeft(strings.TrimSpace(l), "- ")
		for _, k := range keys {
			if strings.HasPrefix(t, k+":") {
				return i
			}
		}
	}
	return -1
}
