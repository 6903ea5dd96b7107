// Package inventory keeps what runs where: every Application of every configured Argo CD instance, with its
// cluster, project, the revision it runs, its sync and health status and since when, its last operation and
// whether fleetwave's last rollout reached it (#37). An Inventory is the in-memory view, changed by Apply and
// Remove (the followers of each instance's application stream feed it) and read by the fleet page, the status
// command and the drift alerts through Snapshot and Changed. It holds no goroutine and no I/O of its own.
package inventory

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"
)

// Key names an app across a fleet: the Argo CD instance that holds it ("" is the one instance of a fleet
// configured with FLEETWAVE_ARGOCD_URL), the Application's namespace ("" where Argo CD reports none) and name.
type Key struct {
	Instance  string `json:"instance,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (k Key) compare(o Key) int {
	return cmp.Or(cmp.Compare(k.Instance, o.Instance), cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.Name, o.Name))
}

// App is what the inventory knows of one Application.
type App struct {
	Key
	Project string `json:"project"`
	// Cluster is the destination as the Application names it: its server URL, or its name when only the name is
	// set. ClusterName is the cluster's name in Argo CD where known, ClusterLabels its labels (Argo CD's cluster
	// Secret labels), read from the instance's clusters.
	Cluster       string            `json:"cluster"`
	ClusterName   string            `json:"clusterName,omitempty"`
	ClusterLabels map[string]string `json:"clusterLabels,omitempty"`
	// Labels are the Application's own labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Source is the repository URL and path (or chart) of the app's first source, for grouping apps that
	// deploy the same thing to several clusters.
	Source string `json:"source,omitempty"`
	// Revision is what the cluster runs: for a Synced app the revision Argo CD compared it to (status.sync.revision,
	// or the first of status.sync.revisions for several sources), for any other the revision of its newest
	// deployment (status.history); with none, the revision the inventory last saw it Synced at (Apply), else ""
	// (not known).
	Revision string `json:"revision,omitempty"`
	// Sync and Health are Argo CD's codes (Synced, OutOfSync, Unknown; Healthy, Progressing, Degraded, …), each
	// with the time it took its current value as the inventory saw it, or as Argo CD reports it (health's
	// lastTransitionTime); kept across restarts by the follower.
	Sync        string    `json:"sync"`
	SyncSince   time.Time `json:"syncSince,omitzero"`
	Health      string    `json:"health"`
	HealthSince time.Time `json:"healthSince,omitzero"`
	// Operation is the app's last (or running) operation, nil when it has none.
	Operation *Operation `json:"operation,omitempty"`
	// Rollout is fleetwave's last rollout that planned this app, nil when none did.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Operation is an Application's last operation (status.operationState).
type Operation struct {
	// By is who started it: a user name, or "automated" for the controller's automated sync.
	By         string    `json:"by,omitempty"`
	Phase      string    `json:"phase"` // Running, Succeeded, Failed, Error, Terminating
	Revision   string    `json:"revision,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Message    string    `json:"message,omitempty"`
}

// Rollout is fleetwave's last rollout that planned an app: its id and the revision it syncs the app to, and
// whether the app reached it (synced to that revision by the rollout).
type Rollout struct {
	ID       string `json:"id"`
	Revision string `json:"revision,omitempty"`
	Reached  bool   `json:"reached"`
}

// Snapshot is a consistent copy of the inventory: apps sorted by key, the version it was taken at, and the
// state of each instance's stream.
type Snapshot struct {
	Version   uint64     `json:"version"`
	Apps      []App      `json:"apps"`
	Instances []Instance `json:"instances,omitempty"`
}

// Instance is the state of one instance's stream: whether the inventory has a consistent view of its apps
// (Synced: its initial list arrived), since when, and the last error while it has not.
type Instance struct {
	Name   string    `json:"name"`
	Synced bool      `json:"synced"`
	Since  time.Time `json:"since,omitzero"`
	Error  string    `json:"error,omitempty"`
}

// Inventory is the fleet's apps in memory. Safe for concurrent use. Apps handed in and out are copies the
// caller may keep; maps inside them are shared and must not be changed.
type Inventory struct {
	now func() time.Time

	mu        sync.Mutex
	version   uint64
	apps      map[Key]App
	instances map[string]Instance
	changed   chan struct{} // closed and replaced on every change
}

// New returns an empty inventory; now is the clock that dates a status change the app does not date itself.
func New(now func() time.Time) *Inventory {
	return &Inventory{now: now, apps: map[Key]App{}, instances: map[string]Instance{}, changed: make(chan struct{})}
}

