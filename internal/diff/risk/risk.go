// Package risk classifies the change of one rendered resource (base → head) by what it does to a cluster: a CRD
// changed or removed, a Namespace or PVC deleted, a StatefulSet or its volume claim templates changed, a Service's
// type or ports changed, RBAC widened, Secret keys changed, images changed, replicas or resources only, metadata
// only, and the rest. A reviewer and the release policy read the classes instead of every hunk.
//
// The classifier reads objects whose Secret values are already masked (internal/diff MaskSecretPair): it names
// Secret keys, never values, by construction. It is pure and allocates little: it runs on every changed resource
// of every app of a preview.
package risk

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Class is one kind of risk a change carries. Its string is stable: the release policy and the JSON name it.
type Class string

// Classes, most serious first (Classes lists them in this order).
const (
	CRDRemoved           Class = "crd-removed"            // a CustomResourceDefinition deleted: every object of its kinds goes with it
	CRD                  Class = "crd"                    // a CustomResourceDefinition added or changed
	NamespaceDeleted     Class = "namespace-deleted"      // a Namespace deleted, and everything in it
	PVCDeleted           Class = "pvc-deleted"            // a PersistentVolumeClaim deleted (its volume may be deleted too)
	VolumeClaimTemplates Class = "volume-claim-templates" // a StatefulSet's volumeClaimTemplates changed (immutable)
	StatefulSet          Class = "statefulset"            // a StatefulSet changed or removed
	RBACWidened          Class = "rbac-widened"           // a Role/ClusterRole grants more, a binding binds more
	AdmissionWebhook     Class = "admission-webhook"      // a Validating/MutatingWebhookConfiguration added, changed or removed
	ImmutableField       Class = "immutable-field"        // a field the API server refuses to change (selector, Job template)
	Service              Class = "service"                // a Service's type or ports changed, or a Service removed
	NetworkPolicy        Class = "network-policy"         // a NetworkPolicy added, changed or removed
	SecretKeys           Class = "secret-keys"            // Secret keys added, changed or removed (names only)
	Removed              Class = "removed"                // another resource removed (Argo CD prunes it)
	Image                Class = "image"                  // a container image changed
	Hook                 Class = "hook"                   // sync hooks that will run (set per app by the report)
	Added                Class = "added"                  // a new resource
	Other                Class = "other"                  // a change no other class describes
	Scale                Class = "scale"                  // replicas or container resources only
	Metadata             Class = "metadata"               // labels or annotations only
)

// Classes are every class, most serious first.
var Classes = []Class{CRDRemoved, CRD, NamespaceDeleted, PVCDeleted, VolumeClaimTemplates, StatefulSet, RBACWidened,
	AdmissionWebhook, ImmutableField, Service, NetworkPolicy, SecretKeys, Removed, Image, Hook, Added, Other, Scale, Metadata}

var titles = map[Class]string{
	CRDRemoved: "CRD removed", CRD: "CRD changed", NamespaceDeleted: "Namespace deleted", PVCDeleted: "PVC deleted",
	VolumeClaimTemplates: "volumeClaimTemplates changed", StatefulSet: "StatefulSet changed", RBACWidened: "RBAC widened",
	AdmissionWebhook: "admission webhook changed", ImmutableField: "immutable field changed", Service: "Service type or ports changed",
	NetworkPolicy: "NetworkPolicy changed", SecretKeys: "Secret keys changed", Removed: "resources removed", Image: "images changed",
	Hook: "hooks will run", Added: "resources added", Other: "other changes", Scale: "replicas or resources only",
	Metadata: "metadata only",
}

// Title is the class for people ("images changed").
func (c Class) Title() string {
	if t, ok := titles[c]; ok {
		return t
	}
	return string(c)
}

// Rank orders classes, most serious first (0); an unknown class ranks last.
func (c Class) Rank() int {
	if i := slices.Index(Classes, c); i >= 0 {
		return i
	}
	return len(Classes)
}

// Known reports whether c is one of Classes.
func Known(c string) bool { return slices.Contains(Classes, Class(c)) }

