// Package preview is the pipeline that turns a change to a GitOps repository into a Report: the one the `diff`
// and `plan` commands print and the GitHub App posts. Both call Run.
//
// # The pipeline
//
//  1. source: open the repository, resolve base and head (for a stale branch, head is "base merged with head",
//     as GitHub tests a pull request), list the changed files (renames included).
//  2. Lazy checkouts of base and head (source.ExportOptions.Lazy): the trees are listed and every blob indexed
//     once from git's objects (does it mention "argoproj.io"? "Application"?; head reads only the blobs the
//     change touches), and nothing is written yet.
//  3. discover the fleet on both sides, reading the files from the objects: Applications, ApplicationSets
//     (generators run offline), cluster Secrets; head reuses base's parse of every file the change did not
//     touch, and Input.Discovered (serve's) the parse of every file seen in an earlier preview.
//  4. Base renders: an app is rendered at base when the change can reach it (discover.Reach: a superset of
//     the files its render can read, from its definition) or when it may be an app-of-apps (its reach holds
//     files that mention Argo CD Applications; its children join the inventory). The others cannot change and
//     are not rendered at all — this is what makes a 500-app fleet with a 50-app change cheap.
//  5. Head: each app is judged by discover.Affected (the exact files its base render read, its paths, value
//     files, ref sources, manifest-generate-paths, its definition; added apps). Affected apps are rendered at
//     head (and at base, lazily, if step 4 had skipped them); the others keep their base render.
//     Before each render, the app's reach is written to the side's directory (everything, when the reach is
//     unbounded; head hard-links what base wrote): a change to a repository of thousands of apps writes the files
//     of the apps it renders. A render that still misses a file gets the whole revision and runs again.
//  6. diff each affected app (normalised, Secrets masked, hooks apart) and fill the report; removed apps are
//     rendered at base to show what goes away.
//  7. plan (optional): the changed and added apps go through the release policy of the head revision
//     (plan.Load: .fleetwave.yaml, else .fleetwave.yml; an unreadable or invalid one is an InputError).
//
// Run (preview.go) reads as these steps, each in its own file: change.go (1), sides.go (2, 3), render.go (4, 5),
// pair.go (6: the diffs), live.go (the live comparison, with Input.Live), findings.go (the repository's
// problems), planning.go (7). It returns a Result: the report, and the plan and the release policy as the
// callers that roll the change out take them.
//
// A merge needs only the plan (Input.PlanOnly, the App's hand-off to the rollout): steps 1–7 run as for a pull
// request, since the plan depends on which apps changed, but the live comparison with Argo CD (Input.ArgoCD serves
// only rendering, generators and sync windows) and the comment's presentation (app kinds, waves, footer) are
// skipped.
//
// # Several Argo CD instances
//
// With Input.InstanceOf, discovery asks which Argo CD instance holds each app (discover.App.Instance; an
// ApplicationSet's apps are its instance's, an app-of-apps' children their parent's), and everything Argo CD-
// dependent is that instance's (instances.go): its render settings and clusters, its remote renderer, its live
// comparer (one CompareLive per instance), its ApplicationSet generator, its sync windows. An app that maps to no
// instance, to several, or to one not in Input.Instances is never rendered: it is an error line of the report
// with the resolver's reason, and an unplaced app of the plan. Without InstanceOf every app is instance "" and
// the pipeline is the single-Argo CD one.
//
// Renders run concurrently, bounded by Input.Concurrency. An app that fails to render is an app with status
// "error" in the report, never a failed run; Run fails only for bad input (InputError: not a repository,
// unknown revision, broken policy) or a broken environment (git missing, disk full).
//
// # Limits of the reach shortcut
//
// An app that is not rendered because the change cannot reach it is reported unchanged with no read files.
// Output that depends on the revision itself ($ARGOCD_APP_REVISION in a Helm parameter or a Kustomize label)
// changes on every commit in Argo CD, but not in this preview unless a file the app reads changed.
package preview
