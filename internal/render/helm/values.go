package helm

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// mergeValues is helm's pkg/cli/values/options.go MergeValues for the flags util/helm/cmd.go template passes:
// --values files in order (spec.source.helm.values/valuesObject last), then --set, --set-string, --set-file.
// Files are read through the confined checkouts; remote files are refused.
func mergeValues(in Input, appPath string, o *templateOpts) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	for _, f := range o.values {
		parts, err := splitValuesFlag(in, appPath, f)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			b, err := readFile(in, p)
			if err != nil {
				return nil, err
			}
			cur := map[string]interface{}{}
			if err := yaml.Unmarshal(b, &cur); err != nil {
				return nil, fmt.Errorf("failed to parse values file %q: %w", p.name, err)
			}
			base = helmvalues.Merge(base, cur)
		}
	}
	if o.extraValues != nil {
		cur := map[string]interface{}{}
		if err := yaml.Unmarshal(o.extraValues, &cur); err != nil {
			return nil, fmt.Errorf("failed to parse spec.source.helm.values: %w", err)
		}
		base = helmvalues.Merge(base, cur)
	}
	// util/helm/cmd.go ranges over Go maps, so Argo CD's flag order among parameters is random; sorted here. Only
	// parameters that overlap (a and a.b) could tell the difference, and Argo CD itself is not stable for those.
	for _, k := range sortedKeys(o.set) {
		if err := strvals.ParseInto(k+"="+cleanSetParameters(o.set[k]), base); err != nil {
			return nil, fmt.Errorf("parameter %q: failed parsing --set data: %w", k, err)
		}
	}
	for _, k := range sortedKeys(o.setString) {
		if err := strvals.ParseIntoString(k+"="+cleanSetParameters(o.setString[k]), base); err != nil {
			return nil, fmt.Errorf("parameter %q: failed parsing --set-string data: %w", k, err)
		}
	}
	fileKeys := make([]string, 0, len(o.setFile))
	for k := range o.setFile {
		fileKeys = append(fileKeys, k)
	}
	sort.Strings(fileKeys)
	for _, k := range fileKeys {
		f := o.setFile[k]
		if f.fs == nil {
			return nil, remoteErr(in, fmt.Sprintf("file parameter %q (%s)", k, f.url))
		}
		// The CLI gets an absolute path, escaped like a --set value; strvals hands the parsed value to the reader.
		// A virtual absolute path keeps that parsing identical.
		virtual := "/" + f.rel
		reader := func(rs []rune) (interface{}, error) {
			if string(rs) != virtual {
				return nil, fmt.Errorf("open %s: %w", strings.TrimPrefix(string(rs), "/"), fs.ErrNotExist)
			}
			b, err := readFile(in, f)
			if err != nil {
				return nil, err
			}
			return string(b), nil
		}
		if err := strvals.ParseIntoFile(k+"="+cleanSetParameters(virtual), base, reader); err != nil {
			return nil, fmt.Errorf("file parameter %q: failed parsing --set-file data: %w", k, err)
		}
	}
	return base, nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readFile reads a value or --set-file file from its checkout.
func readFile(in Input, f file) ([]byte, error) {
	if f.fs == nil {
		return nil, remoteErr(in, fmt.Sprintf("values file %q", f.name))
	}
	b, err := f.fs.ReadFile(f.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("values file %q not found (%s): %w", f.name, f.rel, ErrValuesFileNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("values file %q: %w", f.name, err)
	}
	return b, nil
}

// remoteErr refuses remote content. The message says why: policy, or (when the operator allows remote
// sources) the engine's design.
func remoteErr(in Input, what string) error {
	why := "remote sources are not allowed"
	if in.AllowRemote {
		why = "the in-process renderer never uses the network"
	}
	return &markedError{msg: fmt.Sprintf("%s is remote and is not fetched: %s", what, why), marks: []error{ErrRemote}}
}

// splitValuesFlag reproduces how the helm CLI reads Argo CD's `--values <absolute path>`: the flag is a
// StringSlice, so the path is split as CSV; a piece after a comma is relative to the working directory (the
// app path). Paths without commas or quotes (all sane ones) come back unchanged.
func splitValuesFlag(in Input, appPath string, f file) ([]file, error) {
	if f.fs == nil || !strings.ContainsAny(f.rel, `,"`) {
		return []file{f}, nil
	}
	fields, err := csv.NewReader(strings.NewReader("/" + f.rel)).Read()
	if err != nil {
		return nil, fmt.Errorf("values file %q: invalid argument for --values: %w", f.name, err)
	}
	out := make([]file, 0, len(fields))
	for i, s := range fields {
		if i == 0 {
			rel, err := repofs.Clean(strings.TrimPrefix(s, "/"))
			if err != nil {
				return nil, fmt.Errorf("values file %q: %w", f.name, err)
			}
			out = append(out, file{fs: f.fs, rel: rel, name: rel})
			continue
		}
		if strings.HasPrefix(s, "/") {
			return nil, fmt.Errorf("values file %q: %q is an absolute path outside the repository", f.name, s)
		}
		rel, err := repofs.Clean(path.Join(appPath, s))
		if err != nil {
			return nil, fmt.Errorf("values file %q: %w", f.name, err)
		}
		out = append(out, file{fs: in.FS, rel: rel, name: s})
	}
	return out, nil
}

// cleanSetParameters is util/helm/cmd.go cleanSetParameters: escape commas (not already escaped) unless the
// value is a {a,b} list.
func cleanSetParameters(val string) string {
	if strings.HasPrefix(val, `{`) && strings.HasSuffix(val, `}`) {
		return val
	}
	var b strings.Builder
	var prev rune
	for _, r := range val {
		if r == ',' && prev != '\\' {
			b.WriteString(`\,`)
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}
