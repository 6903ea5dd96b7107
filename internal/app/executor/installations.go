package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Installations maps repositories ("owner/name", case-insensitive as on GitHub) to the App installation that
// covers them. The zero value is ready; it is safe for concurrent use.
type Installations struct {
	mu   sync.RWMutex
	m    map[string]int64
	find func(ctx context.Context, repo string) (int64, error)
}

// SetFinder sets how Resolve asks GitHub for a repository no event has named yet (github.App.RepoInstallation).
func (i *Installations) SetFinder(find func(ctx context.Context, repo string) (int64, error)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.find = find
}

// Resolve returns the installation covering repo: the one events named, else the one GitHub answers (then
// remembered). After a restart no event has been seen yet, while resumed rollouts already publish.
func (i *Installations) Resolve(ctx context.Context, repo string) (int64, error) {
	if id, ok := i.Lookup(repo); ok {
		return id, nil
	}
	i.mu.RLock()
	find := i.find
	i.mu.RUnlock()
	if find == nil {
		return 0, fmt.Errorf("no App installation known for %s yet", repo)
	}
	id, err := find(ctx, repo)
	if err != nil {
		return 0, err
	}
	i.Remember(repo, id)
	return id, nil
}

// Remember records that installation id covers repo. Empty names and non-positive ids are ignored.
func (i *Installations) Remember(repo string, id int64) {
	if repo == "" || id <= 0 {
		return
	}
	key := strings.ToLower(repo)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.m == nil {
		i.m = map[string]int64{}
	}
	i.m[key] = id
}

// Lookup returns the installation covering repo.
func (i *Installations) Lookup(repo string) (int64, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	id, ok := i.m[strings.ToLower(repo)]
	return id, ok
}

// Observe remembers the installation and repository a webhook payload names (installation.id,
// repository.full_name); payloads without them are ignored.
func (i *Installations) Observe(payload []byte) {
	var p struct {
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	i.Remember(p.Repository.FullName, p.Installation.ID)
}
