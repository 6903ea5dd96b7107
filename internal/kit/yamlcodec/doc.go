// Package yamlcodec is the family of YAML codecs that stand in for the YAML libraries Argo CD runs, each to
// the same value or bytes, each falling back to the library for what it does not cover. Besides ErrorLine (the line and message of a yaml.v3 error), it holds no code; its
// packages are:
//
//   - manifestyaml: Kubernetes manifests between YAML streams and unstructured objects, as gitops-engine's
//     kube.SplitYAML and sigs.k8s.io/yaml.Marshal do it. Use it for a renderer's output and anything compared
//     or written as Argo CD would (render, diff, livediff).
//   - blockyaml: one YAML document decoded to the value go.yaml.in/yaml/v2 decodes (Decode), and the strings
//     a document mentions (Strings). Use it to read YAML that people, templates and emitters write (values,
//     kustomizations, chart heads, Applications with inline values), where yaml.v2's value is what counts.
//   - plainyaml: the plain subset most generated Application files are written in (no quotes but simple double
//     ones, no block scalars, anchors or tags), parsed and written as JSON directly. Use it only on discovery's
//     path (internal/discover.documentObject), in front of blockyaml: on a generated fleet's Application
//     manifests it takes about half of blockyaml's allocations and less time (BenchmarkDiscoveryYAML in
//     internal/discover; docs/figures.md).
//
// Every codec is held equal to its library by differential tests on tables, under fuzzing (make fuzz) and, for
// blockyaml and manifestyaml, on the render-fidelity corpus.
package yamlcodec
