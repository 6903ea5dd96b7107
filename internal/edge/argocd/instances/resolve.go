package instances

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/gobwas/glob"
)

// App is what decides which instance holds an Application: where its file is in the repository and what it says.
type App struct {
	// Path is the Application file's path in the repository, '/'-separated, relative to its top level.
	Path                               string
	Namespace, Name, Project           string
	Labels                             map[string]string
	DestinationName, DestinationServer string
}

// matcher matches one pattern.
type matcher func(string) bool

// pathGlob compiles a doublestar pattern over repository paths: `*` stays within a directory, `**` crosses them.
func pathGlob(pattern string) (matcher, error) {
	if !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("not a valid glob")
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, fmt.Errorf("paths are relative to the repository's top level: drop the leading /")
	}
	return func(s string) bool { ok, _ := doublestar.Match(pattern, s); return ok }, nil
}

// nameGlob compiles a pattern over a project or destination as Argo CD's AppProject matches them
// (pkg/apis/application/v1alpha1/app_project_types.go globMatch: gobwas/glob without separators, so `*` also
// matches `/` in a server URL).
func nameGlob(pattern string) (matcher, error) {
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("not a valid glob: %v", err)
	}
	return g.Match, nil
}

// matches reports whether every field of r matches a.
func (r *Rule) matches(a App, p string) bool {
	if len(r.paths) > 0 && !anyMatch(r.paths, p) {
		return false
	}
	for k, v := range r.Labels {
		if got, ok := a.Labels[k]; !ok || got != v {
			return false
		}
	}
	if len(r.projects) > 0 && !anyMatch(r.projects, a.Project) {
		return false
	}
	if len(r.destinations) > 0 && !anyMatch(r.destinations, a.DestinationName) && !anyMatch(r.destinations, a.DestinationServer) {
		return false
	}
	return true
}

func anyMatch(ms []matcher, s string) bool {
	if s == "" {
		return false
	}
	for _, m := range ms {
		if m(s) {
			return true
		}
	}
	return false
}

// Holds reports whether the instance owns a (any of its rules matches), and the first rule that matches (nil for
// Single's instance, which owns every app).
func (in *Instance) Holds(a App) (bool, *Rule) { return in.owns(a, cleanPath(a.Path)) }

func (in *Instance) owns(a App, p string) (bool, *Rule) {
	if in.all {
		return true, nil
	}
	for i := range in.Owns {
		if in.Owns[i].matches(a, p) {
			return true, &in.Owns[i]
		}
	}
	return false, nil
}

// Resolve names the one instance that holds a. A single-instance Set (Single) resolves every app to "". An app
// no instance owns, or that two or more own, is an error of one line, meant to follow the app's name: "maps to
// no Argo CD instance (…)", "maps to two instances: eu and us (…)".
func (s *Set) Resolve(a App) (string, error) {
	if s.IsSingle() {
		return "", nil
	}
	p := cleanPath(a.Path)
	var names, why []string
	for _, in := range s.instances {
		if ok, r := in.owns(a, p); ok {
			names = append(names, in.Name)
			why = append(why, fmt.Sprintf("%s by %s:%d", in.Name, s.file, r.Line))
		}
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", fmt.Errorf("maps to no Argo CD instance (%s: no rule of any instance matches %s)", s.file, describeApp(a, p))
	case 2:
		return "", fmt.Errorf("maps to two instances: %s and %s (%s)", names[0], names[1], strings.Join(why, ", "))
	}
	return "", fmt.Errorf("maps to %d instances: %s and %s (%s)", len(names), strings.Join(names[:len(names)-1], ", "),
		names[len(names)-1], strings.Join(why, ", "))
}

// describeApp lists what the rules look at, for the error of an app no rule matches.
func describeApp(a App, p string) string {
	parts := []string{"path " + orNone(p)}
	if len(a.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
			ls = append(ls, k+"="+a.Labels[k])
		}
		parts = append(parts, "labels "+strings.Join(ls, ","))
	} else {
		parts = append(parts, "no labels")
	}
	parts = append(parts, "project "+orNone(a.Project))
	dest := a.DestinationName
	if dest == "" {
		dest = a.DestinationServer
	} else if a.DestinationServer != "" {
		dest += " (" + a.DestinationServer + ")"
	}
	parts = append(parts, "destination "+orNone(dest))
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// cleanPath is a repository path without "./" or a leading "/".
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	p = path.Clean(strings.TrimPrefix(p, "/"))
	if p == "." {
		return ""
	}
	return p
}
