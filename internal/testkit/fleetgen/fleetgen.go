// Package fleetgen writes synthetic GitOps repositories of any size for the scaling benchmarks (`make bench`,
// hack/benchfleet) and tests: per cluster, five Helm apps over three shared vendored charts with their values
// files outside the charts (common → env → cluster), and five Kustomize apps as base → env → cluster overlays
// with patches and a ConfigMap generator. Every Application lives in its own file under apps/<cluster>/, and the
// clusters are Argo CD cluster Secrets under clusters/<cluster>/secret.yaml, so discovery finds them in the
// repository. It only writes files; callers commit them.
package fleetgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AppsPerCluster is the number of Applications each cluster gets: HelmApps then KustomizeApps.
const AppsPerCluster = 10

// HelmApps are the Helm apps of every cluster, each with its chart.
var HelmApps = []struct{ Name, Chart string }{
	{"web", "web"}, {"api", "web"}, {"worker", "worker"}, {"jobs", "worker"}, {"cache", "cache"},
}

// KustomizeApps are the Kustomize apps of every cluster.
var KustomizeApps = []string{"gateway", "auth", "billing", "search", "notify"}

// Envs are the environments clusters are spread over (cluster i is in Envs[i%3]).
var Envs = []string{"dev", "stg", "prd"}

// Cluster is the name of cluster i.
func Cluster(i int) string { return fmt.Sprintf("c-%04d", i) }

// Env is the environment of cluster i.
func Env(i int) string { return Envs[i%len(Envs)] }

// Options shape a fleet beyond its size.
type Options struct {
	// ReleaseNames gives the fleet the shape of nearly every real chart: the Helm apps set no helm.releaseName,
	// so the release is the app's name as Argo CD renders it ("c-0000-web"), and the charts name their objects
	// after it ({{ .Release.Name }}, {{ .Release.Name }}-service, the app.kubernetes.io/instance label); the
	// Deployments of charts and Kustomize bases carry revisionHistoryLimit: 5 (ChangeRevisionHistory's line).
	ReleaseNames bool
}

// Write writes a fleet of clusters × AppsPerCluster Applications into dir (created when missing); every
// Application's source repoURL is repoURL.
func Write(dir, repoURL string, clusters int) error {
	return WriteWith(dir, repoURL, clusters, Options{})
}

// WriteWith is Write with options.
func WriteWith(dir, repoURL string, clusters int, o Options) error {
	w := writer{dir: dir, o: o}
	for _, c := range []string{"web", "worker", "cache"} {
		w.file("charts/"+c+"/Chart.yaml", "apiVersion: v2\nname: "+c+"\nversion: 1.4.2\nappVersion: \"2.1.0\"\n")
		w.file("charts/"+c+"/values.yaml", chartValues)
		w.file("charts/"+c+"/templates/_helpers.tpl", helpers)
		w.file("charts/"+c+"/templates/deployment.yaml", o.chartDeployment(5))
		w.file("charts/"+c+"/templates/service.yaml", o.chartService())
		w.file("charts/"+c+"/templates/configmap.yaml", chartConfigMap)
	}
	for _, a := range HelmApps {
		w.file("values/common/"+a.Name+".yaml", fmt.Sprintf("image: {repository: ghcr.io/example/%s}\nconfig: {APP: %s}\n", a.Name, a.Name))
		for _, e := range Envs {
			w.file("values/"+e+"/"+a.Name+".yaml", fmt.Sprintf("replicas: %d\nconfig: {ENV: %s}\n", 1+len(e)%3, e))
		}
	}
	for _, k := range KustomizeApps {
		w.file("kustomize/base/"+k+"/kustomization.yaml", "resources: [deployment.yaml, service.yaml]\nlabels:\n- pairs: {app.kubernetes.io/part-of: "+k+"}\nconfigMapGenerator:\n- name: "+k+"-config\n  literals: [APP="+k+"]\n")
		w.file("kustomize/base/"+k+"/deployment.yaml", o.deployment(k, 5))
		w.file("kustomize/base/"+k+"/service.yaml", fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %[1]s}\nspec: {ports: [{port: 80, targetPort: 8080}], selector: {app: %[1]s}}\n", k))
		for _, e := range Envs {
			w.file("kustomize/env/"+e+"/"+k+"/kustomization.yaml", fmt.Sprintf(
				"resources: [../../../base/%[1]s]\nlabels:\n- pairs: {env: %[2]s}\npatches:\n- target: {kind: Deployment, name: %[1]s}\n  patch: |-\n    - op: add\n      path: /spec/template/spec/containers/0/env\n      value: [{name: ENV, value: %[2]s}]\n", k, e))
		}
	}
	for i := 0; i < clusters; i++ {
		if err := writeCluster(&w, repoURL, i, 0); err != nil {
			return err
		}
	}
	return w.err
}

