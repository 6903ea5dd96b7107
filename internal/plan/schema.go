package plan

import _ "embed"

// schemaJSON is the JSON Schema (draft 2020-12) of apiVersion fleetwave/v1, for editors (e.g. the YAML
// language server: `# yaml-language-server: $schema=<url>` on the first line of .fleetwave.yaml).
//
//go:embed schema/fleetwave-policy-v1.schema.json
var schemaJSON []byte

// SchemaV1 returns the JSON Schema of the fleetwave/v1 release policy. ParsePolicy stays the authority: the
// schema cannot express every check (duplicate wave names, min above max, canary rules).
func SchemaV1() []byte {
	out := make([]byte, len(schemaJSON))
	copy(out, schemaJSON)
	return out
}
