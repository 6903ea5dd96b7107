// Package fidelity compares rendered YAML streams the way the fidelity corpus's compare tool
// (compare/ in the render-fidelity corpus kept beside the repository) does: documents parsed with Kubernetes YAML semantics, empty documents dropped,
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
	"reflect"
	"sort"
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

// Compare compares two YAML streams as the corpus's compare tool does: objects keyed by
// apiVersion/kind/namespace/name, values compared after parsing. It returns one sorted line per missing, extra or
// different object, and whether the documents come in the same order.
func Compare(want, got []byte) (diffs []string, sameOrder bool, err error) {
	w, err := ParseStream(want)
	if err != nil {
		return nil, false, fmt.Errorf("expected: %w", err)
	}
	g, err := ParseStream(got)
	if err != nil {
		return nil, false, fmt.Errorf("rendered: %w", err)
	}
	gm := make(map[string]any, len(g))
	for _, o := range g {
		gm[o.Key] = o.Value
	}
	wm := make(map[string]bool, len(w))
	for _, o := range w {
		wm[o.Key] = true
		v, ok := gm[o.Key]
		switch {
		case !ok:
			diffs = append(diffs, "missing   "+o.Key)
		case !reflect.DeepEqual(o.Value, v):
			a, _ := json.Marshal(o.Value)
			b, _ := json.Marshal(v)
			diffs = append(diffs, "different "+o.Key+"\n  want "+truncate(string(a))+"\n  got  "+truncate(string(b)))
		}
	}
	for _, o := range g {
		if !wm[o.Key] {
			diffs = append(diffs, "extra     "+o.Key)
		}
	}
	sort.Strings(diffs)
	sameOrder = len(w) == len(g)
	for i := 0; sameOrder && i < len(w); i++ {
		sameOrder = w[i].Key == g[i].Key
	}
	return diffs, sameOrder, nil
}

func truncate(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "... (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return s
}