// Finding is one class a resource's change carries, with a short detail for people ("api: nginx:1.25 → nginx:1.27",
// "keys token, url", "verbs *"). The detail never holds a Secret value.
type Finding struct {
	Class  Class  `json:"class"`
	Detail string `json:"detail,omitempty"`
}

// Sort orders findings most serious first, then by detail.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if d := a.Class.Rank() - b.Class.Rank(); d != 0 {
			return d
		}
		return strings.Compare(a.Detail, b.Detail)
	})
}

// Classify returns the classes of one resource's change; base is nil for an added resource, head for a removed
// one. Both must have their Secret values masked (internal/diff MaskSecretPair). Equal objects yield nothing.
func Classify(base, head *unstructured.Unstructured) []Finding {
	var out []Finding
	switch {
	case base == nil && head == nil:
		return nil
	case base == nil:
		out = added(head)
	case head == nil:
		out = removed(base)
	default:
		out = modified(base, head)
	}
	Sort(out)
	return out
}

func gk(o *unstructured.Unstructured) (string, string) {
	gvk := o.GroupVersionKind()
	return gvk.Group, gvk.Kind
}

const rbacGroup = "rbac.authorization.k8s.io"

func isWebhookConfig(group, kind string) bool {
	return group == "admissionregistration.k8s.io" && (kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration" ||
		kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding")
}

func added(h *unstructured.Unstructured) []Finding {
	group, kind := gk(h)
	switch {
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return []Finding{{CRD, "added " + h.GetName()}}
	case group == rbacGroup && (kind == "Role" || kind == "ClusterRole"):
		return []Finding{{RBACWidened, strings.TrimSpace("new " + kind + " " + h.GetName() + " " + ruleNote(rules(h)))}}
	case group == rbacGroup && (kind == "RoleBinding" || kind == "ClusterRoleBinding"):
		return []Finding{{RBACWidened, "new " + kind + " " + h.GetName() + bindingNote(subjects(h), roleRef(h))}}
	case group == "" && kind == "Secret":
		return []Finding{{SecretKeys, keysNote("added", secretKeys(h))}}
	case isWebhookConfig(group, kind):
		return []Finding{{AdmissionWebhook, "added " + h.GetName()}}
	case group == "networking.k8s.io" && kind == "NetworkPolicy":
		return []Finding{{NetworkPolicy, "added " + h.GetName()}}
	}
	return []Finding{{Added, kind + " " + h.GetName()}}
}

// pruneDisabled reports whether Argo CD leaves the object in the cluster when it leaves the render: the sync
// option Prune=false (gitops-engine pkg/sync/common SyncOptionDisablePrune) or Helm's resource-policy keep.
func pruneDisabled(o *unstructured.Unstructured) bool {
	a := o.GetAnnotations()
	for _, opt := range strings.Split(a["argocd.argoproj.io/sync-options"], ",") {
		if strings.TrimSpace(opt) == "Prune=false" {
			return true
		}
	}
	return a["helm.sh/resource-policy"] == "keep"
}

func removed(b *unstructured.Unstructured) []Finding {
	group, kind := gk(b)
	name := b.GetName()
	if pruneDisabled(b) {
		return []Finding{{Removed, kind + " " + name + " (Prune=false: Argo CD leaves it in the cluster)"}}
	}
	switch {
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return []Finding{{CRDRemoved, name}}
	case group == "" && kind == "Namespace":
		return []Finding{{NamespaceDeleted, name}}
	case group == "" && kind == "PersistentVolumeClaim":
		return []Finding{{PVCDeleted, name}}
	case group == "apps" && kind == "StatefulSet":
		return []Finding{{StatefulSet, "removed " + name}}
	case group == "" && kind == "Service":
		return []Finding{{Service, "removed " + name}}
	case isWebhookConfig(group, kind):
		return []Finding{{AdmissionWebhook, "removed " + name}}
	case group == "networking.k8s.io" && kind == "NetworkPolicy":
		return []Finding{{NetworkPolicy, "removed " + name}}
	case group == "" && kind == "Secret":
		return []Finding{{SecretKeys, keysNote("removed", secretKeys(b))}, {Removed, kind + " " + name}}
	}
	return []Finding{{Removed, kind + " " + name}}
}

// path is a field path; list elements are "[name]" when the list's elements all have a distinct name, else "[i]".
type path []string

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (p path) has(prefix ...string) bool {
	if len(p) < len(prefix) {
		return false
	}
	for i, s := range prefix {
		if p[i] != s {
			return false
		}
	}
	return true
}

// containerIndex is the index of the element after a containers/initContainers/ephemeralContainers list, or -1.
func (p path) containerIndex() int {
	for i := len(p) - 2; i >= 0; i-- {
		switch p[i] {
		case "containers", "initContainers", "ephemeralContainers":
			if strings.HasPrefix(p[i+1], "[") {
				return i + 1
			}
		}
	}
	return -1
}

// change is one field that differs; From or To is nil where the field is absent on that side.
type change struct {
	path     path
	from, to any
}

// changes lists the fields that differ between a and b (leaf values, or whole subtrees added or removed).
func changes(a, b any, p path, out *[]change, depth int) {
	if depth > 64 {
		*out = append(*out, change{slices.Clone(p), a, b})
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				*out = append(*out, change{append(slices.Clone(p), k), nil, y})
			case !inB:
				*out = append(*out, change{append(slices.Clone(p), k), x, nil})
			default:
				changes(x, y, append(p, k), out, depth+1)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		an, bn := names(av), names(bv)
		if an != nil && bn != nil {
			for i, n := range an {
				j := slices.Index(bn, n)
				if j < 0 {
					*out = append(*out, change{append(slices.Clone(p), "["+n+"]"), av[i], nil})
					continue
				}
				changes(av[i], bv[j], append(p, "["+n+"]"), out, depth+1)
			}
			for j, n := range bn {
				if !slices.Contains(an, n) {
					*out = append(*out, change{append(slices.Clone(p), "["+n+"]"), nil, bv[j]})
				}
			}
			return
		}
		if len(av) != len(bv) {
			*out = append(*out, change{slices.Clone(p), a, b})
			return
		}
		for i := range av {
			changes(av[i], bv[i], append(p, "["+itoa(i)+"]"), out, depth+1)
		}
		return
	default:
		if equalScalar(a, b) {
			return
		}
	}
	*out = append(*out, change{slices.Clone(p), a, b})
}

func equalScalar(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// names returns the elements' distinct "name" fields, or nil when an element has none or two share one.
func names(list []any) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		if n == "" || slices.Contains(out, n) {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func isMetadata(p path) bool {
	return p.has("metadata", "labels") || p.has("metadata", "annotations")
}

// isScale: spec.replicas, or a container's resources.
func isScale(p path) bool {
	if p.has("spec", "replicas") {
		return true
	}
	i := p.containerIndex()
	return i >= 0 && len(p) > i+1 && p[i+1] == "resources"
}

// isImage: a container's image, or a whole container added or removed.
func isImage(p path) bool {
	i := p.containerIndex()
	return i >= 0 && (len(p) == i+1 || p[i+1] == "image")
}

func modified(b, h *unstructured.Unstructured) []Finding {
	var cs []change
	changes(b.Object, h.Object, nil, &cs, 0)
	if len(cs) == 0 {
		return nil
	}
	var rest []change // not metadata
	for _, c := range cs {
		if !isMetadata(c.path) {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return []Finding{{Metadata, metadataNote(cs)}}
	}
	group, kind := gk(h)
	name := h.GetName()
	var out []Finding
	explained := make([]bool, len(rest))
	explainAll := func() {
		for i := range explained {
			explained[i] = true
		}
	}
	switch {
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		out = append(out, Finding{CRD, name + ": " + pathsNote(rest)})
		explainAll()
	case group == "apps" && kind == "StatefulSet":
		var vct, other []change
		for _, c := range rest {
			switch {
			case c.path.has("spec", "volumeClaimTemplates"):
				vct = append(vct, c)
			case isScale(c.path):
			default:
				other = append(other, c)
			}
		}
		if len(vct) > 0 {
			out = append(out, Finding{VolumeClaimTemplates, name})
		}
		if len(other) > 0 {
			out = append(out, Finding{StatefulSet, name + ": " + pathsNote(other)})
		}
	case group == "" && kind == "Service":
		for i, c := range rest {
			if c.path.has("spec", "type") || c.path.has("spec", "ports") {
				explained[i] = true
			}
		}
		var notes []string
		if bt, ht := str(b, "spec", "type"), str(h, "spec", "type"); bt != ht {
			notes = append(notes, "type "+orDefault(bt, "ClusterIP")+" → "+orDefault(ht, "ClusterIP"))
		}
		if bp, hp := ports(b), ports(h); bp != hp {
			notes = append(notes, "ports "+orDefault(bp, "none")+" → "+orDefault(hp, "none"))
		}
		if len(notes) > 0 {
			out = append(out, Finding{Service, name + ": " + strings.Join(notes, ", ")})
		}
	case group == rbacGroup && (kind == "Role" || kind == "ClusterRole"):
		if wider := widerRules(rules(b), rules(h)); len(wider) > 0 || changed(rest, "aggregationRule") {
			note := ruleNote(wider)
			if changed(rest, "aggregationRule") {
				note = strings.TrimSpace(note + " aggregationRule changed")
			}
			out = append(out, Finding{RBACWidened, kind + " " + name + " " + note})
			explainAll()
		}
	case group == rbacGroup && (kind == "RoleBinding" || kind == "ClusterRoleBinding"):
		bs := subjects(b)
		var added []string
		for _, s := range subjects(h) {
			if !slices.Contains(bs, s) {
				added = append(added, s)
			}
		}
		var ref string
		if roleRef(b) != roleRef(h) {
			ref = roleRef(h)
		}
		if len(added) > 0 || ref != "" {
			out = append(out, Finding{RBACWidened, kind + " " + name + bindingNote(added, ref)})
			explainAll()
		}
	case group == "" && kind == "Secret":
		var keys []string
		for i, c := range rest {
			if c.path.has("data") || c.path.has("stringData") {
				explained[i] = true
				if len(c.path) > 1 && !slices.Contains(keys, c.path[1]) {
					keys = append(keys, c.path[1])
				}
			}
		}
		if len(keys) > 0 {
			out = append(out, Finding{SecretKeys, keysNote("", keys)})
		}
	case isWebhookConfig(group, kind):
		out = append(out, Finding{AdmissionWebhook, name + ": " + pathsNote(rest)})
		explainAll()
	case group == "networking.k8s.io" && kind == "NetworkPolicy":
		out = append(out, Finding{NetworkPolicy, name + ": " + pathsNote(rest)})
		explainAll()
	}
	if imm := immutable(group, kind, rest); len(imm) > 0 {
		out = append(out, Finding{ImmutableField, kind + " " + name + ": " + strings.Join(imm, ", ")})
	}
	if group == "apps" && kind == "StatefulSet" {
		// Its class covers the change; images and scale are still named below.
		for i, c := range rest {
			explained[i] = !isImage(c.path) && !isScale(c.path)
		}
	}
	scaleOnly := true
	var imgs []string
	for i, c := range rest {
		switch {
		case explained[i]:
		case isImage(c.path):
			imgs = append(imgs, imageNote(c))
			scaleOnly = false
		case isScale(c.path):
		default:
			scaleOnly = false
		}
	}
	if len(imgs) > 0 {
		out = append(out, Finding{Image, strings.Join(imgs, ", ")})
	}
	allExplained := !slices.Contains(explained, false)
	switch {
	case allExplained:
	case scaleOnly:
		var ps []change
		for i, c := range rest {
			if !explained[i] {
				ps = append(ps, c)
			}
		}
		out = append(out, Finding{Scale, kind + " " + name + ": " + pathsNote(ps)})
	default:
		var ps []change
		for i, c := range rest {
			if !explained[i] && !isImage(c.path) && !isScale(c.path) {
				ps = append(ps, c)
			}
		}
		if len(ps) > 0 {
			out = append(out, Finding{Other, kind + " " + name + ": " + pathsNote(ps)})
		}
	}
	return out
}

func changed(cs []change, first string) bool {
	for _, c := range cs {
		if len(c.path) > 0 && c.path[0] == first {
			return true
		}
	}
	return false
}

// immutable names the changed fields the API server refuses to update in place: a workload's selector, a Job's
// template and selector. Argo CD's sync fails on them unless the resource is replaced (sync option Replace=true).
func immutable(group, kind string, cs []change) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, c := range cs {
		switch {
		case group == "apps" && (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet") && c.path.has("spec", "selector"):
			add("spec.selector")
		case group == "apps" && kind == "StatefulSet" && (c.path.has("spec", "serviceName") || c.path.has("spec", "podManagementPolicy")):
			add(path(c.path[:2]).String())
		case group == "batch" && kind == "Job" && (c.path.has("spec", "template") || c.path.has("spec", "selector") || c.path.has("spec", "completions")):
			add(path(c.path[:2]).String())
		}
	}
	return out
}

func str(o *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, fields...)
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ports is a Service's ports as "80/TCP,443/TCP" in their order (nodePort kept when set: it is exposure too).
func ports(o *unstructured.Unstructured) string {
	list, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
	var out []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		proto, _ := m["protocol"].(string)
		s := scalar(m["port"]) + "/" + orDefault(proto, "TCP")
		if np := scalar(m["nodePort"]); np != "" {
			s += ":" + np
		}
		if tp := scalar(m["targetPort"]); tp != "" && tp != scalar(m["port"]) {
			s += "→" + tp
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case int64:
		return itoa64(t)
	case float64:
		if t == float64(int64(t)) {
			return itoa64(int64(t))
		}
	case bool:
		if t {
			return "true"
		}
		return "false"
	}
	return "…"
}

func itoa64(i int64) string {
	if i < 0 {
		return "-" + itoa(int(-i))
	}
	return itoa(int(i))
}

// imageNote is "api: nginx:1.25 → nginx:1.27" ("+api: …" added, "-api: …" removed).
func imageNote(c change) string {
	i := c.path.containerIndex()
	name := strings.Trim(c.path[i], "[]")
	if c.path[i-1] == "initContainers" {
		name = "init:" + name
	}
	img := func(v any) string {
		if len(c.path) == i+1 {
			m, _ := v.(map[string]any)
			v = m["image"]
		}
		s, _ := v.(string)
		return s
	}
	from, to := img(c.from), img(c.to)
	switch {
	case from == "" && to == "":
		return name
	case from == "":
		return "+" + name + ": " + to
	case to == "":
		return "-" + name + ": " + from
	}
	return name + ": " + from + " → " + to
}

// pathsNote names up to three changed fields.
func pathsNote(cs []change) string {
	var ps []string
	for _, c := range cs {
		s := c.path.String()
		if !slices.Contains(ps, s) {
			ps = append(ps, s)
		}
	}
	if len(ps) > 3 {
		return strings.Join(ps[:3], ", ") + ", +" + itoa(len(ps)-3) + " more"
	}
	return strings.Join(ps, ", ")
}

func metadataNote(cs []change) string {
	var keys []string
	for _, c := range cs {
		if len(c.path) > 2 && !slices.Contains(keys, c.path[2]) {
			keys = append(keys, c.path[2])
		} else if len(c.path) == 2 {
			// The whole labels or annotations map added or removed: name its keys.
			m, _ := c.to.(map[string]any)
			if m == nil {
				m, _ = c.from.(map[string]any)
			}
			var ks []string
			for k := range m {
				if !slices.Contains(keys, k) {
					ks = append(ks, k)
				}
			}
			slices.Sort(ks)
			keys = append(keys, ks...)
		}
	}
	if len(keys) > 3 {
		return strings.Join(keys[:3], ", ") + ", +" + itoa(len(keys)-3) + " more"
	}
	return strings.Join(keys, ", ")
}

// secretKeys are the key names of a (masked) Secret's data and stringData, sorted.
func secretKeys(o *unstructured.Unstructured) []string {
	var out []string
	for _, f := range []string{"data", "stringData"} {
		m, _, _ := unstructured.NestedMap(o.Object, f)
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func keysNote(verb string, keys []string) string {
	s := "keys " + strings.Join(keys, ", ")
	if len(keys) == 1 {
		s = "key " + keys[0]
	}
	if len(keys) == 0 {
		s = "no keys"
	}
	if verb != "" {
		s += " " + verb
	}
	return s
}
