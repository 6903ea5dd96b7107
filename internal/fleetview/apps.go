package fleetview

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/fleetwave/fleetwave/internal/inventory"
)

// This file is /fleet/apps: what runs where (#37). The apps of every Argo CD instance, grouped by what they
// deploy (inventory.Groups), each with its cluster, revision, sync and health, how long it has been out of
// sync, its last operation and whether fleetwave's last rollout reached it, filtered by the query
// (inventory.Filter), a page of AppsPageSize apps at a time, kept current by .../apps/live.

// Inventory is what the apps page reads: internal/inventory's Inventory.
type Inventory interface {
	Snapshot() inventory.Snapshot
	Changed(version uint64) <-chan struct{}
}

const defaultAppsPageSize = 200

// appsQuery is a page's query: the filter, "drift" (only apps in lasting drift) and the page number.
type appsQuery struct {
	filter inventory.Filter
	drift  bool
	page   int
}

func readAppsQuery(q url.Values) appsQuery {
	out := appsQuery{filter: inventory.Filter{Selector: q.Get("selector"), Instance: q.Get("instance"), Project: q.Get("project"),
		ClusterLabel: q.Get("cluster"), Sync: q.Get("sync"), Health: q.Get("health"), Revision: q.Get("revision")},
		drift: q.Get("drift") != ""}
	out.page, _ = strconv.Atoi(q.Get("page"))
	out.page = max(out.page, 1)
	return out
}

// values is the query of q on page n (n < 1: without a page), fields left empty omitted.
func (q appsQuery) values(n int) url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"instance", q.filter.Instance}, {"cluster", q.filter.ClusterLabel}, {"project", q.filter.Project},
		{"sync", q.filter.Sync}, {"health", q.filter.Health}, {"revision", q.filter.Revision}, {"selector", q.filter.Selector}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if q.drift {
		v.Set("drift", "1")
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	return v
}

