package fleetview

import (
	"html/template"
	"strings"
)

var appsFuncs = template.FuncMap{
	"elapsed": elapsed,
	"optime":  opTime,
	"lower":   strings.ToLower,
}

// appsBody is the part of /fleet/apps the page's script fetches again (?fragment=1) and swaps in: the counts and
// this page of apps. The filter form stays outside it, so that a refresh does not take a field from under the
// keyboard.
const appsBody = `{{define "apps"}}{{$now := .Now}}{{$inst := .Instances}}
{{- if .Err}}<p role="alert">{{.Err}}: the filter is not applied.</p>{{end}}
{{range .Streams}}<p class="gate"><strong>Instance {{if .Name}}{{.Name}}{{else}}(default){{end}}</strong>: its apps are not all known yet{{if .Error}}: {{.Error}}{{end}}.</p>{{end}}
<p class="summary"><strong>{{.Matched}}</strong> of {{.Total}} apps · {{.OutOfSync}} OutOfSync · {{.Degraded}} Degraded
{{- if .DriftAfter}} · <a href="{{.DriftLink}}"><strong>{{.Drifting}} in lasting drift</strong></a> (OutOfSync or Degraded for {{.DriftAfter}} or longer){{end}}</p>
{{if .Matched}}<p>Apps {{.From}}–{{.To}} of {{.Matched}}{{if .Prev}} · <a href="{{.Prev}}" rel="prev">Previous page</a>{{end}}{{if .Next}} · <a href="{{.Next}}" rel="next">Next page</a>{{end}}</p>{{end}}
<table class="apps"><caption>Apps grouped by what they deploy, then by cluster</caption>
<thead><tr><th scope="col">Cluster</th>{{if $inst}}<th scope="col">Instance</th>{{end}}<th scope="col">App</th><th scope="col">Project</th><th scope="col">Revision</th><th scope="col">Sync</th><th scope="col">Out of sync for</th><th scope="col">Health</th><th scope="col">Last operation</th><th scope="col">Last rollout</th></tr></thead>
{{range .Groups}}<tbody><tr class="group"><th scope="rowgroup" colspan="{{if $inst}}10{{else}}9{{end}}">{{.Key}}{{if .Continued}} (continued){{end}} <span class="muted">{{.Apps}} app(s), {{.Revisions}} revision(s)</span></th></tr>
{{range .Rows}}{{$row := .}}<tr{{if .Drifting}} class="drift"{{end}}><td>{{.ClusterShown}}</td>{{if $inst}}<td>{{if .Instance}}{{.Instance}}{{else}}(default){{end}}</td>{{end}}<td>{{if .ArgoLink}}<a href="{{.ArgoLink}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}{{if .Drifting}} <strong class="mark">lasting drift</strong>{{end}}</td><td>{{.Project}}</td>
<td><code title="{{.Revision}}">{{short .Revision}}</code></td><td class="state s-{{lower .Sync}}">{{.Sync}}</td><td>{{if and (eq .Sync "OutOfSync") (not (zero .SyncSince))}}<span data-since="{{iso .SyncSince}}">{{elapsed $now .SyncSince}}</span>{{end}}</td><td class="state s-{{lower .Health}}">{{.Health}}</td>
<td>{{with .Operation}}<span class="s-{{lower .Phase}}"{{if .Message}} title="{{.Message}}"{{end}}>{{.Phase}}</span>{{if .By}} by {{.By}}{{end}}{{if not (zero (optime .))}}, {{hhmm (optime .)}}{{end}}{{end}}</td>
<td>{{with .Rollout}}{{if $row.RolloutLink}}<a href="{{$row.RolloutLink}}">#{{.ID}}</a>{{else}}{{.ID}}{{end}}: {{if .Reached}}reached{{else}}<strong>not reached</strong>{{end}}{{end}}</td></tr>
{{end}}</tbody>
{{else}}<tbody><tr><td colspan="{{if $inst}}10{{else}}9{{end}}" class="muted">no app{{if .Total}} matches the filter{{end}}</td></tr></tbody>{{end}}</table>{{end}}`

var appsTmpl = template.Must(template.New("apps-page").Funcs(funcs).Funcs(appsFuncs).Parse(layout + appsBody + `{{template "head" "Apps"}}
<main id="main"><h2>What runs where</h2>
<p class="muted">Every app of every Argo CD instance · <a href="/fleet/">Rollouts</a></p>
{{if not .Configured}}<p role="status">The inventory is not configured: this fleetwave follows no Argo CD instance's apps.</p>
{{else}}<form method="get" action="/fleet/apps" class="filters" role="search" aria-label="Filter the apps"><p>
{{if .InstanceNames}}<label for="f-instance">Instance</label> <input id="f-instance" name="instance" list="l-instance" value="{{.Filter.Instance}}" size="10">
{{end}}<label for="f-cluster">Cluster label</label> <input id="f-cluster" name="cluster" value="{{.Filter.ClusterLabel}}" placeholder="env=prd" size="12">
<label for="f-project">Project</label> <input id="f-project" name="project" list="l-project" value="{{.Filter.Project}}" size="10">
<label for="f-sync">Sync</label> <input id="f-sync" name="sync" list="l-sync" value="{{.Filter.Sync}}" size="9">
<label for="f-health">Health</label> <input id="f-health" name="health" list="l-health" value="{{.Filter.Health}}" size="9">
<label for="f-revision">Revision</label> <input id="f-revision" name="revision" value="{{.Filter.Revision}}" size="9">
<label for="f-selector">App labels</label> <input id="f-selector" name="selector" value="{{.Filter.Selector}}" placeholder="team=web" size="12">
{{if .DriftAfter}}<label><input type="checkbox" name="drift" value="1"{{if .Drift}} checked{{end}}> lasting drift only</label>
{{end}}<button type="submit">Filter</button> <a href="/fleet/apps">Clear</a></p>
{{if .InstanceNames}}<datalist id="l-instance">{{range .InstanceNames}}<option value="{{.}}">{{end}}</datalist>{{end}}
<datalist id="l-project">{{range .Projects}}<option value="{{.}}">{{end}}</datalist>
<datalist id="l-sync">{{range .SyncCodes}}<option value="{{.}}">{{end}}</datalist>
<datalist id="l-health">{{range .HealthCodes}}<option value="{{.}}">{{end}}</datalist></form>
<div id="apps" data-live="{{.Live}}" data-fragment="{{.Fragment}}">{{template "apps" .}}</div>{{end}}</main>
{{template "foot"}}`))

var appsFragmentTmpl = template.Must(template.New("apps-fragment").Funcs(funcs).Funcs(appsFuncs).Parse(appsBody + `{{template "apps" .}}`))
