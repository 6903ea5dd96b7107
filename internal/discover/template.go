package discover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/gosimple/slug"
	"github.com/valyala/fasttemplate"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// templater substitutes ApplicationSet parameters into strings, as Argo CD's ApplicationSet controller does
// (applicationset/utils/utils.go Render.Replace): Go templates with sprig when goTemplate is set, else the
// legacy {{param}} form (fasttemplate, unknown or non-string parameters left as they are).
type templater struct {
	funcs template.FuncMap
}

// newTemplater builds the function map of applicationset/utils/utils.go: sprig's generic functions without
// env, expandenv and getHostByName, plus normalize, slugify, toYaml, fromYaml and fromYamlArray.
func newTemplater() *templater {
	f := sprig.GenericFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	delete(f, "getHostByName")
	f["normalize"] = SanitizeName
	f["slugify"] = slugifyName
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	return &templater{funcs: f}
}

// isTemplated is applicationset/utils/utils.go isTemplatedRegex.
var isTemplated = regexp.MustCompile(".*{{.*}}.*")

// Replace substitutes params into tmpl.
func (t *templater) Replace(tmpl string, params map[string]any, goTemplate bool, options []string) (string, error) {
	if goTemplate {
		if !strings.Contains(tmpl, "{{") { // a template without actions renders as itself
			return tmpl, nil
		}
		tp, err := template.New("").Funcs(t.funcs).Parse(tmpl)
		if err != nil {
			return "", fmt.Errorf("failed to parse template %s: %w", tmpl, err)
		}
		for _, o := range options {
			tp = tp.Option(o)
		}
		var b bytes.Buffer
		if err := tp.Execute(&b, params); err != nil {
			return "", fmt.Errorf("failed to execute go template %s: %w", tmpl, err)
		}
		return b.String(), nil
	}
	if !isTemplated.MatchString(tmpl) {
		return tmpl, nil
	}
	ft, err := fasttemplate.NewTemplate(tmpl, "{{", "}}")
	if err != nil {
		return "", fmt.Errorf("invalid template: %w", err)
	}
	return ft.ExecuteFuncString(func(w io.Writer, tag string) (int, error) {
		trimmed := strings.TrimSpace(tag)
		v, ok := params[trimmed].(string)
		if trimmed == "" || !ok {
			return fmt.Fprintf(w, "{{%s}}", tag)
		}
		return w.Write([]byte(v))
	}), nil
}

// deepReplace substitutes params into every string of a JSON value, map keys included, dropping null map values
// (applicationset/utils/utils.go deeplyReplace walks the typed object the same way; its JSON form has the same
// strings, embedded raw JSON such as helm.valuesObject included).
func (t *templater) deepReplace(v any, params map[string]any, goTemplate bool, options []string) (any, error) {
	switch x := v.(type) {
	case string:
		return t.Replace(x, params, goTemplate, options)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if val == nil {
				continue
			}
			nv, err := t.deepReplace(val, params, goTemplate, options)
			if err != nil {
				return nil, err
			}
			nk, err := t.Replace(k, params, goTemplate, options)
			if err != nil {
				return nil, err
			}
			out[nk] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			nv, err := t.deepReplace(val, params, goTemplate, options)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	default:
		return v, nil
	}
}

// replaceInto renders params into in (any JSON-serialisable value) and decodes the result into out.
func (t *templater) replaceInto(in any, out any, params map[string]any, goTemplate bool, options []string) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return err
	}
	replaced, err := t.deepReplace(generic, params, goTemplate, options)
	if err != nil {
		return err
	}
	raw, err = json.Marshal(replaced)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// renderApplication renders one Application from an ApplicationSet template and one parameter set
