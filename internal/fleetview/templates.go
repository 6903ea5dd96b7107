package fleetview

import (
	"html/template"
	"time"
)

var funcs = template.FuncMap{
	"short": func(s string) string {
		if len(s) > 7 {
			return s[:7]
		}
		return s
	},
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return ""
		}
		d := now.Sub(t).Round(time.Second)
		if d < 0 {
			return "in " + (-d).String()
		}
		return d.String() + " ago"
	},
	"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"hhmm": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"zero": func(t time.Time) bool { return t.IsZero() },
	"inc":  func(i int) int { return i + 1 },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

const layout = `{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.}} · fleetwave</title><link rel="stylesheet" href="/fleet/static/fleet.css"><script src="/fleet/static/live.js" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header><h1><a href="/fleet/">fleetwave</a></h1><span class="muted">fleet view, read-only</span></header>{{end}}
{{define "foot"}}<footer class="muted"><p>Updates live. Commands (/pause, /resume, /approve, /abort, /rollback) are given on the pull request.</p></footer></body></html>{{end}}
{{define "rollouts"}}<table><caption>{{.Caption}}</caption>
<thead><tr><th scope="col">Rollout</th><th scope="col">Repository</th><th scope="col">Pull request</th><th scope="col">Commit</th><th scope="col">State</th><th scope="col">Updated</th></tr></thead>
<tbody>{{range .Rows}}<tr><td><a href="{{.Link}}">#{{.ID}}</a></td><td>{{.Repo}}</td>
<td>{{if .PRLink}}<a href="{{.PRLink}}">#{{.PRNumber}}</a>{{else}}<span class="muted">push</span>{{end}}</td>
<td><code>{{short .MergeSHA}}</code></td><td class="state s-{{.State}}">{{.State}}</td><td>{{hhmm .UpdatedAt}}</td></tr>
{{else}}<tr><td colspan="6" class="muted">none</td></tr>{{end}}</tbody></table>{{end}}`

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(layout + `{{template "head" "Rollouts"}}
<main id="main"><p class="muted"><a href="/fleet/apps">What runs where</a>: every app of every Argo CD instance</p><h2>In progress</h2>{{template "rollouts" (dict "Caption" "Rollouts in progress" "Rows" .Active)}}
<h2>Recent</h2>{{template "rollouts" (dict "Caption" "Recent rollouts" "Rows" .Recent)}}</main>
{{template "foot"}}`))

