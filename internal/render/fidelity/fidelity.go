// Package fidelity compares rendered YAML streams the way the fidelity corpus's compare tool
// (../shared/fidelity/compare) does: documents parsed with Kubernetes YAML semantics, empty documents dropped,
// objects keyed by apiVersion/kind/namespace/name ("#n" for repeats) and compared as parsed values.
// Tests and the `make fidelity` check use it.
package fidelity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one parsed document and its identity key.
type Object struct {
	Key   string
	Value any
}

// ParseStream splits a YAML stream into keyed objects.
func ParseStream(b []byte) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []Object
	seen := map[string]int{}
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d is not a mapping", i+1)
		}
		k := keyOf(m)
		seen[k]++
		if seen[k] > 1 {
			k += "#" + strconv.Itoa(seen[k])
		}
		objs = append(objs, Object{k, m})
	}
	return objs, nil
}

func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

func keyOf(m map[string]any) string {
	name := str(m, "metadata", "name")
	if name == "" {
		if g := str(m, "metadata", "generateName"); g != "" {
			name = g + "*"
		}
	}
	return fmt.Sprintf("%s/%s/%s/%s", str(m, "apiVersion"), str(m, "kind"), str(m, "metadata", "namespace"), name)
}
