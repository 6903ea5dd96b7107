package config

import (
	"fmt"
	"strconv"
)

// CLI is the environment of the commands other than serve (diff, plan, render, render-all, rollout). Their
// flags win over it: the commands fill what a flag left unset from here.
type CLI struct {
	// ArgoCDURL, ArgoCDToken and ArgoCDInsecure are the defaults of rollout's --argocd, --token and --insecure
	// (diff's --argocd-token takes the token only).
	ArgoCDURL      string
	ArgoCDToken    Secret
	ArgoCDInsecure bool
	// ArgoCDInstancesFile is the default of --argocd-instances: the instances file of several Argo CD instances
	// (never with ArgoCDURL). The command that takes it reads it (internal/edge/argocd/instances).
	ArgoCDInstancesFile string
	// CacheDir holds the chart and git caches ("": the user cache directory).
	CacheDir string
	// FleetViewToken is the sign-in token of rollout --ui's fleet view ("": a random one, printed).
	FleetViewToken Secret
	// Render configures the render pool.
	Render Render
	// Store is the default of rollout history's --store: the state store serve writes ("": none).
	Store Secret
}

// LoadCLI reads the commands' environment (getenv; a variable set to blanks counts as unset) and validates it,
// every problem listed at once.
func LoadCLI(getenv func(string) string) (*CLI, error) {
	get := envSource(getenv)
	var problems []string
	bad := func(p string) { problems = append(problems, p) }
	c := &CLI{}
	if s, ok := get(EnvArgoCDURL); ok {
		c.ArgoCDURL = s.value
	}
	if s, ok := get(EnvArgoCDToken); ok {
		c.ArgoCDToken = NewSecret(s.value)
	}
	if s, ok := get(EnvArgoCDInsecure); ok {
		if b, err := strconv.ParseBool(s.value); err != nil {
			bad(fmt.Sprintf("%s=%q is not a boolean", s.origin, s.value))
		} else {
			c.ArgoCDInsecure = b
		}
	}
	if s, ok := get(EnvArgoCDInstances); ok {
		c.ArgoCDInstancesFile = s.value
		if c.ArgoCDURL != "" {
			bad(fmt.Sprintf("%s and %s are both set: the instances file gives each instance its URL; set one of them", EnvArgoCDURL, s.origin))
		}
	}
	if s, ok := get(EnvCacheDir); ok {
		c.CacheDir = s.value
	}
	if s, ok := get(EnvFleetViewToken); ok {
		c.FleetViewToken = NewSecret(s.value)
	}
	if s, ok := get(EnvStore); ok {
		c.Store = NewSecret(s.value)
	}
	c.Render = readRender(get, ForCLI, bad)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems, Of: "environment"}
	}
	return c, nil
}
