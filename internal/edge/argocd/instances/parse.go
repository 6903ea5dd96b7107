package instances

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec"
)

// MaxFileBytes bounds an instances file.
const MaxFileBytes = 1 << 20

// maxProblems bounds the problems one parse reports.
const maxProblems = 100

// maxMaxSyncs bounds maxSyncs: far above any controller's operation processors.
const maxMaxSyncs = 10000

// Problem is one error in an instances file, with its position (Column 0 when unknown).
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string
	Hint    string
}

// String is "file:line:col: message (hint: hint)", as the release policy's diagnostics.
func (p Problem) String() string {
	var sb strings.Builder
	sb.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&sb, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&sb, ":%d", p.Column)
		}
	}
	sb.WriteString(": ")
	sb.WriteString(p.Message)
	if p.Hint != "" {
		sb.WriteString(" (hint: " + p.Hint + ")")
	}
	return sb.String()
}

// Error is an invalid instances file: every problem found, in file order.
type Error struct {
	File     string
	Problems []Problem
}

// Error is the first problem, and how many more there are: one line.
func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return e.File + ": invalid instances file"
	}
	s := e.Problems[0].String()
	if n := len(e.Problems) - 1; n > 0 {
		s += fmt.Sprintf(" [and %d more; run fleetwave validate --argocd-instances %s]", n, e.File)
	}
	return s
}

// Options say where Parse reads credentials from. The zero value reads the process's environment.
type Options struct {
	// Getenv reads the token variables (os.Getenv when nil); a variable set to blanks counts as unset.
	Getenv func(string) string
}

// Load reads and parses the instances file at path.
func Load(path string) (*Set, error) { return LoadWith(path, Options{}) }

// LoadWith is Load with o.
func LoadWith(path string, o Options) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("instances file %s: %s", path, pathErr(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("instances file %s: %s", path, pathErr(err))
	}
	return ParseWith(path, data, o)
}

// Parse reads an instances file (file names it in messages), resolving its credentials from the process's
// environment and file system. Every problem is reported at once in an *Error.
func Parse(file string, data []byte) (*Set, error) { return ParseWith(file, data, Options{}) }

// ParseWith is Parse with o.
func ParseWith(file string, data []byte, o Options) (*Set, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	p := &parser{file: file, getenv: o.Getenv}
	set := p.parse(data)
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
		if len(p.problems) > maxProblems {
			p.problems = p.problems[:maxProblems]
		}
		return nil, &Error{File: file, Problems: p.problems}
	}
	return set, nil
}

type parser struct {
	file     string
	getenv   func(string) string
	problems []Problem
}

func (p *parser) errAt(n *yaml.Node, hint, format string, args ...any) {
	p.problems = append(p.problems, Problem{File: p.file, Line: n.Line, Column: n.Column, Message: fmt.Sprintf(format, args...), Hint: hint})
}

// namePattern is an instance name: lowercase letters, digits and '-', starting and ending with a letter or
// digit (a Kubernetes label value and a Prometheus label value as is).
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// namespacePattern is a Kubernetes namespace name (RFC 1123 label; at most 63, checked apart).
var namespacePattern = namePattern

// maxNameLen bounds an instance name (it shows in comments, check-runs and metrics).
const maxNameLen = 40

// envName is an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p *parser) parse(data []byte) *Set {
	if len(data) > MaxFileBytes {
		p.problems = append(p.problems, Problem{File: p.file, Line: 1, Message: fmt.Sprintf("larger than %d bytes", MaxFileBytes)})
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.syntaxError(err)
		return nil
	}
	if len(doc.Content) == 0 {
		p.problems = append(p.problems, Problem{File: p.file, Line: 1, Message: "empty: want `instances:` and a list of Argo CD instances"})
		return nil
	}
	set := &Set{file: p.file, byName: map[string]*Instance{}}
	var list *yaml.Node
	p.fields(doc.Content[0], "the instances file", []string{"instances"}, func(k, v *yaml.Node) { list = v })
	if list == nil {
		if doc.Content[0].Kind == yaml.MappingNode {
			p.errAt(doc.Content[0], "", "`instances` is required: the list of Argo CD instances")
		}
		return set
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		p.errAt(list, "", "instances must be a list of one or more Argo CD instances, not %s", describe(list))
		return set
	}
	first := map[string]int{}
	for _, n := range list.Content {
		in := p.instance(n)
		if in == nil {
			continue
		}
		if in.Name != "" {
			if line, dup := first[in.Name]; dup {
				p.errAt(n, fmt.Sprintf("first at line %d", line), "instance %q is named twice", in.Name)
				continue
			}
			first[in.Name] = in.Line
		}
		set.instances = append(set.instances, in)
		set.byName[in.Name] = in
	}
	return set
}