func appsURL(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// appsPage is what the page shows.
type appsPage struct {
	Configured bool
	// Form: the filter as given, and its error.
	Filter inventory.Filter
	Drift  bool
	Err    string
	// Choices offered by the form's fields.
	InstanceNames, Projects, SyncCodes, HealthCodes []string
	// Instances: the fleet has several Argo CD instances (or one named): each app shows its own.
	Instances bool
	// Total apps, Matched by the filter; of those OutOfSync, Degraded, Drifting (lasting drift).
	Total, Matched, OutOfSync, Degraded, Drifting int
	DriftAfter                                    string
	DriftLink                                     string
	// Streams are the instances whose stream has no consistent view yet.
	Streams []inventory.Instance
	// This page: apps From..To of Matched, its groups, links to the pages around it.
	From, To   int
	Groups     []appsGroup
	Prev, Next string
	Live       string
	Fragment   string
	Now        time.Time `json:"-"`
}

type appsGroup struct {
	Key string
	// Apps and Revisions are the group's counts over every matched app, not only this page's; Continued: the
	// group started on an earlier page.
	Apps, Revisions int
	Continued       bool
	Rows            []appRow
}

type appRow struct {
	inventory.App
	ArgoLink    string
	RolloutLink string
	Drifting    bool
}

// appsModel builds the page for query q at now; next is when an app of the filter crosses DriftAfter next
// (zero: none will without a change).
func (v *view) appsModel(snap inventory.Snapshot, q appsQuery, now time.Time) (p *appsPage, next time.Time) {
	p = &appsPage{Configured: true, Filter: q.filter, Drift: q.drift, Now: now, Total: len(snap.Apps),
		SyncCodes:   []string{"Synced", "OutOfSync", "Unknown"},
		HealthCodes: []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}}
	if v.opts.DriftAfter > 0 {
		p.DriftAfter = v.opts.DriftAfter.String()
		dq := q
		dq.drift, dq.page = true, 0
		p.DriftLink = appsURL(Prefix+"apps", dq.values(0))
	}
	instances, projects := map[string]bool{}, map[string]bool{}
	for _, a := range snap.Apps {
		instances[a.Instance], projects[a.Project] = true, true
	}
	for _, in := range snap.Instances {
		instances[in.Name] = true
		if !in.Synced {
			p.Streams = append(p.Streams, in)
		}
	}
	p.Instances = len(instances) > 1 || (len(instances) == 1 && !instances[""])
	for name := range instances {
		if name != "" {
			p.InstanceNames = append(p.InstanceNames, name)
		}
	}
	for name := range projects {
		p.Projects = append(p.Projects, name)
	}
	slices.Sort(p.InstanceNames)
	slices.Sort(p.Projects)

	m, err := q.filter.Compile()
	if err != nil {
		p.Err = err.Error()
		m, _ = inventory.Filter{}.Compile()
	}
	matched := make([]inventory.App, 0, len(snap.Apps))
	for _, a := range snap.Apps {
		if !m.Match(a) {
			continue
		}
		drifting := a.Drifting(now, v.opts.DriftAfter)
		if s := a.DriftSince(); v.opts.DriftAfter > 0 && !s.IsZero() && !drifting {
			if at := s.Add(v.opts.DriftAfter); next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if drifting {
			p.Drifting++
		}
		if q.drift && !drifting {
			continue
		}
		if a.Sync == "OutOfSync" {
			p.OutOfSync++
		}
		if a.Health == "Degraded" {
			p.Degraded++
		}
		matched = append(matched, a)
	}
	p.Matched = len(matched)
	groups := inventory.Groups(matched)

	size := v.opts.AppsPageSize
	pages := max(1, (len(matched)+size-1)/size)
	page := min(q.page, pages)
	first, last := (page-1)*size, min(page*size, len(matched))
	if p.Matched > 0 {
		p.From, p.To = first+1, last
	}
	if page > 1 {
		p.Prev = appsURL(Prefix+"apps", q.values(page-1))
	}
	if page < pages {
		p.Next = appsURL(Prefix+"apps", q.values(page+1))
	}
	i := 0
	for _, g := range groups {
		start, end := i, i+len(g.Apps)
		i = end
		if end <= first || start >= last {
			continue
		}
		revs := map[string]bool{}
		for _, a := range g.Apps {
			revs[a.Revision] = true
		}
		ag := appsGroup{Key: g.Key, Apps: len(g.Apps), Revisions: len(revs), Continued: start < first}
		for _, a := range g.Apps[max(first, start)-start : min(last, end)-start] {
			row := appRow{App: a, ArgoLink: v.argoLink(a.Instance, a.Namespace, a.Name), Drifting: a.Drifting(now, v.opts.DriftAfter)}
			if a.Rollout != nil {
				if _, err := strconv.ParseInt(a.Rollout.ID, 10, 64); err == nil {
					row.RolloutLink = Prefix + "rollouts/" + a.Rollout.ID
				}
			}
			ag.Rows = append(ag.Rows, row)
		}
		p.Groups = append(p.Groups, ag)
	}
	live := q
	live.page = page
	p.Live = appsURL(Prefix+"apps/live", live.values(page))
	frag := live.values(page)
	frag.Set("fragment", "1")
	p.Fragment = appsURL(Prefix+"apps", frag)
	return p, next
}

func (v *view) apps(w http.ResponseWriter, r *http.Request) {
	q := readAppsQuery(r.URL.Query())
	var p *appsPage
	if v.opts.Inventory == nil {
		p = &appsPage{Now: v.opts.Now()}
	} else {
		p, _ = v.appsModel(v.opts.Inventory.Snapshot(), q, v.opts.Now())
	}
	if r.URL.Query().Get("fragment") != "" {
		render(w, appsFragmentTmpl, p)
		return
	}
	render(w, appsTmpl, p)
}

// appsFingerprint changes when what the page shows changes, its durations aside (the page's script ticks them).
func appsFingerprint(p *appsPage) string {
	b, _ := json.Marshal(p)
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}

// appsLive streams "change" when the page of the query would show something else: woken by the inventory's
// changes (then gathered for Options.Poll, so that a burst of changes is one refresh) and by the next app
// crossing DriftAfter; a keepalive comment every 15 s.
func (v *view) appsLive(w http.ResponseWriter, r *http.Request) {
	inv := v.opts.Inventory
	if inv == nil {
		http.Error(w, "the inventory is not configured", http.StatusNotFound)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	q := readAppsQuery(r.URL.Query())
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	snap := inv.Snapshot()
	p, next := v.appsModel(snap, q, v.opts.Now())
	last := appsFingerprint(p)
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		var crossing <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(max(next.Sub(v.opts.Now()), 0) + 10*time.Millisecond)
			crossing = timer.C
		}
		woke := v.appsWait(r, inv.Changed(snap.Version), crossing, keepalive.C)
		if timer != nil {
			timer.Stop()
		}
		switch woke {
		case wokeDone:
			return
		case wokeKeepalive:
			fmt.Fprint(w, ": keepalive\n\n")
			fl.Flush()
			continue
		}
		snap = inv.Snapshot()
		p, next = v.appsModel(snap, q, v.opts.Now())
		if fp := appsFingerprint(p); fp != last {
			last = fp
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", snap.Version)
			fl.Flush()
		}
	}
}

type wake int

const (
	wokeDone wake = iota
	wokeKeepalive
	wokeChange
)

// appsWait waits for the request's end, a keepalive, the next drift crossing, or a change of the inventory
// followed by Options.Poll (a burst of changes is one refresh).
func (v *view) appsWait(r *http.Request, changed <-chan struct{}, crossing, keepalive <-chan time.Time) wake {
	select {
	case <-r.Context().Done():
		return wokeDone
	case <-keepalive:
		return wokeKeepalive
	case <-crossing:
		return wokeChange
	case <-changed:
	}
	t := time.NewTimer(v.opts.Poll)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return wokeDone
	case <-t.C:
		return wokeChange
	}
}

// elapsed is a duration as the apps page shows it (and static/live.js ticks it): 42s, 5m 3s, 2h 7m, 3d 4h.
func elapsed(now, since time.Time) string {
	s := int64(max(now.Sub(since), 0) / time.Second)
	d, h, m := s/86400, s%86400/3600, s%3600/60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh", d, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

// opTime is when an operation finished, or started while it runs.
func opTime(o *inventory.Operation) time.Time { return cmp.Or(o.FinishedAt, o.StartedAt) }
