// Package argocdsim is a simulated Argo CD: the REST API of argocd-server in front of the state machine of the
// application controller, in memory, for tests, benchmarks and the demo (`fleetwave argocd-sim`).
//
// # Model
//
// Each Application is stored as the real v1alpha1 object. Every write bumps a global resourceVersion and is
// sent to the application streams (a write that changes nothing bumps nothing, as a no-op Kubernetes patch).
// What is simulated, and where Argo CD v3.2 does the same:
//   - sync (server/application/application.go Sync, resolveSourceRevisions; util/argo/argo.go
//     SetAppOperation): refused with FailedPrecondition while another operation is set ("another operation is
//     already in progress"), for a revision other than targetRevision while automated sync is on, and for a
//     revision that does not resolve; PermissionDenied ("cannot sync: blocked by sync window") when the app's
//     AppProject syncWindows (SetProject; Matches, then CanSync(true, nil) evaluated on the server's clock as
//     argocd.CanSyncAt ports it) refuse a manual sync, or SetSyncWindowBlocked says so. Accepted: the operation
//     is set and status.operationState cleared in one write;
//   - the operation (controller/appcontroller.go processRequestedAppOperation, setOperationState;
//     controller/state.go persistRevisionHistory): picked up after OperationStartDelay (0: in the request
//     that set it, still as a write of its own) as Running with startedAt and syncResult.revision; after the
//     sync duration the history entry is written, then the final phase (Succeeded or Failed) with finishedAt,
//     the operation field cleared in the same write. A reconcile follows after ReconcileDelay (none after a dry
//     run);
//   - reconcile (controller/state.go CompareAppState): resolves targetRevision (refs set with SetRef, or a
//     SHA), sets status.sync (Synced only when what is live is what targetRevision resolves to: a sync to another
//     revision stays OutOfSync), publishes live health (Progressing for ProgressingFor after a sync, then
//     Healthy or Degraded), stamps reconciledAt, removes the refresh annotation, and runs automated sync once per
//     resolved revision when the windows allow an automated sync (CanSync(false, nil)). Reconciles are queued like the controller's refresh queue (a client-go workqueue): a
//     request while one is queued is merged into it;
//   - rollback by history id (refused while automated, InvalidArgument for an unknown id), terminate
//     (Terminating, then Failed "Operation terminated"), patch (JSON patch, merge patch), GET ?refresh (answers
//     after the reconcile it requested, or the one already queued), list filters, clusters, settings, GET .../syncwindows (assigned and active windows, canSync), GET and PUT
//     /api/v1/projects/{name}, manifests at a revision
//     and managed resources with JSON-encoded states ("null" live state before the first sync);
//   - the stream (server/application/application.go Watch, argoproj/pkg grpc/http NewStreamForwarder): an
//     ADDED snapshot unless resuming with resourceVersion (a name filter always gets it), newline-delimited JSON
//     or server-sent events with ":" keepalives, the `fields` parameter ("a.b,c" keeps only those paths, "-a.b,c"
//     drops them: argoproj/pkg grpc/http messageMarshaler, held to it by TestFieldFilterMatchesArgoproj),
//     identical consecutive messages (after that filter) suppressed;
//   - errors as grpc-gateway v1 writes them: {"error","code","message","details"} with its HTTP mapping
//     (FailedPrecondition and InvalidArgument 400, NotFound 404, PermissionDenied 403, Unauthenticated 401,
//     Unknown 500 — e.g. a malformed JSON patch).
//
// Simplified: one repository namespace for refs; no resource tree, hooks, sync waves or retries; health is
// per app, not computed from resources; RBAC is one optional bearer token; a subscriber that falls 8192 events
// behind is disconnected (Argo CD silently drops its events instead).
//
// # Time, faults, counters
//
// Every delay runs on Config.Clock (a clockwork.Clock): pass a fake clock, or run the server inside
// testing/synctest with RoundTripper, which serves requests in-process over pipes so that virtual time
// advances (sockets would stall it). Faults are drawn from a seeded generator: FailureRate, DegradationRate,
// APILatency with LatencySpikeRate/LatencySpike, ErrorRate (503 before processing), LostResponseRate
// (processed, then 502), StreamDropMean (streams closed after a random lifetime), StaleStatusFor (for that long
// after a sync request the app is shown as before it, Synced and Healthy with a fresh reconciledAt:
// Progressive Syncs' race). DropSyncs (dropsync.go) loses an app's next sync requests as an argocd-agent
// principal can (argocd-agent #841): answered 200, then the operation cleared before it starts.
// LoseSyncAnswers (lostanswer.go) loses the answer to an app's (or any app's) next accepted sync requests: the
// operation starts and runs, then the connection closes unanswered (the client sees EOF, not a status), and the
// server optionally stays Unreachable for a while, from before the operation is written, so that the operation
// finishes before the client hears from it again: the case where a client that re-sent the request would start
// a second sync. Behavior overrides duration, failure and degradation per app. Counts and Totals report the
// requests received (per app: syncs received, accepted, dropped, answers lost, gets, refreshes, ...), for
// call-budget and crash tests.
//
// Outages (SetOutage): the API server stops answering (Unreachable: the in-process transport refuses
// connections, the HTTP handler answers 503), refuses every token (Unauthorized: 401) or accepts requests and never
// answers them (Hanging: each waits for its own deadline, as with a frozen argocd-server), and the open streams
// end, while the controller goes on, as when only argocd-server is gone; SetOutage(Up) ends it.
//
// # Several instances
//
// Instances (NewInstances) is a fleet of several Argo CD instances in one process: a Server per name, each its
// own apps, counters and outages, served by one handler under /instances/{name} (the instance "" at the root),
// so each has its own base URL.
//
// Thousands of apps are fine: every request is O(apps) at most (list, stream snapshot).
package argocdsim