// (applicationset/utils/utils.go RenderTemplateParams, controllers/template/template.go GenerateApplications).
func (t *templater) renderApplication(tmpl v1alpha1.ApplicationSetTemplate, appSet *v1alpha1.ApplicationSet, params map[string]any) (*v1alpha1.Application, error) {
	app := &v1alpha1.Application{}
	app.Annotations = tmpl.Annotations
	app.Labels = tmpl.Labels
	app.Namespace = tmpl.Namespace
	app.Name = tmpl.Name
	app.Spec = tmpl.Spec
	app.Finalizers = tmpl.Finalizers
	if len(params) > 0 {
		rendered := &v1alpha1.Application{}
		if err := t.replaceInto(app, rendered, params, appSet.Spec.GoTemplate, appSet.Spec.GoTemplateOptions); err != nil {
			return nil, err
		}
		app = rendered
		sp := appSet.Spec.SyncPolicy
		if (sp == nil || !sp.PreserveResourcesOnDeletion) && len(app.Finalizers) == 0 {
			app.Finalizers = []string{v1alpha1.ResourcesFinalizerName}
		}
	} else {
		app = app.DeepCopy()
	}
	if appSet.Spec.TemplatePatch != nil {
		patch, err := t.Replace(*appSet.Spec.TemplatePatch, params, appSet.Spec.GoTemplate, appSet.Spec.GoTemplateOptions)
		if err != nil {
			return nil, fmt.Errorf("error replacing values in templatePatch: %w", err)
		}
		if app, err = applyTemplatePatch(app, patch); err != nil {
			return nil, err
		}
	}
	app.APIVersion = "argoproj.io/v1alpha1"
	app.Kind = "Application"
	// The app's namespace is the ApplicationSet's (controllers/template/template.go).
	app.Namespace = appSet.Namespace
	return app, nil
}

// applyTemplatePatch is applicationset/controllers/template/patch.go: a strategic merge patch of the
// Application; the project cannot be changed by it.
func applyTemplatePatch(app *v1alpha1.Application, patch string) (*v1alpha1.Application, error) {
	appJSON, err := json.Marshal(app)
	if err != nil {
		return nil, err
	}
	patchJSON := []byte(patch)
	if s := strings.TrimSpace(patch); s == "" || s[0] != '{' {
		if patchJSON, err = yaml.YAMLToJSON([]byte(patch)); err != nil {
			return nil, fmt.Errorf("error while converting templatePatch to json: %w", err)
		}
	}
	if err := json.Unmarshal(patchJSON, &v1alpha1.Application{}); err != nil {
		return nil, fmt.Errorf("invalid templatePatch: %w", err)
	}
	data, err := strategicpatch.StrategicMergePatch(appJSON, patchJSON, v1alpha1.Application{})
	if err != nil {
		return nil, fmt.Errorf("error while applying templatePatch: %w", err)
	}
	out := &v1alpha1.Application{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("error while unmarshalling patched application: %w", err)
	}
	out.Spec.Project = app.Spec.Project
	return out, nil
}

var invalidDNSNameChars = regexp.MustCompile("[^-a-z0-9.]")

// SanitizeName is applicationset/utils/template_functions.go SanitizeName: lower case, characters outside
// [-a-z0-9.] replaced by "-", at most 253 characters, "-" and "." trimmed at both ends. It gives the
// nameNormalized and *Normalized parameters.
func SanitizeName(name string) string {
	name = strings.ToLower(name)
	name = invalidDNSNameChars.ReplaceAllString(name, "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

// slugifyName is applicationset/utils/utils.go SlugifyName (args: [maxSize int], [smartTruncate bool], name),
// without touching gosimple/slug's package-level settings: slug.Make runs with its defaults (no length cap)
// and the cap is applied here as slug would.
func slugifyName(args ...any) string {
	maxSize := 50
	smart := true
	name := ""
	for i, a := range args {
		switch i {
		case len(args) - 1:
			name, _ = a.(string)
		case 0:
			maxSize, _ = a.(int)
		case 1:
			smart, _ = a.(bool)
		}
	}
	s := SanitizeName(name)
	if maxSize <= 0 {
		return slug.Make(s)
	}
	if !smart {
		if len(s) >= maxSize {
			s = s[:maxSize]
		}
		return slug.Make(s)
	}
	out := slug.Make(s)
	if len(out) <= maxSize {
		return out
	}
	for i := maxSize; i >= 0; i-- {
		if out[i] == '-' {
			return out[:i]
		}
	}
	return out[:maxSize]
}

func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func fromYAML(s string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func fromYAMLArray(s string) ([]any, error) {
	a := []any{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return nil, err
	}
	return a, nil
}
