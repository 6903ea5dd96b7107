// Package fleetview is the fleet view `serve` offers under /fleet/: where each rollout stands across the fleet.
//
// It is read-only and server-rendered: the rollouts in progress and the recent ones; per rollout its waves (apps
// synced, in flight, waiting, failed; soak countdown, metric gate values, approval pending and who may approve,
// a sync window holding it), each app with its cluster, revision, health, timings and last message, the share of
// the fleet on the new revision, who paused, approved or rolled back and when, and links to the pull request,
// the check-runs' commit and each app in Argo CD.
//
// /fleet/apps (apps.go) is what runs where, read from the inventory (Options.Inventory): every app of every Argo
// CD instance grouped by what it deploys, filtered by the query (inventory.Filter), lasting drift marked
// (Options.DriftAfter), a page of Options.AppsPageSize apps at a time; its stream wakes on the inventory's Changed.
//
// Live updates: a page holds one EventSource on .../live, which sends "change" when the rollout's rows move (the
// versions the store keeps for optimistic concurrency, polled each second); the page's script (static/live.js, the
// only script, no inline code) then fetches the page's <main> again and swaps it in, and ticks the countdowns.
//
// Access: a configured token (FLEETWAVE_FLEET_VIEW_TOKEN), given once in a login form that starts a session (a
// random id in an HttpOnly, SameSite=Strict, Secure cookie — Options.InsecureCookie for plain-HTTP development —
// that expires on the server after Options.SessionTTL), or as "Authorization: Bearer"; failed sign-ins back off
// per client address (session.go); without a token configured the view is off. Headers:
// a Content-Security-Policy without 'unsafe-inline', no framing, no referrer, no sniffing. The store holds no
// Secret data, and nothing but the store (and the inventory: no Secret data either) is read.
package fleetview
