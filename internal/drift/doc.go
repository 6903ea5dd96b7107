// Package drift turns lasting drift into an alert (#37): an app OutOfSync or Degraded for longer than a
// threshold, outside a rollout that is about to sync it, is in lasting drift.
//
//   - Decide is the decision, pure: which apps of an inventory snapshot are in lasting drift at a time, and when
//     the next one will be if nothing changes.
//   - Watcher runs it on every change of the inventory and on a timer (a threshold crossed with no event still
//     fires, and a rollout that finishes changes the store, not the inventory), and hands each decision to its
//     sinks: the /metrics gauge reads the last one (Watcher.Alerts), the Reporter gets every one.
//   - Reporter keeps one GitHub issue per app in lasting drift in a repository of the team's (title: the app,
//     body: since when, sync and health, revision, last operation, a link to Argo CD), edits it when the app's
//     state changes (at most every MinEdit), and closes it with a short comment when the app converges. The open
//     reports are recorded in the store, and on start the reporter reconciles them with the issues GitHub has, so
//     one app never has two open issues, across restarts too.
//
// Ports, declared here: Inventory (internal/inventory's Snapshot and Changed), Rollouts (the store's
// AppsAboutToSync), Issues (the GitHub adapter's issues), Records (the store's drift reports). The package
// holds no global state; the clock is injected (clockwork).
package drift