// Apply records an app's current state. A Sync or Health equal to the one held keeps its since time; a new one
// takes the app's own since time when set, else the clock's. An app that is not Synced and says no revision
// keeps the one it was held with (what it ran when last seen Synced: nothing synced it since). It reports
// whether anything changed.
func (inv *Inventory) Apply(a App) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	old, had := inv.apps[a.Key]
	if had && a.Revision == "" && a.Sync != "Synced" {
		a.Revision = old.Revision
	}
	now := inv.now()
	a.SyncSince = since(had, old.Sync, old.SyncSince, a.Sync, a.SyncSince, now)
	a.HealthSince = since(had, old.Health, old.HealthSince, a.Health, a.HealthSince, now)
	if had && equal(old, a) {
		return false
	}
	inv.apps[a.Key] = a
	inv.bump()
	return true
}

func since(had bool, oldState string, oldSince time.Time, state string, given, now time.Time) time.Time {
	switch {
	case had && oldState == state && !oldSince.IsZero():
		return oldSince
	case !given.IsZero():
		return given
	}
	return now
}

// Get returns the app held under k (a copy; its maps are shared), and whether one is: a reader of one app (the
// follower persisting since times) need not copy the whole inventory.
func (inv *Inventory) Get(k Key) (App, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	a, ok := inv.apps[k]
	return a, ok
}

// Remove forgets an app (deleted in Argo CD). It reports whether the app was held.
func (inv *Inventory) Remove(k Key) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if _, ok := inv.apps[k]; !ok {
		return false
	}
	delete(inv.apps, k)
	inv.bump()
	return true
}

// Replace sets the apps of one instance to exactly apps (a stream's initial list after a reconnect: apps it
// no longer lists were deleted meanwhile), through Apply's rules, and marks the instance synced.
func (inv *Inventory) Replace(instance string, apps []App) {
	keep := make(map[Key]bool, len(apps))
	for _, a := range apps {
		a.Instance = instance
		keep[a.Key] = true
		inv.Apply(a)
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	removed := false
	for k := range inv.apps {
		if k.Instance == instance && !keep[k] {
			delete(inv.apps, k)
			removed = true
		}
	}
	if removed {
		inv.bump()
	}
	inv.setInstance(Instance{Name: instance, Synced: true, Since: inv.now()})
}

// SetInstance records the state of an instance's stream.
func (inv *Inventory) SetInstance(s Instance) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.setInstance(s)
}

func (inv *Inventory) setInstance(s Instance) {
	if old, ok := inv.instances[s.Name]; ok && old == s {
		return
	}
	inv.instances[s.Name] = s
	inv.bump()
}

func (inv *Inventory) bump() {
	inv.version++
	close(inv.changed)
	inv.changed = make(chan struct{})
}

// Snapshot copies the inventory, apps sorted by (instance, namespace, name), instances by name.
func (inv *Inventory) Snapshot() Snapshot {
	inv.mu.Lock()
	s := Snapshot{Version: inv.version, Apps: make([]App, 0, len(inv.apps)), Instances: make([]Instance, 0, len(inv.instances))}
	for _, a := range inv.apps {
		s.Apps = append(s.Apps, a)
	}
	for _, i := range inv.instances {
		s.Instances = append(s.Instances, i)
	}
	inv.mu.Unlock()
	slices.SortFunc(s.Apps, func(a, b App) int { return a.compare(b.Key) })
	slices.SortFunc(s.Instances, func(a, b Instance) int { return cmp.Compare(a.Name, b.Name) })
	return s
}

// Instances is the state of every instance's stream, by name: Snapshot's Instances without copying the apps.
func (inv *Inventory) Instances() []Instance {
	inv.mu.Lock()
	out := make([]Instance, 0, len(inv.instances))
	for _, i := range inv.instances {
		out = append(out, i)
	}
	inv.mu.Unlock()
	slices.SortFunc(out, func(a, b Instance) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Changed returns a channel closed once the inventory's version is past version: a reader waits on it for
// the next change after the snapshot it holds.
func (inv *Inventory) Changed(version uint64) <-chan struct{} {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.version > version {
		c := make(chan struct{})
		close(c)
		return c
	}
	return inv.changed
}

func equal(a, b App) bool {
	return a.Key == b.Key && a.Project == b.Project && a.Cluster == b.Cluster && a.ClusterName == b.ClusterName &&
		maps.Equal(a.ClusterLabels, b.ClusterLabels) && maps.Equal(a.Labels, b.Labels) && a.Source == b.Source &&
		a.Revision == b.Revision && a.Sync == b.Sync && a.SyncSince.Equal(b.SyncSince) && a.Health == b.Health &&
		a.HealthSince.Equal(b.HealthSince) && ptrEqual(a.Operation, b.Operation) && ptrEqual(a.Rollout, b.Rollout)
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