const rolloutBody = `{{define "body"}}{{$now := .Now}}{{with .Rollout}}
<h2>Rollout #{{.ID}} of {{.Repo}}{{if .PRLink}}, <a href="{{.PRLink}}">pull request #{{.PRNumber}}</a>{{end}}</h2>
<p><span class="state s-{{.State}}">{{.State}}</span>{{if .Message}}: {{.Message}}{{end}}
· commit <a href="{{$.CommitLink}}"><code>{{short .MergeSHA}}</code></a> (its check-runs)
· started {{hhmm .CreatedAt}}</p>{{end}}
<p><label for="fleet-progress">Fleet on the new revision:</label> <progress id="fleet-progress" max="{{.Total}}" value="{{.OnNew}}">{{.Percent}}%</progress>
{{.OnNew}} of {{.Total}} apps ({{.Percent}}%)</p>
{{range .Waves}}<section aria-labelledby="wave-{{.Index}}">
<h2 id="wave-{{.Index}}">Wave {{.Index | inc}}: {{.Name}} <span class="state s-{{.State}}">{{.State}}</span></h2>
<p><label for="wave-{{.Index}}-progress">Synced</label> <progress id="wave-{{.Index}}-progress" max="{{.All}}" value="{{.Synced}}"></progress>
{{.Synced}} synced, {{.InFlight}} in flight, {{.Waiting}} waiting, {{.Failed}} failed{{if .OutOfPlan}}, <strong>{{.OutOfPlan}} synced outside the plan</strong>{{end}}{{if .Message}} · {{.Message}}{{end}}</p>
{{if .AwaitingApproval}}<p class="gate"><strong>Approval pending</strong>{{if .Approvers}}: {{.Approvers}} may approve{{end}} with <code>/approve</code> on the pull request.</p>
{{else if .ApprovedBy}}<p class="gate">Approved by {{.ApprovedBy}} at {{hhmm .ApprovedAt}}.</p>{{end}}
{{if .Soak}}<p class="gate">Soak {{.Soak}}{{if .Gate.SoakDone}}: passed{{else if not (zero .Gate.SoakUntil)}}: ends {{hhmm .Gate.SoakUntil}}, in <span data-until="{{iso .Gate.SoakUntil}}">{{ago $now .Gate.SoakUntil}}</span>{{end}}</p>{{end}}
{{range .Gate.Metrics}}<p class="gate">Metric <code>{{.Query}}</code>: {{.Result}} ({{if .OK}}within its bound{{else}}outside its bound{{end}}, {{hhmm .At}})</p>{{end}}
{{with .Gate.Window}}<p class="gate"><strong>Held by a sync window</strong>: {{.Count}} app(s), {{.Reason}}{{if not (zero .Until)}}, until {{hhmm .Until}}{{end}}</p>{{end}}
{{if or (eq .State "running") (eq .State "gating")}}{{range .Gate.Unreachable}}<p class="gate"><strong>Instance {{if .Instance}}{{.Instance}}{{else}}(default){{end}} unreachable</strong> since {{hhmm .Since}}: {{.Why}}. Its apps wait; the other instances' apps go on.</p>{{end}}{{end}}
<table><caption>Apps of wave {{.Name}}</caption>
<thead><tr>{{if $.Instances}}<th scope="col">Instance</th>{{end}}<th scope="col">App</th><th scope="col">Cluster</th><th scope="col" class="num">Batch</th><th scope="col">State</th><th scope="col">Revision</th><th scope="col">Health</th><th scope="col">Took</th><th scope="col">Last message</th></tr></thead>
<tbody>{{range .Steps}}<tr>{{if $.Instances}}<td>{{if .App.Instance}}{{.App.Instance}}{{else}}(default){{end}}</td>{{end}}<td>{{if .ArgoLink}}<a href="{{.ArgoLink}}">{{.App.Name}}</a>{{else}}{{.App.Name}}{{end}}</td><td>{{.Cluster}}</td><td class="num">{{.Batch}}</td>
<td class="state s-{{.State}}">{{.State}}</td><td><code>{{short .OpRevision}}</code></td><td>{{.Health}}</td><td>{{.Duration}}</td><td>{{.Message}}</td></tr>
{{end}}</tbody></table></section>{{end}}
<h2>People's actions</h2>
<table><caption>Pause, resume, approve, abort and rollback, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">On</th><th scope="col">Result</th></tr></thead>
<tbody>{{range .Events}}<tr><td>{{hhmm .At}}</td><td>{{.Actor}}</td><td>{{.Action}}</td><td>{{.Target}}</td><td>{{.Result}}{{if .Message}}: {{.Message}}{{end}}</td></tr>
{{else}}<tr><td colspan="5" class="muted">none</td></tr>{{end}}</tbody></table>{{end}}`

var rolloutTmpl = template.Must(template.New("rollout").Funcs(funcs).Parse(layout + rolloutBody +
	`{{template "head" (printf "Rollout #%d" .Rollout.ID)}}
<main id="main" data-live="{{.Live}}" data-fragment="{{.Fragment}}">{{template "body" .}}</main>
{{template "foot"}}`))

var fragmentTmpl = template.Must(template.New("fragment").Funcs(funcs).Parse(rolloutBody + `{{template "body" .}}`))

var loginTmpl = template.Must(template.New("login").Funcs(funcs).Parse(layout + `{{template "head" "Sign in"}}
<main id="main"><h2>Sign in</h2>{{if .Failed}}<p role="alert">That token is not the fleet view's token.</p>{{end}}
<form method="post" action="/fleet/login"><input type="hidden" name="next" value="{{.Next}}">
<p><label for="token">Fleet view token</label> <input id="token" name="token" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p></form></main>{{template "foot"}}`))
