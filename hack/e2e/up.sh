#!/usr/bin/env bash
# Starts a real Kubernetes control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok fake nodes) and a
# real Argo CD (redis, repo-server, application-controller, server) inside the network namespace $NS, with a git
# repository of test apps, and writes .cache/e2e/run/env for the end-to-end tests. hack/e2e/README.md explains it.
# Run hack/e2e/build.sh first. hack/e2e/down.sh stops everything (this script calls it first).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source hack/e2e/versions.sh
source hack/e2e/lib.sh

T0=$(date +%s.%N)
bash hack/e2e/down.sh >/dev/null 2>&1 || true
rm -rf "$RUN"
mkdir -p "$RUN" "$LOGS" "$PIDS" "$PKI"

for b in "$KBIN/kube-apiserver" "$ABIN/argocd" "$EBIN/etcd" "$KWOKBIN/kwok" "$TOOLPATH/helm"; do
	[[ -x $b ]] || die "$b is missing: run hack/e2e/build.sh (make e2e-build)"
done
command -v redis-server >/dev/null || die "redis-server is missing: run hack/e2e/build.sh"

# --- network namespace: only lo, so 0.0.0.0 listeners are loopback-only and 127.0.0.2-.5 reach the API server ---
ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
echo "$NS" >"$RUN/netns"

# --- PKI --------------------------------------------------------------------------------------------------------
(
	cd "$PKI"
	ossl() { openssl "$@" 2>/dev/null; }
	ossl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=fleetwave-e2e-ca
	sans="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	sans+=",IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3,IP:127.0.0.4,IP:127.0.0.5,IP:10.96.0.1"
	cert() { # cert <name> <subject> <extensions>
		ossl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
		printf '%s\n' "$3" >"$1.ext"
		ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 365 -extfile "$1.ext"
	}
	cert apiserver /CN=kube-apiserver "subjectAltName=$sans
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
	cert admin "/O=system:masters/CN=fleetwave-e2e-admin" "keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	ossl genrsa -out sa.key 2048
	ossl rsa -in sa.key -pubout -out sa.pub
	# Static tokens: one per fake cluster, all cluster admins of the same API server.
	: >tokens.csv
	for c in "${CLUSTERS[@]}"; do
		read -r name _ <<<"$c"
		echo "$(openssl rand -hex 24),cluster-$name,cluster-$name,\"system:masters\"" >>tokens.csv
	done
)
kubeconfig() { # kubeconfig <file> <namespace>
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$PKI/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$PKI/admin.crt", client-key: "$PKI/admin.key"}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin, namespace: "$2"}
current-context: e2e
EOF
}
kubeconfig "$KUBECONFIG_FILE" default
kubeconfig "$RUN/argocd.kubeconfig" argocd
mark "pki"

# --- etcd, kube-apiserver ---------------------------------------------------------------------------------------
start etcd "$EBIN/etcd" --name e2e --data-dir "$RUN/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster e2e=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
start kube-apiserver "$KBIN/kube-apiserver" \
	--etcd-servers http://127.0.0.1:2379 \
	--bind-address 0.0.0.0 --secure-port 6443 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
	--cert-dir "$PKI" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
	--client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
	--authorization-mode RBAC --allow-privileged \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
	--service-cluster-ip-range 10.96.0.0/16 --profiling=false --v 1
wait_for "etcd" 30 nsx curl -sf http://127.0.0.1:2379/health
wait_for "kube-apiserver /readyz" 60 nsx curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" https://127.0.0.1:6443/readyz
mark "kube-apiserver ready"

# --- controller-manager, scheduler, kwok, redis, repo-server (independent of each other) -----------------------
kc=$KUBECONFIG_FILE
start kube-controller-manager "$KBIN/kube-controller-manager" --kubeconfig "$kc" \
	--authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" --leader-elect=false \
	--bind-address 127.0.0.1 --secure-port 10257 --cert-dir "$RUN/kcm" \
	--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
	--use-service-account-credentials=false --profiling=false --v 1
start kube-scheduler "$KBIN/kube-scheduler" --kubeconfig "$kc" \
	--authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" --leader-elect=false \
	--bind-address 127.0.0.1 --secure-port 10259 --cert-dir "$RUN/scheduler" --profiling=false --v 1
start kwok "$KWOKBIN/kwok" --kubeconfig "$kc" --config "$ROOT/hack/e2e/kwok/stages.yaml" \
	--manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
	--node-lease-duration-seconds 40 --cidr 10.244.0.1/16 --node-ip 10.0.0.1 --server-address 127.0.0.1:10247
start redis redis-server --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir "$RUN"

