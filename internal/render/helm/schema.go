package helm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// validateAgainstSchema is helm's pkg/chartutil/jsonschema.go ValidateAgainstSchema with one change: helm
// resolves "$ref"s to file://, http:// and https:// URLs (reading the host's files, calling the network), which
// hostile chart content must not make the bot do. Such references are refused with ErrRemote; urn: references
// get helm's permissive fallback. Messages are helm's.
func validateAgainstSchema(chrt *chart.Chart, values map[string]interface{}) error {
	var sb strings.Builder
	if chrt.Schema != nil {
		if err := validateAgainstSingleSchema(values, chrt.Schema); err != nil {
			var remote *remoteRefError
			if errors.As(err, &remote) {
				return fmt.Errorf("values.schema.json of chart %s: %w", chrt.Name(), err)
			}
			sb.WriteString(fmt.Sprintf("%s:\n", chrt.Name()))
			sb.WriteString(err.Error())
		}
	}
	for _, subchart := range chrt.Dependencies() {
		raw, exists := values[subchart.Name()]
		if !exists || raw == nil {
			continue
		}
		subchartValues, ok := raw.(map[string]any)
		if !ok {
			sb.WriteString(fmt.Sprintf("%s:\ninvalid type for values: expected object (map), got %T\n", subchart.Name(), raw))
			continue
		}
		if err := validateAgainstSchema(subchart, subchartValues); err != nil {
			var remote *remoteRefError
			if errors.As(err, &remote) {
				return err
			}
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

type remoteRefError struct{ url string }

func (e *remoteRefError) Error() string {
	return fmt.Sprintf("schema reference %s is not fetched (no file or network access from chart content)", e.url)
}

func (e *remoteRefError) Unwrap() error { return ErrRemote }

// refusingLoader refuses every load and remembers the first URL (jsonschema's LoadURLError does not unwrap).
type refusingLoader struct{ first string }

func (l *refusingLoader) Load(u string) (any, error) {
	if l.first == "" {
		l.first = u
	}
	return nil, &remoteRefError{url: u}
}

// urnLoader is helm's: without a resolver, an urn: reference becomes the permissive schema `true`.
type urnLoader struct{}

func (urnLoader) Load(string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader("true"))
}

func validateAgainstSingleSchema(values chartutil.Values, schemaJSON []byte) (reterr error) {
	defer func() {
		if r := recover(); r != nil {
			reterr = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	refuse := &refusingLoader{}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(jsonschema.SchemeURLLoader{
		"file":  refuse,
		"http":  refuse,
		"https": refuse,
		"urn":   urnLoader{},
	})
	if err := compiler.AddResource("file:///values.schema.json", schema); err != nil {
		return err
	}
	validator, err := compiler.Compile("file:///values.schema.json")
	if err != nil {
		if refuse.first != "" {
			return &remoteRefError{url: refuse.first}
		}
		return err
	}
	if err := validator.Validate(values.AsMap()); err != nil {
		// chartutil.JSONSchemaValidationError's message.
		return errors.New(strings.TrimPrefix(err.Error(), "jsonschema validation failed with 'file:///values.schema.json#'\n") + "\n")
	}
	return nil
}
