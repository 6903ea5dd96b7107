// Package plan turns a release policy and the apps a change affects into an ordered, batched wave plan, and
// checks the plan against the policy. It is pure: it parses the bytes it is given (Load reads them through the
// caller's reader) and computes; it does no I/O of its own and knows no adapter.
//
// # Model
//
// A Policy (ParsePolicy reads .fleetwave.yaml, apiVersion fleetwave/v1; DefaultPolicy applies without one) is
// an ordered list of waves. Load is the one place that finds it: the first of PolicyFiles (.fleetwave.yaml, then
// .fleetwave.yml) at the root of a revision, through the reader each caller hands it — the preview's checkout,
// the App's clone cache, `fleetwave rollout`'s git — so every path reads the same file the same way. Build takes the affected Apps — one per Argo CD Application, carrying its own
// labels and its destination cluster's name and labels — and:
//
//  1. sorts them into a canonical order, so that the plan never depends on input or map order;
//  2. puts each app in the first wave whose selector matches the union of its labels and its cluster's labels
//     (the Application's value wins when both have a key);
//  3. within a wave, groups the apps by destination cluster — a cluster is the unit of batching, all of a
//     wave's apps on one cluster move together — and packs the clusters into batches that honour maxParallel
//     (clusters per batch) and every maxPerLabel (clusters per batch sharing one label value) at once, filling
//     each batch greedily, round-robin over label values, largest groups first (see batchClusters);
//  4. records violations, each with a stable rule id: uncovered (no wave selects the app), automated-sync (Argo
//     CD would sync it at merge), unsatisfiable-limits (a zero limit, or a cluster lacking a maxPerLabel label),
//     canary-first (a production wave gets an app kind no earlier wave had).
//
// A Plan has three renderings: JSON (the stable `plan` contract of `fleetwave plan --output json`), WriteText
// for terminals and WriteMarkdown (table, Mermaid diagram, batches, violations) for PR comments.
//
// Without a policy file, apps whose ApplicationSet uses strategy.rollingSync are planned the way Argo CD's
// ApplicationSet controller would roll them out (ImportRollingSync); the rest get one canary app and then
// batches of at most 25% of the clusters, at most one per region.
//
// The user documentation of the policy format is docs/policy.md; SchemaV1 is its JSON Schema for editors.
package plan