mkdir -p "$RUN/argocd"/{tls,ssh,gnupg,static,home,tmp}
chmod 700 "$RUN/argocd/gnupg"
# Each repo-server answers git's credential prompts on a socket of its own (util/askpass/common.go: /tmp/… by
# default): with two instances on one machine, a shared path sends one's prompts to the other ("unknown nonce").
ARGO_ENV=(KUBECONFIG="$RUN/argocd.kubeconfig" ARGOCD_FAKE_IN_CLUSTER=true ARGOCD_GPG_ENABLED=false
	ARGOCD_ASK_PASS_SOCK="$RUN/argocd/askpass.sock"
	ARGOCD_TLS_DATA_PATH="$RUN/argocd/tls" ARGOCD_SSH_DATA_PATH="$RUN/argocd/ssh" ARGOCD_GNUPGHOME="$RUN/argocd/gnupg"
	HOME="$RUN/argocd/home" TMPDIR="$RUN/argocd/tmp" PATH="$TOOLPATH:$ABIN:$PATH")
# $ABIN on PATH: git's credential prompt is answered by `argocd` itself (GIT_ASKPASS=argocd, util/git/creds.go), as in
# Argo CD's image, so a repository with a username and password can be fetched.
start argocd-repo-server env "${ARGO_ENV[@]}" "$ABIN/argocd-repo-server" \
	--address 127.0.0.1 --port 8081 --metrics-address 127.0.0.1 --metrics-port 8084 --redis 127.0.0.1:6379 --loglevel info

# --- cluster objects: Argo CD's CRDs and settings, fake nodes ----------------------------------------------------
CRDS=$(cd hack/e2e/modules/argocd && GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)/manifests/crds
k apply --server-side -f "$CRDS/application-crd.yaml" -f "$CRDS/appproject-crd.yaml" -f "$CRDS/applicationset-crd.yaml" >/dev/null
k create namespace argocd >/dev/null

ADMIN_PASSWORD=fleetwave-e2e-admin
bcrypt=$("$ABIN/argocd" account bcrypt --password "$ADMIN_PASSWORD")
CA_B64=$(base64 -w0 "$PKI/ca.crt")
{
	cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data:
  admin.enabled: "true"
  accounts.fleetwave: apiKey
  # System-wide ignoreDifferences the live-diff test (test/e2e/livediff_test.go) relies on: a ConfigMap key and a
  # label nothing else uses.
  resource.customizations.ignoreDifferences.ConfigMap: |
    jsonPointers:
    - /data/e2e-ignored
  resource.customizations.ignoreDifferences.all: |
    jsonPointers:
    - /metadata/labels/e2e.fleetwave.io~1ignored
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data:
  policy.default: ""
  policy.csv: |
    g, fleetwave, role:admin
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cmd-params-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-tls-certs-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-ssh-known-hosts-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-gpg-keys-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
stringData:
  admin.password: '$bcrypt'
  admin.passwordMtime: '$(date -u +%Y-%m-%dT%H:%M:%SZ)'
  server.secretkey: '$(openssl rand -base64 32)'
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
EOF
	i=0
	for c in "${CLUSTERS[@]}"; do
		read -r name ip env region <<<"$c"
		i=$((i + 1))
		tok=$(sed -n "${i}p" "$PKI/tokens.csv" | cut -d, -f1)
		cat <<EOF
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-$name
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: $env, region: $region}
stringData:
  name: $name
  server: https://$ip:6443
  config: '{"bearerToken":"$tok","tlsClientConfig":{"caData":"$CA_B64"}}'
EOF
	done
	for i in $(seq 0 $((NODES - 1))); do
		cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
  nodeInfo: {architecture: amd64, kubeletVersion: kwok-$KWOK_VERSION, operatingSystem: linux}
EOF
	done
} >"$RUN/argocd-settings.yaml"
k wait --for condition=established --timeout 60s crd/applications.argoproj.io crd/appprojects.argoproj.io >/dev/null
k apply -f "$RUN/argocd-settings.yaml" >/dev/null
mark "CRDs, settings, clusters, nodes applied"

# --- Argo CD controller and server ---------------------------------------------------------------------------------
start argocd-application-controller env "${ARGO_ENV[@]}" "$ABIN/argocd-application-controller" \
	--redis 127.0.0.1:6379 --repo-server 127.0.0.1:8081 --app-resync 30 --loglevel info
start argocd-server env "${ARGO_ENV[@]}" "$ABIN/argocd-server" \
	--insecure --address 127.0.0.1 --port 8080 --metrics-address 127.0.0.1 --metrics-port 8083 \
	--redis 127.0.0.1:6379 --repo-server 127.0.0.1:8081 --staticassets "$RUN/argocd/static" --loglevel info

