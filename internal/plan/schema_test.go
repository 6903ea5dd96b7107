package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaV1()))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("fleetwave-policy-v1.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("fleetwave-policy-v1.schema.json")
	if err != nil {
		t.Fatalf("compiling the schema: %v", err)
	}
	return sch
}

// yamlToJSONValue decodes a YAML policy into the value a JSON decoder would produce (anchors and merges applied).
func yamlToJSONValue(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func TestSchemaAcceptsExamples(t *testing.T) {
	sch := compileSchema(t)
	files, err := filepath.Glob(filepath.Join("testdata", "policies", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example policies: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParsePolicy(f, data); err != nil {
			t.Errorf("%s: parser rejects it: %v", f, err)
		}
		v, err := yamlToJSONValue(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: schema rejects it: %v", f, err)
		}
	}
}

// TestSchemaRejectsInvalid keeps the schema and the parser in step: what the parser rejects, the schema
// rejects too, except for the checks a schema cannot express.
func TestSchemaRejectsInvalid(t *testing.T) {
	sch := compileSchema(t)
	cannotTell := map[string]bool{
		"empty": true, "syntax": true, "two documents": true, "duplicate key": true, // not YAML values
		"duplicate wave names": true, "wave names differing only in case": true, "duplicate through an alias": true, "teams but not required": true,
		"requireCanary without production wave": true, "first wave requires canary": true,
		"class on two tracks": true, "duplicate track names": true, "oneWave track named as a wave": true, "track with both modes": true,
	}
	for _, tt := range parseErrorCases() {
		if cannotTell[tt.name] {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			v, err := yamlToJSONValue([]byte(tt.yaml))
			if err != nil {
				t.Skipf("not decodable as a value: %v", err)
			}
			if err := sch.Validate(v); err == nil {
				t.Errorf("schema accepts a policy the parser rejects with %q", tt.want[0])
			}
		})
	}
}

func TestSchemaV1IsACopy(t *testing.T) {
	a := SchemaV1()
	a[0] = 'x'
	if SchemaV1()[0] == 'x' {
		t.Error("SchemaV1 hands out the embedded bytes")
	}
}
