package instances

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// DefaultMaxSyncs is an instance's sync budget when the file sets none: Argo CD's application controller runs
// at most this many sync operations at once per shard by default (--operation-processors,
// cmd/argocd-application-controller/commands/argocd_application_controller.go), so more requests only queue.
const DefaultMaxSyncs = 10

// DefaultAgentNamespace is where argocd-agent's install manifests run an agent and its Argo CD ("argocd").
const DefaultAgentNamespace = "argocd"

// Instance is one Argo CD. Its String never shows the token.
type Instance struct {
	// Name identifies the instance everywhere (plan, store, comment, metrics): lowercase letters, digits and
	// '-', at most 40. "" is the one instance of Single.
	Name string
	// URL is the API's base URL, without a trailing slash (a root path is kept as a prefix of /api/v1/...).
	URL string
	// CAFile is a PEM bundle trusted in addition to the system roots ("": none); Insecure skips verification.
	CAFile   string
	Insecure bool
	// MaxSyncs is how many sync operations fleetwave keeps in flight on this instance (0: no limit of its
	// own, the configuration of old: Single).
	MaxSyncs int
	// Agent marks an argocd-agent principal. AgentNamespace is the namespace its agents keep their Applications
	// in on the workload clusters, where the agents' Argo CD computes the tracking id (argocd-agent's
	// agent.namespace; DefaultAgentNamespace when the file says none); AgentDestinationMapping says the principal
	// and agents run with --destination-based-mapping (render.Settings says what both change).
	Agent                   bool
	AgentNamespace          string
	AgentDestinationMapping bool
	// Owns are the rules of the apps the instance holds (nil in Single: every app).
	Owns []Rule
	// Line is where the instance starts in the file (0 in Single).
	Line int

	cred credential
	all  bool // owns every app (Single)
}

// Rule is one "owns" entry: it matches an app when every field given matches.
type Rule struct {
	Paths        []string          // doublestar globs over the Application file's path in the repository
	Labels       map[string]string // the Application's metadata.labels, values equal
	Projects     []string          // globs over spec.project
	Destinations []string          // globs over spec.destination.name or .server
	Line         int               // where the rule starts in the file

	paths, projects, destinations []matcher
}

// String shows the instance without its credential: name, URL and where the token is read from.
func (in *Instance) String() string {
	s := in.URL
	if in.Name != "" {
		s = in.Name + " " + s
	}
	if d := in.cred.describe(); d != "" {
		s += " (token " + d + ")"
	}
	if in.Insecure {
		s += " (TLS not verified)"
	}
	return s
}

// TokenFrom says where the token is read from, for messages: "env ARGOCD_EU_TOKEN", "file /run/token",
// "[redacted]" for a token given as is (Single), "" for none. Never the token.
func (in *Instance) TokenFrom() string { return in.cred.describe() }

// TokenSource returns the instance's token on each call: a file's is re-read when the file changed since the
// last call (its size, modification time or identity, one stat per call), a variable's was read when the file
// was parsed. Its errors name the variable or the file, never a token.
func (in *Instance) TokenSource() func() (string, error) { return in.cred.source() }

// Options are the argocd.Options of the instance: URL, TLS and token source. wrap, when not nil, wraps the
// client's transport (metrics with the instance as a label).
func (in *Instance) Options(wrap func(instance string, rt http.RoundTripper) http.RoundTripper) argocd.Options {
	o := argocd.Options{BaseURL: in.URL, CAFile: in.CAFile, Insecure: in.Insecure}
	switch {
	case in.cred.file != nil:
		o.TokenSource = in.cred.file.token
	default:
		o.Token = in.cred.value
	}
	if wrap != nil {
		name := in.Name
		o.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return wrap(name, rt) }
	}
	return o
}

// Set is the configured instances, in file order. Use Single or Parse to build one. A nil Set has no instance
// (Names, Len).
type Set struct {
	file      string // the instances file ("" for Single)
	instances []*Instance
	byName    map[string]*Instance
}

// Single is the configuration of old (FLEETWAVE_ARGOCD_URL / --argocd): one instance named "" owning every
// app, with no sync budget of its own.
func Single(url string, token string, insecure bool, caFile string) *Set {
	in := &Instance{URL: strings.TrimSuffix(url, "/"), Insecure: insecure, CAFile: caFile, cred: credential{value: token, given: token != ""}, all: true}
	return &Set{instances: []*Instance{in}, byName: map[string]*Instance{"": in}}
}

// File is the instances file the Set was read from ("" for Single).
func (s *Set) File() string { return s.file }

// IsSingle reports whether s is the configuration of old: one instance named "" owning every app.
func (s *Set) IsSingle() bool {
	return s != nil && len(s.instances) == 1 && s.instances[0].all
}

// Names are the instances' names in file order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.instances))
	for i, in := range s.instances {
		out[i] = in.Name
	}
	return out
}

// Get returns the instance of that name.
func (s *Set) Get(name string) (*Instance, bool) {
	in, ok := s.byName[name]
	return in, ok
}

// Len is the number of instances.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.instances)
}

// URLs are the named instances' URLs by name, for links to their UI (Argo CD serves its UI and API at one
// address); nil for Single or a nil set, whose one URL the caller has.
func (s *Set) URLs() map[string]string {
	if s == nil || s.IsSingle() {
		return nil
	}
	out := make(map[string]string, len(s.instances))
	for _, in := range s.instances {
		out[in.Name] = in.URL
	}
	return out
}

// Instances are the instances in file order.
func (s *Set) Instances() []*Instance { return append([]*Instance(nil), s.instances...) }

// Clients builds one argocd.Client per instance, by name, each with its own TLS options and token source. wrap,
// when not nil, wraps each client's transport and is told the instance's name.
func (s *Set) Clients(wrap func(instance string, rt http.RoundTripper) http.RoundTripper) (map[string]*argocd.Client, error) {
	out := make(map[string]*argocd.Client, len(s.instances))
	for _, in := range s.instances {
		c, err := argocd.New(in.Options(wrap))
		if err != nil {
			if in.Name == "" {
				return nil, err
			}
			return nil, fmt.Errorf("argo cd instance %s: %w", in.Name, err)
		}
		out[in.Name] = c
	}
	return out, nil
}