# --- git repository with two revisions of the test apps (deterministic commits: same SHAs every run) --------------
bash hack/e2e/gitrepo.sh "$RUN/repo.git" >"$LOGS/gitrepo.log" 2>&1 || {
	cat "$LOGS/gitrepo.log"
	die "creating the git repository failed"
}
OLD_REV=$(git --git-dir "$RUN/repo.git" rev-parse HEAD~1)
NEW_REV=$(git --git-dir "$RUN/repo.git" rev-parse HEAD)
REPO_URL=file://$RUN/repo.git
apps() {
	# name, source path, destination, automated sync, suite label. guestbook-local (not in the contract suite) targets
	# the in-cluster destination so that the controller warms its cache and GET /api/v1/clusters shows its version.
	for a in "guestbook guestbook https://127.0.0.2:6443 false contract" \
		"guestbook-auto guestbook-auto https://127.0.0.3:6443 true contract" \
		"guestbook-slow guestbook-slow https://127.0.0.2:6443 false contract" \
		"guestbook-local guestbook https://kubernetes.default.svc false env"; do
		read -r name path server auto suite <<<"$a"
		cat <<EOF
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: $name
  namespace: argocd
  labels: {suite: $suite}
spec:
  project: default
  source: {repoURL: "$REPO_URL", path: apps/$path, targetRevision: HEAD}
  destination: {server: "$server", namespace: e2e-$name}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
EOF
		if [[ $auto == true ]]; then echo "    automated: {prune: true}"; fi
	done
}
apps >"$RUN/apps.yaml"
k apply -f "$RUN/apps.yaml" >/dev/null

wait_for "argocd-server API" 90 nsx curl -sf http://127.0.0.1:8080/api/version
mark "Argo CD API ready"