func (p *parser) instance(n *yaml.Node) *Instance {
	n = resolve(n)
	in := &Instance{Line: n.Line, MaxSyncs: DefaultMaxSyncs}
	seen := map[string]bool{}
	ok := p.fields(n, "an instance", []string{"name", "url", "token", "tls", "maxSyncs", "agent", "agentNamespace", "agentDestinationMapping", "owns"}, func(k, v *yaml.Node) {
		seen[k.Value] = true
		switch k.Value {
		case "name":
			s, ok := p.str(v, "name")
			switch {
			case !ok:
			case len(s) > maxNameLen || !namePattern.MatchString(s):
				p.errAt(v, "lowercase letters, digits and '-', at most 40, such as eu-prod", "name %q is not an instance name", s)
			default:
				in.Name = s
			}
		case "url":
			if s, ok := p.str(v, "url"); ok {
				if u, err := checkURL(s); err != nil {
					p.errAt(v, "", "url: %v", err)
				} else {
					in.URL = u
				}
			}
		case "token":
			p.token(v, in)
		case "tls":
			p.fields(v, "tls", []string{"caFile", "insecure"}, func(k, v *yaml.Node) {
				switch k.Value {
				case "caFile":
					if s, ok := p.str(v, "caFile"); ok {
						if err := checkCA(s); err != nil {
							p.errAt(v, "", "tls.caFile: %v", err)
						} else {
							in.CAFile = s
						}
					}
				case "insecure":
					in.Insecure, _ = p.boolean(v, "tls.insecure")
				}
			})
		case "maxSyncs":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 || n > maxMaxSyncs {
				p.errAt(v, "Argo CD's controller runs 10 at once per shard by default (--operation-processors)",
					"maxSyncs must be a number of sync operations from 1 to %d, not %s", maxMaxSyncs, describe(v))
			} else {
				in.MaxSyncs = n
			}
		case "agent":
			in.Agent, _ = p.boolean(v, "agent")
		case "agentNamespace":
			if s, ok := p.str(v, "agentNamespace"); ok {
				if !namespacePattern.MatchString(s) || len(s) > 63 {
					p.errAt(v, "the namespace the agents' Argo CD runs in (argocd-agent's agent.namespace)", "agentNamespace %q is not a namespace name", s)
				} else {
					in.AgentNamespace = s
				}
			}
		case "agentDestinationMapping":
			in.AgentDestinationMapping, _ = p.boolean(v, "agentDestinationMapping")
		case "owns":
			in.Owns = p.rules(v)
		}
	})
	if !ok {
		return nil
	}
	for _, key := range []string{"agentNamespace", "agentDestinationMapping"} {
		if seen[key] && !in.Agent {
			p.errAt(n, "", "instance %s: %s is for an argocd-agent principal: add agent: true, or remove it", in.Name, key)
		}
	}
	if in.Agent && in.AgentNamespace == "" {
		in.AgentNamespace = DefaultAgentNamespace
	}
	for _, req := range []struct{ key, what string }{
		{"name", "the instance's name, such as eu"},
		{"url", "its API URL, such as https://argocd-eu.example.com"},
		{"token", "{env: VARIABLE} or {file: /path/to/token}"},
		{"owns", "the rules of the apps it holds, such as - paths: [\"clusters/eu/**\"]"},
	} {
		if !seen[req.key] {
			p.errAt(n, "", "instance: %s is required: %s", req.key, req.what)
		}
	}
	return in
}

func (p *parser) token(v *yaml.Node, in *Instance) {
	var env, file *yaml.Node
	ok := p.fields(v, "token", []string{"env", "file"}, func(k, v *yaml.Node) {
		if k.Value == "env" {
			env = v
		} else {
			file = v
		}
	})
	switch {
	case !ok:
	case (env == nil) == (file == nil):
		p.errAt(v, "{env: ARGOCD_EU_TOKEN} or {file: /var/run/secrets/argocd-eu/token}", "token: give exactly one of env and file")
	case env != nil:
		name, ok := p.str(env, "token.env")
		switch {
		case !ok:
		case !envName.MatchString(name):
			p.errAt(env, "", "token.env: %q is not an environment variable name", name)
		case strings.TrimSpace(p.getenv(name)) == "":
			p.errAt(env, "", "token.env: environment variable %s is not set", name)
		default:
			in.cred = credential{env: name, value: strings.TrimSpace(p.getenv(name))}
		}
	default:
		path, ok := p.str(file, "token.file")
		if !ok {
			return
		}
		ft := newFileToken(path)
		if _, err := ft.token(); err != nil {
			p.errAt(file, "", "token.file: %v", err)
			return
		}
		in.cred = credential{file: ft}
	}
}

