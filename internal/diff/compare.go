package diff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/hook"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
)

// Change classifies a resource between base and head.
type Change string

// Changes.
const (
	Added     Change = "added"
	Removed   Change = "removed"
	Modified  Change = "modified"
	Unchanged Change = "unchanged" // only used for hooks, which are listed even when unchanged
)

// Key identifies a resource within one application's render.
type Key struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String is "group/Kind namespace/name" with the empty parts left out ("Deployment prod/web").
func (k Key) String() string {
	var b strings.Builder
	if k.Group != "" {
		b.WriteString(k.Group + "/")
	}
	b.WriteString(k.Kind + " ")
	if k.Namespace != "" {
		b.WriteString(k.Namespace + "/")
	}
	b.WriteString(k.Name)
	return b.String()
}

func (k Key) path() string {
	g := k.Group
	if g == "" {
		g = "core"
	}
	ns := k.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	return g + "/" + k.Kind + "/" + ns + "/" + k.Name
}

func less(a, b Key) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// Resource is one resource that differs between base and head (or, for hooks, one hook of either side).
type Resource struct {
	Key
	Change Change `json:"change"`
	// Diff is a unified diff of the two sides as YAML with sorted keys, Secret values masked.
	Diff string `json:"diff,omitempty"`
	// HookTypes are the hook phases (PreSync, PostSync, ...) when the resource is a hook.
	HookTypes []string `json:"hookTypes,omitempty"`
	// SecretKeys are the per-key changes of a Secret (values never included).
	SecretKeys []SecretKey `json:"secretKeys,omitempty"`
	// Images are the containers whose image the change sets, adds or removes.
	Images []ImageChange `json:"images,omitempty"`
	// Risks are the classes of the change (internal/diff/risk), most serious first; none for hooks, which the
	// report classes per app (hooks run when their app syncs).
	Risks []risk.Finding `json:"risks,omitempty"`
}