// ChangeRevisionHistory is the fleet-wide one-line change of a WriteWith(ReleaseNames) fleet: every chart's and
// every Kustomize base's Deployment goes from revisionHistoryLimit 5 to limit, so that every app changes.
func ChangeRevisionHistory(dir string, limit int) error {
	w := writer{dir: dir, o: Options{ReleaseNames: true}}
	for _, c := range []string{"web", "worker", "cache"} {
		w.file("charts/"+c+"/templates/deployment.yaml", w.o.chartDeployment(limit))
	}
	for _, k := range KustomizeApps {
		w.file("kustomize/base/"+k+"/deployment.yaml", w.o.deployment(k, limit))
	}
	return w.err
}

// Change edits the cluster-level inputs of exactly changed apps (a multiple of AppsPerCluster, at most all of
// them): the clusters edited are spread evenly over the fleet, and each gets a new Helm value and a new Kustomize
// replica count for all of its apps. generation distinguishes successive changes (1 for the first).
func Change(dir, repoURL string, clusters, changed, generation int) error {
	if changed%AppsPerCluster != 0 || changed > clusters*AppsPerCluster || changed < 0 {
		return fmt.Errorf("fleetgen: %d changed apps is not a multiple of %d within %d clusters", changed, AppsPerCluster, clusters)
	}
	w := writer{dir: dir}
	n := changed / AppsPerCluster
	for j := 0; j < n; j++ {
		if err := writeCluster(&w, repoURL, j*clusters/n, generation); err != nil {
			return err
		}
	}
	return w.err
}

// ChangedClusters returns the indexes of the clusters Change edits.
func ChangedClusters(clusters, changed int) []int {
	n := changed / AppsPerCluster
	out := make([]int, n)
	for j := range out {
		out[j] = j * clusters / n
	}
	return out
}

// ClusterValues is the file of cluster i's values of Helm app name (its last value file), for a change of one
// app only.
func ClusterValues(i int, name string) string {
	return "clusters/" + Cluster(i) + "/values/" + name + ".yaml"
}

