package e2e_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// env is the environment hack/e2e/up.sh started, read from the file FLEETWAVE_E2E_ENV names (KEY=VALUE lines),
// with variables set in the process taking precedence.
type env struct {
	ArgoCDURL, Token         string
	OldRevision, NewRevision string
	Repo, NetNS              string
	// TLSDataPath is argocd-repo-server's ARGOCD_TLS_DATA_PATH, where argocd-tls-certs-cm's entries are files.
	TLSDataPath string
	// AdminPassword is the admin account's: a person, for syncs by hand.
	AdminPassword string
	// The second Argo CD instance (issue #36): its API, fleetwave token, namespace and installation ID.
	ArgoCDBURL, ArgoCDBToken, ArgoCDBNamespace, ArgoCDBInstallationID string
}

func loadEnv(t *testing.T) env {
	t.Helper()
	vals := map[string]string{}
	if path := os.Getenv("FLEETWAVE_E2E_ENV"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("FLEETWAVE_E2E_ENV: %v (run make e2e-up)", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, "="); ok {
				vals[k] = v
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
	}
	get := func(k string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return vals[k]
	}
	e := env{
		ArgoCDURL: get("FLEETWAVE_E2E_ARGOCD_URL"), Token: get("FLEETWAVE_E2E_ARGOCD_TOKEN"),
		OldRevision: get("FLEETWAVE_E2E_OLD_REV"), NewRevision: get("FLEETWAVE_E2E_NEW_REV"),
		Repo: get("FLEETWAVE_E2E_REPO"), NetNS: get("FLEETWAVE_E2E_NETNS"),
		TLSDataPath:   get("FLEETWAVE_E2E_ARGOCD_TLS_DATA_PATH"),
		AdminPassword: get("FLEETWAVE_E2E_ARGOCD_ADMIN_PASSWORD"),
		ArgoCDBURL:    get("FLEETWAVE_E2E_ARGOCD_B_URL"), ArgoCDBToken: get("FLEETWAVE_E2E_ARGOCD_B_TOKEN"),
		ArgoCDBNamespace: get("FLEETWAVE_E2E_ARGOCD_B_NAMESPACE"), ArgoCDBInstallationID: get("FLEETWAVE_E2E_ARGOCD_B_INSTALLATION_ID"),
	}
	if e.ArgoCDURL == "" {
		t.Skip("no end-to-end environment: set FLEETWAVE_E2E_ENV to the env file hack/e2e/up.sh writes " +
			"(.cache/e2e/run/env), or run `make e2e`, which builds, starts and stops it")
	}
	for k, v := range map[string]string{"FLEETWAVE_E2E_ARGOCD_TOKEN": e.Token, "FLEETWAVE_E2E_OLD_REV": e.OldRevision, "FLEETWAVE_E2E_NEW_REV": e.NewRevision} {
		if v == "" {
			t.Fatalf("%s is not set (the env file is incomplete: rerun make e2e-up)", k)
		}
	}
	return e
}