// Summary counts resources by change; hooks are not counted.
type Summary struct {
	Added     int `json:"added"`
	Modified  int `json:"modified"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// Changed reports whether any resource differs.
func (s Summary) Changed() bool { return s.Added+s.Modified+s.Removed > 0 }

// Result is the comparison of one application's two renders.
type Result struct {
	Resources []Resource `json:"resources"`
	Hooks     []Resource `json:"hooks"`
	Summary   Summary    `json:"summary"`
	// Warnings are Argo CD's repeated-resource warnings of the head render (the base's when the app is removed).
	Warnings []string `json:"warnings,omitempty"`
}

// Options tune Compare.
type Options struct {
	// Context is the number of unchanged lines shown around each change (default 3; negative for none).
	Context int
	// Namespace is the application's destination namespace: namespaced resources without a namespace get it, as
	// Argo CD's controller does before it diffs (controller/state.go DeduplicateTargetObjects).
	Namespace string
	// BaseNamespace is the base side's destination namespace, when it differs from Namespace's.
	BaseNamespace string
	// IsNamespaced tells whether a kind is namespaced (default: every kind but Kubernetes' cluster-scoped ones,
	// unknown kinds counting as namespaced like gitops-engine's IsNamespacedOrUnknown).
	IsNamespaced func(group, kind string) bool
}

// Compare diffs the base and head objects of one application. Either side may be empty (an application added or
// removed by the change).
func Compare(base, head []*unstructured.Unstructured, opts Options) (*Result, error) {
	ctxLines := opts.Context
	if ctxLines == 0 {
		ctxLines = 3
	} else if ctxLines < 0 {
		ctxLines = 0
	}
	isNamespaced := opts.IsNamespaced
	if isNamespaced == nil {
		isNamespaced = DefaultIsNamespaced
	}
	baseNS := opts.BaseNamespace
	if baseNS == "" {
		baseNS = opts.Namespace
	}
	b, bWarn := targets(base, baseNS, isNamespaced)
	h, hWarn := targets(head, opts.Namespace, isNamespaced)
	keys := make([]Key, 0, len(b)+len(h))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range h {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })

	res := &Result{Resources: []Resource{}, Hooks: []Resource{}, Warnings: hWarn}
	if head == nil {
		res.Warnings = bWarn
	}
	for _, k := range keys {
		bo, ho := b[k], h[k]
		isHook := (bo != nil && hook.IsHook(bo)) || (ho != nil && hook.IsHook(ho))
		bm, hm, secretKeys := MaskSecretPair(bo, ho)
		bText, err := toYAML(bm)
		if err != nil {
			return nil, fmt.Errorf("serialising base %s: %w", k, err)
		}
		hText, err := toYAML(hm)
		if err != nil {
			return nil, fmt.Errorf("serialising head %s: %w", k, err)
		}
		var change Change
		switch {
		case bo == nil:
			change = Added
		case ho == nil:
			change = Removed
		case bText == hText:
			change = Unchanged
		default:
			change = Modified
		}
		r := Resource{Key: k, Change: change}
		if change != Unchanged {
			r.Diff = Unified(bText, hText, label("base", k, bo == nil), label("head", k, ho == nil), ctxLines)
			r.Images = imageChanges(bo, ho)
			if !isHook {
				// The masked pair: the classifier never sees a Secret's values.
				r.Risks = risk.Classify(bm, hm)
			}
		}
		if change != Unchanged || isHook {
			r.SecretKeys = changedKeys(secretKeys)
		}
		if isHook {
			src := ho
			if src == nil {
				src = bo
			}
			// Helm's pre-install and pre-upgrade both map to PreSync: list each phase once.
			for _, t := range hook.Types(src) {
				if !slices.Contains(r.HookTypes, string(t)) {
					r.HookTypes = append(r.HookTypes, string(t))
				}
			}
			res.Hooks = append(res.Hooks, r)
			continue
		}
		switch change {
		case Added:
			res.Summary.Added++
		case Removed:
			res.Summary.Removed++
		case Modified:
			res.Summary.Modified++
		default:
			res.Summary.Unchanged++
			continue
		}
		res.Resources = append(res.Resources, r)
	}
	return res, nil
}

func changedKeys(keys []SecretKey) []SecretKey {
	var out []SecretKey
	for _, k := range keys {
		if k.Change != "unchanged" {
			out = append(out, k)
		}
	}
	return out
}

func label(side string, k Key, absent bool) string {
	if absent {
		return "/dev/null"
	}
	return side + "/" + k.path()
}

// KeyOf returns the identity of an object.
func KeyOf(obj *unstructured.Unstructured) Key {
	gvk := obj.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// targets keys the objects of one render as Argo CD's controller does (controller/state.go
// DeduplicateTargetObjects): namespaced (or unknown) kinds without a namespace get the destination namespace,
// cluster-scoped kinds lose theirs, and of objects sharing a key the last one wins, with a warning.
func targets(objs []*unstructured.Unstructured, namespace string, isNamespaced func(group, kind string) bool) (map[Key]*unstructured.Unstructured, []string) {
	m := make(map[Key]*unstructured.Unstructured, len(objs))
	count := map[Key]int{}
	var order []Key
	for _, o := range objs {
		if o == nil {
			continue
		}
		gvk := o.GroupVersionKind()
		switch {
		case !isNamespaced(gvk.Group, gvk.Kind) && o.GetNamespace() != "":
			o = o.DeepCopy()
			o.SetNamespace("")
		case isNamespaced(gvk.Group, gvk.Kind) && o.GetNamespace() == "" && namespace != "":
			o = o.DeepCopy()
			o.SetNamespace(namespace)
		}
		k := KeyOf(o)
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
		m[k] = o
	}
	var warnings []string
	for _, k := range order {
		if count[k] > 1 {
			warnings = append(warnings, fmt.Sprintf("Resource %s appeared %d times among application resources.", k, count[k]))
		}
	}
	return m, warnings
}

// clusterScoped are the cluster-scoped kinds of Kubernetes 1.30 and of common add-ons, by group.
var clusterScoped = map[string]map[string]bool{
	"":                             {"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true},
	"rbac.authorization.k8s.io":    {"ClusterRole": true, "ClusterRoleBinding": true},
	"apiextensions.k8s.io":         {"CustomResourceDefinition": true},
	"apiregistration.k8s.io":       {"APIService": true},
	"admissionregistration.k8s.io": {"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true},
	"storage.k8s.io":               {"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true},
	"scheduling.k8s.io":            {"PriorityClass": true},
	"node.k8s.io":                  {"RuntimeClass": true},
	"networking.k8s.io":            {"IngressClass": true},
	"certificates.k8s.io":          {"CertificateSigningRequest": true},
	"flowcontrol.apiserver.k8s.io": {"FlowSchema": true, "PriorityLevelConfiguration": true},
	"gateway.networking.k8s.io":    {"GatewayClass": true},
	"cert-manager.io":              {"ClusterIssuer": true},
	"argoproj.io":                  {"ClusterWorkflowTemplate": true},
}

// DefaultIsNamespaced reports every kind as namespaced except the well-known cluster-scoped ones.
func DefaultIsNamespaced(group, kind string) bool { return !clusterScoped[group][kind] }

// index keys objects; a key seen twice gets a "#n" suffix on its name so neither copy is lost.
func index(objs []*unstructured.Unstructured) map[Key]*unstructured.Unstructured {
	m := make(map[Key]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		if o == nil {
			continue
		}
		k := KeyOf(o)
		if _, dup := m[k]; dup {
			base := k.Name
			for n := 2; ; n++ {
				k.Name = fmt.Sprintf("%s#%d", base, n)
				if _, taken := m[k]; !taken {
					break
				}
			}
		}
		m[k] = o
	}
	return m
}

// toYAML serialises an object with sorted keys ("" for nil), as sigs.k8s.io/yaml.Marshal writes it:
// manifestyaml.Marshal writes the same bytes for any object, at a fraction of the cost.
func toYAML(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	b, err := manifestyaml.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Normalize returns the objects' YAML with sorted keys, in key order, Secret values masked as unchanged: a
// stable text form of a render.
func Normalize(objs []*unstructured.Unstructured) (string, error) {
	idx := index(objs)
	keys := make([]Key, 0, len(idx))
	for k := range idx {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	var b strings.Builder
	for i, k := range keys {
		o := idx[k]
		_, masked, _ := MaskSecretPair(o, o)
		text, err := toYAML(masked)
		if err != nil {
			return "", fmt.Errorf("serialising %s: %w", k, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(text)
	}
	return b.String(), nil
}