func writeCluster(w *writer, repoURL string, i, generation int) error {
	c, env := Cluster(i), Env(i)
	w.file("clusters/"+c+"/secret.yaml", fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: cluster-%[1]s
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: %[2]s, region: r%[3]d}
stringData: {name: %[1]s, server: "https://%[1]s.example.com"}
`, c, env, i%5))
	for _, a := range HelmApps {
		extra := ""
		if generation > 0 {
			extra = fmt.Sprintf("  ROLLOUT: \"g%d\"\n", generation)
		}
		w.file("clusters/"+c+"/values/"+a.Name+".yaml", fmt.Sprintf("config:\n  CLUSTER: %s\n%sresources: {requests: {cpu: %dm}}\n", c, extra, 100+i%4*50))
		release := fmt.Sprintf("      releaseName: %s\n", a.Name)
		if w.o.ReleaseNames {
			release = "" // the app's name, as Argo CD renders it
		}
		w.file("apps/"+c+"/"+a.Name+".yaml", application(c, a.Name, repoURL, "charts/"+a.Chart, fmt.Sprintf(
			"    helm:\n%[4]s      valueFiles:\n      - ../../values/common/%[1]s.yaml\n      - ../../values/%[2]s/%[1]s.yaml\n      - ../../clusters/%[3]s/values/%[1]s.yaml\n", a.Name, env, c, release)))
	}
	for _, k := range KustomizeApps {
		w.file("clusters/"+c+"/kustomize/"+k+"/kustomization.yaml", fmt.Sprintf(
			"resources: [../../../../kustomize/env/%[2]s/%[1]s]\nnamespace: %[1]s\nreplicas: [{name: %[1]s, count: %[4]d}]\nconfigMapGenerator:\n- name: %[1]s-cluster\n  literals: [CLUSTER=%[3]s]\n", k, env, c, 1+(i+generation)%5))
		w.file("apps/"+c+"/"+k+".yaml", application(c, k, repoURL, "clusters/"+c+"/kustomize/"+k, ""))
	}
	return w.err
}

func application(cluster, name, repoURL, path, extra string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s-%[2]s
  namespace: argocd
  labels: {team: %[2]s}
spec:
  project: default
  source:
    repoURL: %[3]s
    targetRevision: main
    path: %[4]s
%[5]s  destination:
    name: %[1]s
    namespace: %[2]s
`, cluster, name, repoURL, path, extra)
}

// Deployment is the Deployment every Kustomize base carries (and internal/preview/previewtest's plain apps).
func Deployment(name, tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
        - {name: app, image: "ghcr.io/example/%[1]s:%[2]s", resources: {requests: {cpu: 100m, memory: 64Mi}}}
`, name, tag)
}

const chartValues = `replicas: 1
image: {repository: ghcr.io/example/app, tag: ""}
config: {}
resources: {requests: {cpu: 100m, memory: 128Mi}}
service: {port: 80}
`

const helpers = `{{- define "app.fullname" -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "app.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
`

// chartDeployment is the charts' Deployment; with ReleaseNames it keeps limit old ReplicaSets.
func (o Options) chartDeployment(limit int) string {
	if !o.ReleaseNames {
		return chartDeployment
	}
	return strings.Replace(chartDeployment, "  replicas: {{ .Values.replicas }}\n",
		fmt.Sprintf("  replicas: {{ .Values.replicas }}\n  revisionHistoryLimit: %d\n", limit), 1)
}

// chartService is the charts' Service; with ReleaseNames named {{ .Release.Name }}-service.
func (o Options) chartService() string {
	if !o.ReleaseNames {
		return chartService
	}
	return strings.Replace(chartService, `name: {{ include "app.fullname" . }}`, `name: {{ .Release.Name }}-service`, 1)
}

// deployment is a Kustomize base's Deployment; with ReleaseNames it keeps limit old ReplicaSets.
func (o Options) deployment(name string, limit int) string {
	d := Deployment(name, "1.0.0")
	if !o.ReleaseNames {
		return d
	}
	return strings.Replace(d, "  replicas: 1\n", fmt.Sprintf("  replicas: 1\n  revisionHistoryLimit: %d\n", limit), 1)
}

const chartDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
  labels: {{- include "app.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {{- include "app.labels" . | nindent 8 }}
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    spec:
      containers:
      - name: app
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
        envFrom: [{configMapRef: {name: {{ include "app.fullname" . }}}}]
        resources: {{- toYaml .Values.resources | nindent 10 }}
`

const chartService = `apiVersion: v1
kind: Service
metadata:
  name: {{ include "app.fullname" . }}
  labels: {{- include "app.labels" . | nindent 4 }}
spec:
  ports: [{port: {{ .Values.service.port }}, targetPort: 8080}]
  selector: {app.kubernetes.io/instance: {{ .Release.Name }}}
`

const chartConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "app.fullname" . }}
  labels: {{- include "app.labels" . | nindent 4 }}
data:
{{- range $k, $v := .Values.config }}
  {{ $k }}: {{ $v | quote }}
{{- end }}
`

type writer struct {
	dir string
	o   Options
	err error
}

func (w *writer) file(rel, content string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	w.err = os.WriteFile(p, []byte(content), 0o644)
}