func (p *parser) rules(v *yaml.Node) []Rule {
	v = resolve(v)
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		p.errAt(v, "such as - paths: [\"clusters/eu/**\"]", "owns must be a list of one or more rules, not %s", describe(v))
		return nil
	}
	var out []Rule
	for _, rn := range v.Content {
		rn = resolve(rn)
		r := Rule{Line: rn.Line}
		given := 0 // known fields
		ok := p.fields(rn, "a rule of owns", []string{"paths", "labels", "projects", "destinations"}, func(k, v *yaml.Node) {
			given++
			switch k.Value {
			case "paths":
				r.Paths, r.paths = p.globs(v, "paths", pathGlob)
			case "projects":
				r.Projects, r.projects = p.globs(v, "projects", nameGlob)
			case "destinations":
				r.Destinations, r.destinations = p.globs(v, "destinations", nameGlob)
			case "labels":
				r.Labels = map[string]string{}
				p.fields(v, "labels", nil, func(k, v *yaml.Node) {
					if s, ok := p.str(v, "label "+k.Value); ok {
						r.Labels[k.Value] = s
					}
				})
				if len(r.Labels) == 0 {
					p.errAt(v, "", "labels: give one or more labels")
				}
			}
		})
		if !ok {
			continue
		}
		if given == 0 && len(rn.Content) == 0 {
			p.errAt(rn, `write paths: ["**"] to own every app`, "a rule with no field would match every app")
			continue
		}
		out = append(out, r)
	}
	return out
}

// globs reads a list of patterns (a single string is a list of one).
func (p *parser) globs(v *yaml.Node, what string, compile func(string) (matcher, error)) ([]string, []matcher) {
	v = resolve(v)
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	if len(items) == 0 {
		p.errAt(v, "", "%s: give one or more patterns", what)
	}
	var pats []string
	var ms []matcher
	for _, it := range items {
		s, ok := p.str(it, what)
		if !ok {
			continue
		}
		m, err := compile(s)
		if err != nil {
			p.errAt(it, "", "%s: %q: %v", what, s, err)
			continue
		}
		pats, ms = append(pats, s), append(ms, m)
	}
	return pats, ms
}

// fields calls handle for every key of mapping n that is known (every key when known is nil), reporting
// unknown and duplicate keys. It returns false when n is not a mapping.
func (p *parser) fields(n *yaml.Node, what string, known []string, handle func(k, v *yaml.Node)) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errAt(n, "", "%s must be a mapping, not %s", what, describe(n))
		return false
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode || k.Tag == "!!merge":
			p.errAt(k, "", "keys of %s must be strings", what)
			continue
		case known != nil && !slices.Contains(known, k.Value):
			p.errAt(k, suggest(k.Value, known), "unknown field %q in %s", k.Value, what)
			continue
		case seen[k.Value] > 0:
			p.errAt(k, fmt.Sprintf("first set at line %d", seen[k.Value]), "duplicate key %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = k.Line
		handle(k, resolve(v))
	}
	return true
}

func (p *parser) str(v *yaml.Node, what string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || strings.TrimSpace(v.Value) == "" {
		p.errAt(v, "", "%s must be a non-empty string, not %s", what, describe(v))
		return "", false
	}
	return strings.TrimSpace(v.Value), true
}

func (p *parser) boolean(v *yaml.Node, what string) (bool, bool) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
		b, err := strconv.ParseBool(v.Value)
		if err == nil {
			return b, true
		}
	}
	p.errAt(v, "", "%s must be true or false, not %s", what, describe(v))
	return false, false
}

// syntaxError turns a yaml.v3 error ("yaml: line 3: did not find expected key") into a problem.
func (p *parser) syntaxError(err error) {
	line, msg := yamlcodec.ErrorLine(err)
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Message: "invalid YAML: " + msg,
		Hint: "check the indentation, and quote values that contain ': ' or start with special characters"})
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

// suggest proposes the known name closest to an unknown one (same letters ignoring case, or one edit away).
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return "known: " + strings.Join(known, ", ")
	}
	return "did you mean " + best + "?"
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

// checkURL checks an instance's API URL and returns it without a trailing slash.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a URL", raw)
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "", fmt.Errorf("%q: want http(s)://host[/path]", raw)
	case u.User != nil:
		return "", fmt.Errorf("%q: credentials do not belong in the URL (use token)", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q: no query or fragment allowed", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// checkCA checks a CA file: readable, with a PEM certificate.
func checkCA(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %s", path, pathErr(err))
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}
