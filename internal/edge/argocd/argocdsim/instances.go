package argocdsim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Instances is several simulated Argo CD instances in one process, for a fleet of several (#36) in unit tests,
// the demo and benchmarks: each a Server of its own (its apps, refs, clock-driven controller, counters, outages),
// reached under its own path of one handler — /instances/{name}/api/v1/… — so one listener serves them all and
// each has its own base URL (URL). The instance named "" is served at the root, as a one-instance fleet's.
type Instances struct {
	names   []string
	servers map[string]*Server
	mux     *http.ServeMux
}

// InstancePath is the path under which Handler serves instance name ("" for the instance named "").
func InstancePath(name string) string {
	if name == "" {
		return ""
	}
	return "/instances/" + name
}

// NewInstances starts one Server per name with cfg (each its own seed: cfg.Seed plus its position), so their
// random faults differ. Names must be distinct and hold no "/".
func NewInstances(cfg Config, names ...string) (*Instances, error) {
	in := &Instances{servers: map[string]*Server{}, mux: http.NewServeMux()}
	for i, name := range names {
		if strings.Contains(name, "/") {
			return nil, fmt.Errorf("simulated instance %q: a name holds no /", name)
		}
		if _, dup := in.servers[name]; dup {
			return nil, fmt.Errorf("simulated instance %q is named twice", name)
		}
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		s := New(c)
		in.servers[name] = s
		in.names = append(in.names, name)
		if name == "" {
			in.mux.Handle("/", s.Handler())
		} else {
			p := InstancePath(name)
			in.mux.Handle(p+"/", http.StripPrefix(p, s.Handler()))
		}
	}
	slices.Sort(in.names)
	return in, nil
}

// Names are the instances' names, sorted.
func (in *Instances) Names() []string { return slices.Clone(in.names) }

// Get is the Server of one instance (nil when there is none of that name).
func (in *Instances) Get(name string) *Server { return in.servers[name] }

// URL is the base URL of instance name when Handler is served at root (e.g. httptest's URL).
func (in *Instances) URL(root, name string) string {
	return strings.TrimSuffix(root, "/") + InstancePath(name)
}

// Handler serves every instance, each under InstancePath(name).
func (in *Instances) Handler() http.Handler { return in.mux }

// Close closes every instance.
func (in *Instances) Close() {
	for _, s := range in.servers {
		s.Close()
	}
}
