package executor

import (
	"encoding/json"
	"strings"
	"sync"
)

// Installations maps repositories ("owner/name", case-insensitive as on GitHub) to the App installation that
// covers them. The zero value is ready; it is safe for concurrent use.
type Installations struct {
	mu sync.RWMutex
	m  map[string]int64
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
