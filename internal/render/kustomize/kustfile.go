package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sync"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// This file ports sigs.k8s.io/kustomize/kustomize/v5@v5.8.1 commands/internal/kustfile/kustomizationfile.go, the
// read/modify/write cycle every `kustomize edit` command performs on kustomization.yaml. Each edit re-reads the
// file (types.Kustomization.Unmarshal + FixKustomization) and re-marshals it field by field, keeping the original
// field order and comments; reproducing it exactly makes the edited file identical to the one Argo CD builds.

// fieldMarshallingOrder is kustfile.determineFieldOrder's result.
var fieldMarshallingOrder = []string{
	"APIVersion", "Kind",
	"MetaData", "SortOptions", "Resources", "Bases", "NamePrefix", "NameSuffix", "Namespace", "Crds",
	"CommonLabels", "Labels", "CommonAnnotations", "PatchesStrategicMerge", "PatchesJson6902", "Patches",
	"ConfigMapGenerator", "SecretGenerator", "HelmCharts", "HelmChartInflationGenerator", "HelmGlobals",
	"GeneratorOptions", "Vars", "Images", "Replacements", "Replicas", "Configurations", "Generators",
	"Transformers", "Validators", "Components", "OpenAPI", "BuildMetadata",
}

var (
	fieldRegexpsOnce sync.Once
	fieldRegexps     []*regexp.Regexp
)

// fieldPatterns compiles kustfile.findMatchedField's per-field expressions once.
func fieldPatterns() []*regexp.Regexp {
	fieldRegexpsOnce.Do(func() {
		for _, f := range fieldMarshallingOrder {
			fieldRegexps = append(fieldRegexps, regexp.MustCompile("^("+"(?i)"+f+"):"))
		}
	})
	return fieldRegexps
}

type commentedField struct {
	field   string
	comment []byte
}

// kustFile is one kustomization file being edited.
type kustFile struct {
	originalFields []*commentedField
}

// readKustomization mirrors kustfile.Read: strict unmarshal, FixKustomization, and the comment/field-order scan.
func (mf *kustFile) read(data []byte) (*types.Kustomization, error) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, err
	}
	k.FixKustomization()
	mf.originalFields = nil
	if err := mf.parseCommentedFields(data); err != nil {
		return nil, err
	}
	return &k, nil
}

func (mf *kustFile) parseCommentedFields(content []byte) error {
	buffer := bytes.NewBuffer(content)
	var comments [][]byte
	line, err := buffer.ReadBytes('\n')
	for err == nil {
		if isCommentOrBlankLine(line) {
			comments = append(comments, line)
		} else {
			matched, field := findMatchedField(line)
			if matched {
				mf.originalFields = append(mf.originalFields, &commentedField{field: field, comment: bytes.Join(comments, nil)})
				comments = [][]byte{}
			} else if len(comments) > 0 && len(mf.originalFields) > 0 {
				last := mf.originalFields[len(mf.originalFields)-1]
				last.comment = append(last.comment, bytes.Join(comments, nil)...)
				comments = [][]byte{}
			}
		}
		line, err = buffer.ReadBytes('\n')
	}
	if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// marshal mirrors kustfile.marshal, including its quirk of returning the partial output on a late field error.
func (mf *kustFile) marshal(k *types.Kustomization) ([]byte, error) {
	var output []byte
	for _, c := range mf.originalFields {
		output = append(output, c.comment...)
		content, err := marshalField(c.field, k)
		if err != nil {
			return content, err
		}
		output = append(output, content...)
	}
	for _, field := range fieldMarshallingOrder {
		if mf.hasField(field) {
			continue
		}
		content, err := marshalField(field, k)
		if err != nil {
			return content, nil
		}
		output = append(output, content...)
	}
	return output, nil
}

func (mf *kustFile) hasField(name string) bool {
	for _, n := range mf.originalFields {
		if n.field == name {
			return true
		}
	}
	return false
}

func isCommentOrBlankLine(line []byte) bool {
	s := bytes.TrimRight(bytes.TrimLeft(line, " "), "\n")
	return len(s) == 0 || bytes.HasPrefix(s, []byte(`#`))
}

func findMatchedField(line []byte) (bool, string) {
	for i, r := range fieldPatterns() {
		if r.Match(line) {
			return true, fieldMarshallingOrder[i]
		}
	}
	return false, ""
}

func marshalField(field string, k *types.Kustomization) ([]byte, error) {
	r := reflect.ValueOf(*k)
	name := cases.Title(language.English, cases.NoLower).String(field) // a Caser is not safe for concurrent use
	v := r.FieldByName(name)
	if !v.IsValid() || isEmptyValue(v) {
		return []byte{}, nil
	}
	nk := &types.Kustomization{}
	kv := reflect.ValueOf(nk).Elem().FieldByName(name)
	kv.Set(v)
	b, err := yaml.Marshal(nk)
	if err != nil {
		return nil, fmt.Errorf("marshal kustomization field %s: %w", field, err)
	}
	return b, nil
}

func isEmptyValue(v reflect.Value) bool {
	if v.Type().Kind() == reflect.Ptr {
		return v.IsNil()
	}
	return v.Len() == 0
}
