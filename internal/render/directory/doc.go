// Package directory renders Argo CD directory application sources in-process: plain YAML and JSON manifests and
// Jsonnet, exactly as Argo CD's repo-server finds them (argo-cd v3.5.7 reposerver/repository/repository.go
// findManifests, getPotentiallyValidManifests, getObjsFromYAMLOrJSON, splitYAMLOrJSON, makeJsonnetVM).
//
// The model:
//   - the application directory is walked in filepath.Walk order (lexical, depth-first, symbolic links to
//     directories not followed), into subdirectories only with `recurse`;
//   - a file is considered when its name ends in .yaml, .yml, .json or .jsonnet, it is (or links to) a regular
//     file inside the checkout, it matches `include` and not `exclude` (gobwas/glob patterns matched against the
//     path relative to the application directory, `*` crossing "/", `{a,b}` alternatives) and does not contain
//     the +argocd:skip-file-rendering marker;
//   - the combined size of the YAML/JSON files is capped (Argo CD's max combined manifest size);
//   - .yaml/.yml files are YAML streams; a file that fails to parse is an error if it looks like a manifest and
//     is ignored otherwise; .json files hold one object; .jsonnet files are evaluated with go-jsonnet, TLAs and
//     ext vars (code or string, envsubst'ed), library paths relative to the repository root;
//   - `kind: List` objects are returned as they are; flattening and tracking belong to the caller.
//
// Every read goes through repofs: reads are confined to the checkout and recorded, and the Jsonnet importer cannot
// reach a file outside it (absolute imports and imports climbing out are refused).
package directory
