package gitcache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Remote is a repository the operator configured (a repository Secret of the allowed repositories file), fetched
// with its own credentials instead of an installation's token.
type Remote struct {
	URL      string // https clone URL, without credentials
	Username string
	Password string
	// Insecure skips the server certificate's verification for this repository's host (the Secret's insecure,
	// which Argo CD's git client honours the same way: util/git/client.go runCmdOutput, insecure → GIT_SSL_NO_VERIFY=true).
	Insecure bool
}

// RemoteRef is one line of `git ls-remote --symref`: a ref and the object it names, or the ref a symbolic ref
// (HEAD) points to. Peeled is the commit an annotated tag points to ("" for other refs).
type RemoteRef struct {
	Name   string
	Hash   string
	Target string // for a symbolic ref: the ref it points to
	Peeled string
}

// LsRemote lists the refs of r (heads, tags and HEAD), as util/git/client.go getRefs lists them for Argo CD's
// revision resolution.
func (c *Cache) LsRemote(ctx context.Context, r Remote) ([]RemoteRef, error) {
	u, env, secrets, err := c.remoteEnv(r)
	if err != nil {
		return nil, err
	}
	out, err := c.run(ctx, "", env, secrets, nil, "ls-remote", "--symref", "--", u.String(), "HEAD", "refs/heads/*", "refs/tags/*")
	if err != nil {
		return nil, fmt.Errorf("listing the refs of %s: %w", redactURL(u), err)
	}
	return parseLsRemote(out), nil
}

func parseLsRemote(out []byte) []RemoteRef {
	var refs []RemoteRef
	idx := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		left, name, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		if target, ok := strings.CutPrefix(left, "ref: "); ok {
			idx[name] = len(refs)
			refs = append(refs, RemoteRef{Name: name, Target: target})
			continue
		}
		if !commitRE.MatchString(left) {
			continue
		}
		if base, ok := strings.CutSuffix(name, "^{}"); ok {
			if i, ok := idx[base]; ok {
				refs[i].Peeled = left
			}
			continue
		}
		if i, ok := idx[name]; ok && refs[i].Target != "" {
			refs[i].Hash = left // HEAD: both its target and its id are listed
			continue
		}
		idx[name] = len(refs)
		refs = append(refs, RemoteRef{Name: name, Hash: left})
	}
	// A symbolic ref's line comes before its id's: index it too.
	for i := range refs {
		if refs[i].Target != "" && refs[i].Hash == "" {
			for _, o := range refs {
				if o.Name == refs[i].Target {
					refs[i].Hash = o.Hash
				}
			}
		}
	}
	return refs
}

// FetchRemote makes commits present in the mirror of r, as Fetch does for an installation's repository: nothing
// when they are there, else refs (full ref names, fetched into "refs/fleetwave/…"), then the commits by id, then,
// as Argo CD's repo-server falls back to a default fetch (reposerver/repository/repository.go checkoutRevision),
// every branch and tag. It returns the mirror's directory.
func (c *Cache) FetchRemote(ctx context.Context, r Remote, refs, commits []string) (string, error) {
	u, env, secrets, err := c.remoteEnv(r)
	if err != nil {
		return "", err
	}
	if err := checkFetchArgs(u, refs, commits); err != nil {
		return "", err
	}
	dir := c.MirrorDir(u.String())
	unlock := c.lock(dir)
	defer unlock()
	if err := c.ensureMirror(ctx, dir, u); err != nil {
		return "", err
	}
	missing, err := c.missing(ctx, dir, commits)
	if err != nil {
		return "", err
	}
	if len(commits) > 0 && len(missing) == 0 {
		return dir, nil
	}
	var attempts [][]string
	if len(refs) > 0 {
		specs := make([]string, 0, len(refs))
		for _, ref := range refs {
			specs = append(specs, "+"+ref+":refs/fleetwave/"+strings.TrimPrefix(ref, "refs/"))
		}
		attempts = append(attempts, specs)
	}
	if len(missing) > 0 {
		specs := make([]string, 0, len(missing))
		for _, sha := range missing {
			specs = append(specs, sha+":refs/fleetwave/commits/"+sha)
		}
		attempts = append(attempts, specs)
	}
	attempts = append(attempts, []string{"+refs/heads/*:refs/fleetwave/heads/*", "+refs/tags/*:refs/fleetwave/tags/*"})
	var last error
	for _, specs := range attempts {
		fetchErr := c.fetch(ctx, dir, u, env, secrets, specs)
		if fetchErr != nil {
			last = fetchErr
			if ctx.Err() != nil || authFailure(fetchErr) {
				return "", fetchErr // the next attempt would fail the same way
			}
		}
		if missing, err = c.missing(ctx, dir, missing); err != nil {
			return "", err
		}
		if len(missing) == 0 && (len(commits) > 0 || fetchErr == nil) {
			return dir, nil
		}
	}
	if last != nil {
		return "", last
	}
	return "", fmt.Errorf("fetching %s: commit %s %w", redactURL(u), missing[0], ErrCommitNotFound)
}

// SizeBytes is the size of the objects a mirror holds (git count-objects: loose and packed).
func (c *Cache) SizeBytes(ctx context.Context, dir string) (int64, error) {
	out, err := c.run(ctx, dir, nil, nil, nil, "count-objects", "-v")
	if err != nil {
		return 0, err
	}
	var kib int64
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "size" || k == "size-pack") {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			kib += n
		}
	}
	return kib << 10, nil
}

func authFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Authentication failed") || strings.Contains(msg, "could not read Username") ||
		strings.Contains(msg, "returned error: 401") || strings.Contains(msg, "returned error: 403")
}

// remoteEnv checks r's URL (https only: credentials are never sent in clear) and returns the environment carrying
// its credentials as an Authorization header scoped to its host, as authEnv does for installations, plus what git
// must not do with an operator's repository: follow a redirect (to another host), or stall on a slow server.
func (c *Cache) remoteEnv(r Remote) (*url.URL, []string, []string, error) {
	u, err := checkURL(r.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	if u.Scheme != "https" {
		return nil, nil, nil, fmt.Errorf("fetching %s: only https repositories are fetched", redactURL(u))
	}
	prefix := "http." + u.Scheme + "://" + u.Host + "/"
	kv := [][2]string{
		{"http.followRedirects", "false"},
		{"http.lowSpeedLimit", "1024"},
		{"http.lowSpeedTime", "30"},
	}
	var secrets []string
	if r.Password != "" || r.Username != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
		kv = append(kv, [2]string{prefix + ".extraHeader", "Authorization: Basic " + basic})
		secrets = append(secrets, basic)
		if r.Password != "" {
			secrets = append(secrets, r.Password)
		}
	}
	if r.Insecure {
		kv = append(kv, [2]string{prefix + ".sslVerify", "false"})
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return u, env, secrets, nil
}