# --- token for the local account 'fleetwave' ---------------------------------------------------------------------
admin_token=$(nsx curl -sf -X POST -H 'Content-Type: application/json' \
	-d "{\"username\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}" http://127.0.0.1:8080/api/v1/session | jq -r .token)
[[ -n $admin_token && $admin_token != null ]] || die "admin login failed"
TOKEN=
for _ in $(seq 1 20); do
	TOKEN=$(nsx curl -sf -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $admin_token" \
		-d '{"name":"fleetwave","id":"fleetwave-e2e"}' http://127.0.0.1:8080/api/v1/account/fleetwave/token | jq -r .token) && break
	sleep 0.5 # the account appears once the server's settings informer saw argocd-cm
done
[[ -n $TOKEN && $TOKEN != null ]] || die "creating the fleetwave account token failed"
mark "fleetwave token"

# --- a second Argo CD instance, "b": its own namespace, installation ID, redis, repo-server, controller and server
# on the same kube-apiserver, as teams run one Argo CD per region or business unit (test/e2e/instances_test.go).
# Same release as the first: a second release's binaries would double the cold build (docs/ci.md).
B_NS=argocd-b
kubeconfig "$RUN/argocd-b.kubeconfig" "$B_NS"
mkdir -p "$RUN/argocd-b"/{tls,ssh,gnupg,static,home,tmp}
chmod 700 "$RUN/argocd-b/gnupg"
B_ENV=(KUBECONFIG="$RUN/argocd-b.kubeconfig" ARGOCD_FAKE_IN_CLUSTER=true ARGOCD_GPG_ENABLED=false
	ARGOCD_ASK_PASS_SOCK="$RUN/argocd-b/askpass.sock"
	ARGOCD_TLS_DATA_PATH="$RUN/argocd-b/tls" ARGOCD_SSH_DATA_PATH="$RUN/argocd-b/ssh" ARGOCD_GNUPGHOME="$RUN/argocd-b/gnupg"
	HOME="$RUN/argocd-b/home" TMPDIR="$RUN/argocd-b/tmp" PATH="$TOOLPATH:$ABIN:$PATH")
start redis-b redis-server --bind 127.0.0.1 --port 6380 --save "" --appendonly no --dir "$RUN/argocd-b"
start argocd-b-repo-server env "${B_ENV[@]}" "$ABIN/argocd-repo-server" \
	--address 127.0.0.1 --port 8091 --metrics-address 127.0.0.1 --metrics-port 8094 --redis 127.0.0.1:6380 --loglevel info
k create namespace "$B_NS" >/dev/null
# The first instance's settings, in the second namespace, with an installation ID of its own: Argo CD stamps it on
# every resource it applies (argocd.argoproj.io/installation-id), so the two never fight over an object.
awk -v ns="$B_NS" '
	/^---$/ { if (doc != "" && doc !~ /\nkind: Node\n/) printf "%s", doc; doc = $0 "\n"; next }
	{ line = $0
	  sub(/namespace: argocd}/, "namespace: " ns "}", line)
	  sub(/namespace: argocd,/, "namespace: " ns ",", line)
	  if (line == "  namespace: argocd") line = "  namespace: " ns
	  doc = doc line "\n"
	  if (line == "  admin.enabled: \"true\"") doc = doc "  installationID: e2e-b\n" }
	END { if (doc !~ /\nkind: Node\n/) printf "%s", doc }' "$RUN/argocd-settings.yaml" >"$RUN/argocd-b-settings.yaml"
k apply -f "$RUN/argocd-b-settings.yaml" >/dev/null
start argocd-b-application-controller env "${B_ENV[@]}" "$ABIN/argocd-application-controller" \
	--redis 127.0.0.1:6380 --repo-server 127.0.0.1:8091 --app-resync 30 --metrics-port 8092 --loglevel info
start argocd-b-server env "${B_ENV[@]}" "$ABIN/argocd-server" \
	--insecure --address 127.0.0.1 --port 8090 --metrics-address 127.0.0.1 --metrics-port 8093 \
	--redis 127.0.0.1:6380 --repo-server 127.0.0.1:8091 --staticassets "$RUN/argocd-b/static" --loglevel info
wait_for "the second Argo CD's API" 90 nsx curl -sf http://127.0.0.1:8090/api/version
b_admin=$(nsx curl -sf -X POST -H 'Content-Type: application/json' \
	-d "{\"username\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}" http://127.0.0.1:8090/api/v1/session | jq -r .token)
[[ -n $b_admin && $b_admin != null ]] || die "admin login on the second Argo CD failed"
B_TOKEN=
for _ in $(seq 1 20); do
	B_TOKEN=$(nsx curl -sf -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $b_admin" \
		-d '{"name":"fleetwave","id":"fleetwave-e2e-b"}' http://127.0.0.1:8090/api/v1/account/fleetwave/token | jq -r .token) && break
	sleep 0.5
done
[[ -n $B_TOKEN && $B_TOKEN != null ]] || die "creating the fleetwave token on the second Argo CD failed"
mark "second Argo CD instance ready"

cat >"$ENV_FILE" <<EOF
FLEETWAVE_E2E_ARGOCD_URL=http://127.0.0.1:8080
FLEETWAVE_E2E_ARGOCD_TOKEN=$TOKEN
FLEETWAVE_E2E_ARGOCD_ADMIN_PASSWORD=$ADMIN_PASSWORD
FLEETWAVE_E2E_REPO=$RUN/repo.git
FLEETWAVE_E2E_REPO_URL=$REPO_URL
FLEETWAVE_E2E_OLD_REV=$OLD_REV
FLEETWAVE_E2E_NEW_REV=$NEW_REV
FLEETWAVE_E2E_NETNS=$NS
FLEETWAVE_E2E_ARGOCD_TLS_DATA_PATH=$RUN/argocd/tls
FLEETWAVE_E2E_ARGOCD_B_URL=http://127.0.0.1:8090
FLEETWAVE_E2E_ARGOCD_B_TOKEN=$B_TOKEN
FLEETWAVE_E2E_ARGOCD_B_NAMESPACE=$B_NS
FLEETWAVE_E2E_ARGOCD_B_INSTALLATION_ID=e2e-b
KUBECONFIG=$KUBECONFIG_FILE
EOF

# --- first sync: guestbook to the new revision, through the API with the fleetwave token ------------------------
nsx curl -sf -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
	-d "{\"revision\":\"$NEW_REV\",\"prune\":true}" http://127.0.0.1:8080/api/v1/applications/guestbook/sync >/dev/null ||
	die "first sync request failed"
synced() {
	[[ $(k -n argocd get application guestbook -o jsonpath='{.status.operationState.phase}/{.status.operationState.syncResult.revision}') == "Succeeded/$NEW_REV" ]]
}
wait_for "first sync of guestbook" 120 synced
mark "first sync succeeded"

{
	printf '%-32s %8s\n' process RSS_MiB
	for f in "$PIDS"/*.pid; do
		n=$(basename "$f" .pid)
		rss=$(ps -o rss= -p "$(cat "$f")" 2>/dev/null || echo 0)
		printf '%-32s %8d\n' "$n" $((rss / 1024))
	done
} | tee "$RUN/rss.txt"
echo "env: $ENV_FILE"
echo "timings: $(tr '\n' ';' <"$RUN/timings.txt")"
