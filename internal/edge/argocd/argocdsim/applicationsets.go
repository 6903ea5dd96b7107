package argocdsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"strings"
	"text/template"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/valyala/fasttemplate"
	"google.golang.org/grpc/codes"
)

// handleGenerate answers POST /api/v1/applicationsets/generate (server/applicationset/applicationset.go
// Generate) for ApplicationSets whose generators are lists, or generators that need live services (SCM
// providers, pull requests, plugins, duck types) when Config.LiveGenerator stands in for those services. Templates with string parameters are rendered over the template's JSON
// (Argo CD renders each string field: applicationset/utils Render.RenderTemplateParams; its package pulls in
// controller-runtime, which a simulator is not worth).
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ApplicationSet *v1alpha1.ApplicationSet `json:"applicationSet"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, codes.InvalidArgument, err.Error())
		return
	}
	set := req.ApplicationSet
	if set == nil {
		writeError(w, codes.Unknown, "error creating ApplicationSets: ApplicationSets is nil in request")
		return
	}
	if set.Namespace == "" {
		set.Namespace = "argocd"
	}
	var apps []*v1alpha1.Application
	for i, g := range set.Spec.Generators {
		var params []map[string]any
		var err error
		switch kind := liveKind(&g); {
		case g.List != nil && kind == "" && g.Matrix == nil && g.Merge == nil && g.Git == nil && g.Clusters == nil:
			params, err = listParams(g.List, set.Spec.GoTemplate)
		case kind != "" && s.cfg.LiveGenerator != nil:
			params, err = s.cfg.LiveGenerator(kind, &g)
		default:
			writeError(w, codes.Unimplemented, fmt.Sprintf("argocdsim generates list generators and, with Config.LiveGenerator, live ones only (generator %d)", i+1))
			return
		}
		if err != nil {
			writeError(w, codes.Unknown, "unable to generate Applications of ApplicationSet: "+err.Error())
			return
		}
		// controllers/template/template.go GetTempApplication.
		t := set.Spec.Template
		tmpl := &v1alpha1.Application{Spec: t.Spec}
		tmpl.Annotations, tmpl.Labels, tmpl.Namespace, tmpl.Name, tmpl.Finalizers = t.Annotations, t.Labels, t.Namespace, t.Name, t.Finalizers
		for _, p := range params {
			app, err := renderTemplate(tmpl, p, set.Spec.GoTemplate)
			if err != nil {
				writeError(w, codes.Unknown, "unable to generate Applications of ApplicationSet: "+err.Error())
				return
			}
			app.Namespace = set.Namespace
			apps = append(apps, app)
		}
	}
	writeJSON(w, map[string]any{"applications": apps})
}

// liveKind names g's generator when it is one that needs a live service.
func liveKind(g *v1alpha1.ApplicationSetGenerator) string {
	switch {
	case g.SCMProvider != nil:
		return "scmProvider"
	case g.PullRequest != nil:
		return "pullRequest"
	case g.Plugin != nil:
		return "plugin"
	case g.ClusterDecisionResource != nil:
		return "clusterDecisionResource"
	}
	return ""
}

// listParams is applicationset/generators/list.go GenerateParams for elements (not elementsYaml).
func listParams(g *v1alpha1.ListGenerator, goTemplate bool) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(g.Elements))
	for _, raw := range g.Elements {
		var element map[string]any
		if err := json.Unmarshal(raw.Raw, &element); err != nil {
			return nil, fmt.Errorf("error unmarshling list element %w", err)
		}
		if goTemplate {
			out = append(out, element)
			continue
		}
		params := map[string]any{}
		for k, v := range element {
			if k == "values" {
				values, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("error parsing values map")
				}
				for vk, vv := range values {
					str, ok := vv.(string)
					if !ok {
						return nil, fmt.Errorf("error parsing value as string")
					}
					params["values."+vk] = str
				}
				continue
			}
			str, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("error parsing value as string")
			}
			params[k] = str
		}
		out = append(out, params)
	}
	return out, nil
}

// renderTemplate substitutes p into every string of tmpl: {{.key}} with goTemplate, {{key}} otherwise.
func renderTemplate(tmpl *v1alpha1.Application, p map[string]any, goTemplate bool) (*v1alpha1.Application, error) {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	quoted := map[string]any{}
	for k, v := range p {
		b, err := json.Marshal(fmt.Sprint(v))
		if err != nil {
			return nil, err
		}
		quoted[k] = string(b[1 : len(b)-1]) // escaped for a JSON string
	}
	var out string
	if goTemplate {
		t, err := template.New("app").Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return nil, err
		}
		var sb strings.Builder
		if err := t.Execute(&sb, quoted); err != nil {
			return nil, err
		}
		out = sb.String()
	} else {
		out = fasttemplate.New(string(raw), "{{", "}}").ExecuteFuncString(func(w io.Writer, tag string) (int, error) {
			if v, ok := quoted[strings.TrimSpace(tag)]; ok {
				return w.Write([]byte(v.(string)))
			}
			return w.Write([]byte("{{" + tag + "}}"))
		})
	}
	var app v1alpha1.Application
	if err := json.Unmarshal([]byte(out), &app); err != nil {
		return nil, err
	}
	return &app, nil
}
