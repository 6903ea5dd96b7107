package risk_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

func obj(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// Real-shaped manifests, as a chart renders them (the corpus's charts' Deployment and StatefulSet shapes).
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app.kubernetes.io/instance: web, helm.sh/chart: web-1.2.0}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: web}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.2.0
        ports: [{containerPort: 8080}]
        resources: {requests: {cpu: 100m, memory: 128Mi}}
      - name: sidecar
        image: envoyproxy/envoy:v1.30.0
`

const statefulset = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: postgres
        image: postgres:16.2
        resources: {requests: {cpu: 500m}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
`

const service = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: ClusterIP
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
`

const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: web-reader}
rules:
- apiGroups: [""]
  resources: [configmaps, pods]
  verbs: [get, list, watch]
`

const binding = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web-reader, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: web-reader}
subjects:
- {kind: ServiceAccount, name: web, namespace: shop}
`

// maskedSecret is a Secret as internal/diff MaskSecretPair leaves it: values are markers.
const maskedSecret = `apiVersion: v1
kind: Secret
metadata: {name: web-creds, namespace: shop}
type: Opaque
data: {password: <unchanged>, username: <unchanged>}
`

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.acme.io}
spec:
  group: acme.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
`

const namespace = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
`

const pvc = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
`

const configmap = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
`

const hookJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: shop
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: ghcr.io/acme/migrate:1.0.0}]
`

const webhook = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: acme-policy}
webhooks:
- name: policy.acme.io
  failurePolicy: Ignore
  clientConfig: {service: {name: policy, namespace: acme}}
`

const netpol = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
`

func TestClassify(t *testing.T) {
	r := strings.NewReplacer
	tests := []struct {
		name       string
		base, head string
		want       string // "class: detail" lines
	}{
		{"unchanged", deployment, deployment, ""},
		// Metadata only, both directions.
		{"label added", deployment, r("helm.sh/chart: web-1.2.0", "helm.sh/chart: web-1.2.0, team: shop").Replace(deployment),
			"metadata: team"},
		{"label removed", r("helm.sh/chart: web-1.2.0", "helm.sh/chart: web-1.2.0, team: shop").Replace(deployment), deployment,
			"metadata: team"},
		{"chart label bumped", deployment, r("web-1.2.0", "web-1.3.0").Replace(deployment), "metadata: helm.sh/chart"},
		// A pod template label restarts pods: not metadata only.
		{"pod template label", deployment, r("labels: {app.kubernetes.io/name: web}", "labels: {app.kubernetes.io/name: web, v: \"2\"}").Replace(deployment),
			"other: Deployment web: spec.template.metadata.labels.v"},
		// Images, both directions, and a container added/removed.
		{"image bumped", deployment, r("api:1.2.0", "api:1.3.0").Replace(deployment),
			"image: api: ghcr.io/acme/api:1.2.0 → ghcr.io/acme/api:1.3.0"},
		{"image rolled back", r("api:1.2.0", "api:1.3.0").Replace(deployment), deployment,
			"image: api: ghcr.io/acme/api:1.3.0 → ghcr.io/acme/api:1.2.0"},
		{"container removed", deployment, r("      - name: sidecar\n        image: envoyproxy/envoy:v1.30.0\n", "").Replace(deployment),
			"image: -sidecar: envoyproxy/envoy:v1.30.0"},
		{"container added", r("      - name: sidecar\n        image: envoyproxy/envoy:v1.30.0\n", "").Replace(deployment), deployment,
			"image: +sidecar: envoyproxy/envoy:v1.30.0"},
		{"image and env", deployment, r("api:1.2.0\n", "api:1.3.0\n        env: [{name: A, value: b}]\n").Replace(deployment),
			"image: api: ghcr.io/acme/api:1.2.0 → ghcr.io/acme/api:1.3.0\nother: Deployment web: spec.template.spec.containers[api].env"},
		// Replicas or resources only, both directions; with metadata still scale.
		{"replicas up", deployment, r("replicas: 2", "replicas: 5").Replace(deployment), "scale: Deployment web: spec.replicas"},
		{"replicas down", r("replicas: 2", "replicas: 5").Replace(deployment), deployment, "scale: Deployment web: spec.replicas"},
		{"resources and chart label", deployment, r("cpu: 100m", "cpu: 250m", "web-1.2.0", "web-1.2.1").Replace(deployment),
			"scale: Deployment web: spec.template.spec.containers[api].resources.requests.cpu"},
		{"selector changed", deployment, r("matchLabels: {app.kubernetes.io/name: web}", "matchLabels: {app.kubernetes.io/name: web2}").Replace(deployment),
			"immutable-field: Deployment web: spec.selector\nother: Deployment web: spec.selector.matchLabels.app.kubernetes.io/name"},
		// StatefulSet and volume claim templates.
		{"statefulset image", statefulset, r("16.2", "16.3").Replace(statefulset),
			"statefulset: db: spec.template.spec.containers[postgres].image\nimage: postgres: postgres:16.2 → postgres:16.3"},
		{"statefulset env", statefulset, r("resources: {requests: {cpu: 500m}}", "resources: {requests: {cpu: 500m}}\n        env: [{name: X, value: y}]").Replace(statefulset),
			"statefulset: db: spec.template.spec.containers[postgres].env"},
		{"statefulset replicas", statefulset, r("replicas: 3", "replicas: 1").Replace(statefulset), "scale: StatefulSet db: spec.replicas"},
		{"volume claim grown", statefulset, r("storage: 10Gi", "storage: 20Gi").Replace(statefulset), "volume-claim-templates: db"},
		{"volume claim shrunk", r("storage: 10Gi", "storage: 20Gi").Replace(statefulset), statefulset, "volume-claim-templates: db"},
		{"statefulset serviceName", statefulset, r("serviceName: db", "serviceName: db-headless").Replace(statefulset),
			"statefulset: db: spec.serviceName\nimmutable-field: StatefulSet db: spec.serviceName"},
		{"statefulset removed", statefulset, "", "statefulset: removed db"},
		{"statefulset added", "", statefulset, "added: StatefulSet db"},
		// Service type and ports.
		{"service to LoadBalancer", service, r("ClusterIP", "LoadBalancer").Replace(service), "service: web: type ClusterIP → LoadBalancer"},
		{"service back to ClusterIP", r("ClusterIP", "LoadBalancer").Replace(service), service, "service: web: type LoadBalancer → ClusterIP"},
		{"service port added", service, service + "  - {name: https, port: 443, targetPort: 8443, protocol: TCP}\n",
			"service: web: ports 80/TCP→8080 → 80/TCP→8080,443/TCP→8443"},
		{"service port removed", service + "  - {name: https, port: 443, targetPort: 8443, protocol: TCP}\n", service,
			"service: web: ports 80/TCP→8080,443/TCP→8443 → 80/TCP→8080"},
		{"service selector", service, r("selector: {app: web}", "selector: {app: web2}").Replace(service), "other: Service web: spec.selector.app"},
		{"service removed", service, "", "service: removed web"},
		// RBAC: widened is classed, narrowed is not.
		{"rbac verb added", role, r("[get, list, watch]", "[get, list, watch, delete]").Replace(role),
			"rbac-widened: ClusterRole web-reader grants configmaps,pods get,list,watch,delete"},
		{"rbac verb removed", r("[get, list, watch]", "[get, list, watch, delete]").Replace(role), role,
			"other: ClusterRole web-reader: rules[0].verbs"},
		{"rbac verbs star", role, r("[get, list, watch]", "['*']").Replace(role),
			"rbac-widened: ClusterRole web-reader grants configmaps,pods * (verbs *)"},
		{"rbac secrets rule added", role, role + "- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n",
			"rbac-widened: ClusterRole web-reader grants secrets get"},
		{"rbac secrets rule removed", role + "- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n", role,
			"other: ClusterRole web-reader: rules"},
		{"rbac resourceNames dropped", r("verbs: [get, list, watch]", "verbs: [get]\n  resourceNames: [web]").Replace(role), r("verbs: [get, list, watch]", "verbs: [get]").Replace(role),
			"rbac-widened: ClusterRole web-reader grants configmaps,pods get"},
		{"role added", "", role, "rbac-widened: new ClusterRole web-reader grants configmaps,pods get,list,watch"},
		{"role removed", role, "", "removed: ClusterRole web-reader"},
		{"binding subject added", binding, binding + "- {kind: Group, name: contractors}\n",
			"rbac-widened: RoleBinding web-reader binds Group contractors"},
		{"binding subject removed", binding + "- {kind: Group, name: contractors}\n", binding, "other: RoleBinding web-reader: subjects[contractors]"},
		{"binding to admin", binding, r("name: web-reader}", "name: cluster-admin}").Replace(binding),
			"rbac-widened: RoleBinding web-reader to ClusterRole cluster-admin"},
		{"binding added", "", binding, "rbac-widened: new RoleBinding web-reader binds ServiceAccount shop/web to ClusterRole web-reader"},
		// Secret keys: names only.
		{"secret value changed", maskedSecret, r("password: <unchanged>", "password: <changed>").Replace(maskedSecret), "secret-keys: key password"},
		{"secret key added", maskedSecret, r("username: <unchanged>", "username: <unchanged>, token: <added>").Replace(maskedSecret), "secret-keys: key token"},
		{"secret key removed", r("username: <unchanged>", "username: <unchanged>, token: <removed>").Replace(maskedSecret), maskedSecret, "secret-keys: key token"},
		{"secret added", "", maskedSecret, "secret-keys: keys password, username added"},
		{"secret removed", maskedSecret, "", "secret-keys: keys password, username removed\nremoved: Secret web-creds"},
		// CRDs.
		{"crd version added", crd, crd + "  - name: v2\n    served: true\n    storage: false\n    schema: {openAPIV3Schema: {type: object}}\n",
			"crd: widgets.acme.io: spec.versions[v2]"},
		{"crd version removed", crd + "  - name: v2\n    served: true\n    storage: false\n    schema: {openAPIV3Schema: {type: object}}\n", crd,
			"crd: widgets.acme.io: spec.versions[v2]"},
		{"crd added", "", crd, "crd: added widgets.acme.io"},
		{"crd removed", crd, "", "crd-removed: widgets.acme.io"},
		{"crd label only", crd, r("name: widgets.acme.io}", "name: widgets.acme.io, labels: {team: a}}").Replace(crd), "metadata: team"},
		// Deletions that take data with them; Prune=false keeps them.
		{"namespace deleted", namespace, "", "namespace-deleted: shop"},
		{"namespace added", "", namespace, "added: Namespace shop"},
		{"pvc deleted", pvc, "", "pvc-deleted: uploads"},
		{"pvc added", "", pvc, "added: PersistentVolumeClaim uploads"},
		{"pvc removed with Prune=false", r("name: uploads,", "name: uploads, annotations: {argocd.argoproj.io/sync-options: \"Prune=false\"},").Replace(pvc), "",
			"removed: PersistentVolumeClaim uploads (Prune=false: Argo CD leaves it in the cluster)"},
		{"pvc grown", pvc, r("5Gi", "10Gi").Replace(pvc), "other: PersistentVolumeClaim uploads: spec.resources.requests.storage"},
		// Others users look for.
		{"configmap changed", configmap, r("info", "debug").Replace(configmap), "other: ConfigMap web-config: data.LOG_LEVEL"},
		{"configmap removed", configmap, "", "removed: ConfigMap web-config"},
		{"configmap added", "", configmap, "added: ConfigMap web-config"},
		{"job template", hookJob, r("1.0.0", "1.1.0").Replace(hookJob),
			"immutable-field: Job migrate: spec.template\nimage: migrate: ghcr.io/acme/migrate:1.0.0 → ghcr.io/acme/migrate:1.1.0"},
		{"webhook fails closed", webhook, r("Ignore", "Fail").Replace(webhook), "admission-webhook: acme-policy: webhooks[policy.acme.io].failurePolicy"},
		{"webhook added", "", webhook, "admission-webhook: added acme-policy"},
		{"webhook removed", webhook, "", "admission-webhook: removed acme-policy"},
		{"netpol egress", netpol, r("[Ingress]", "[Ingress, Egress]").Replace(netpol), "network-policy: web: spec.policyTypes"},
		{"netpol added", "", netpol, "network-policy: added web"},
		{"netpol removed", netpol, "", "network-policy: removed web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for _, f := range risk.Classify(obj(t, tt.base), obj(t, tt.head)) {
				lines = append(lines, string(f.Class)+": "+f.Detail)
			}
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("Classify:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A Secret's values never reach a finding: the classifier is given masked objects, and even unmasked ones it
// names keys only.
func TestClassifyNeverShowsSecretValues(t *testing.T) {
	base := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: hunter2-old}\n")
	head := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: hunter2-new}\n")
	for _, f := range risk.Classify(base, head) {
		if strings.Contains(f.Detail, "hunter2") {
			t.Fatalf("finding %+v shows a Secret value", f)
		}
	}
}

func TestClassesAreRankedAndTitled(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range risk.Classes {
		if c.Rank() != i || !risk.Known(string(c)) || c.Title() == string(c) || seen[c.Title()] {
			t.Errorf("class %q: rank %d, title %q", c, c.Rank(), c.Title())
		}
		seen[c.Title()] = true
	}
	if risk.Class("nope").Rank() != len(risk.Classes) || risk.Known("nope") {
		t.Error("an unknown class must rank last and not be known")
	}
}
