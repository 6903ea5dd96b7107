package discover

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/util/version"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Argo CD's names for the in-cluster destination and the cluster-secret label (common/common.go).
const (
	InClusterServer   = v1alpha1.KubernetesInternalAPIServerAddr // https://kubernetes.default.svc
	InClusterName     = "in-cluster"
	secretTypeLabel   = "argocd.argoproj.io/secret-type"
	secretTypeCluster = "cluster"
)

// Cluster is an Argo CD destination cluster: what a cluster Secret declares (name, server, project, labels,
// annotations). Credentials are never read.
type Cluster struct {
	Name        string            `json:"name"`
	Server      string            `json:"server"`
	Project     string            `json:"project,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// KubeVersion and APIVersions are the cluster's Kubernetes version ("v1.29.4") and kind-qualified API list
	// ("apps/v1", "apps/v1/Deployment") as Argo CD's application controller passes them to the repo-server for
	// this destination (controller/state.go, from the cluster info controller/clusterinfoupdater.go keeps): from
	// Argo CD's cluster list, or declared per cluster (clusters file fields, or the Secret's annotations
	// AnnotationKubeVersion and AnnotationAPIVersions). Empty: the render settings' global values.
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	// Local marks the in-cluster destination Argo CD adds when no Secret declares it; it has no labels.
	Local bool `json:"-"`
}

// The annotations of a cluster Secret that declare its render context when Argo CD's cluster info is not at
// hand: the Kubernetes version, and a comma-separated API list.
const (
	AnnotationKubeVersion = "fleetwave.io/kube-version"
	AnnotationAPIVersions = "fleetwave.io/api-versions"
)

// checkKubeVersion refuses a version Helm and Kustomize could not take ("v1.29", "1.29.4" are fine).
func checkKubeVersion(v string) error {
	if v == "" {
		return nil
	}
	if _, err := version.ParseGeneric(v); err != nil {
		return fmt.Errorf("kubeVersion %q is not a Kubernetes version (write it as v1.29.4)", v)
	}
	return nil
}

// clusterFile is the plain-list form of a --clusters file.
type clusterFile struct {
	Clusters []struct {
		Name        string            `json:"name"`
		Server      string            `json:"server"`
		Project     string            `json:"project,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		KubeVersion string            `json:"kubeVersion,omitempty"`
		APIVersions []string          `json:"apiVersions,omitempty"`
	} `json:"clusters"`
}

// ParseClusters reads a clusters file in either form of the product notes: a YAML stream of Argo CD cluster
// Secrets (argocd.argoproj.io/secret-type: cluster, stringData or data with name/server, labels on metadata), or
// a plain list under "clusters:". filename is used in error messages.
func ParseClusters(filename string, data []byte) ([]Cluster, error) {
	var probe map[string]any
	if err := yaml.Unmarshal(firstDocument(data), &probe); err != nil {
		return nil, fmt.Errorf("%s: parsing YAML: %w", filename, err)
	}
	var out []Cluster
	if _, ok := probe["clusters"]; ok {
		var f clusterFile
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", filename, err)
		}
		for i, c := range f.Clusters {
			if c.Server == "" {
				return nil, fmt.Errorf("%s: clusters[%d] (%s): no server", filename, i, c.Name)
			}
			if err := checkKubeVersion(c.KubeVersion); err != nil {
				return nil, fmt.Errorf("%s: clusters[%d] (%s): %w", filename, i, c.Name, err)
			}
			out = append(out, Cluster{Name: c.Name, Server: c.Server, Project: c.Project, Labels: c.Labels, Annotations: c.Annotations,
				KubeVersion: c.KubeVersion, APIVersions: c.APIVersions})
		}
	} else {
		docs, err := splitDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filename, err)
		}
		for i, d := range docs {
			var obj map[string]any
			if err := yaml.Unmarshal(d, &obj); err != nil {
				return nil, fmt.Errorf("%s: document %d: parsing YAML: %w", filename, i+1, err)
			}
			if obj == nil {
				continue
			}
			c, ok, err := clusterFromSecret(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", filename, i+1, err)
			}
			if ok {
				out = append(out, c)
			}
		}
	}
	if err := checkUnique(out); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	return out, nil
}

func checkUnique(cs []Cluster) error {
	names, servers := map[string]bool{}, map[string]bool{}
	for _, c := range cs {
		if c.Name != "" && names[c.Name] {
			return fmt.Errorf("cluster name %q declared twice", c.Name)
		}
		if servers[normServer(c.Server)] {
			return fmt.Errorf("cluster server %q declared twice", c.Server)
		}
		names[c.Name] = true
		servers[normServer(c.Server)] = true
	}
	return nil
}

// clusterFromSecret reads an Argo CD cluster Secret (declarative form): ok=false when obj is not one.
// Only name, server and project are read from its data; the config (credentials) is never decoded.
func clusterFromSecret(obj map[string]any) (Cluster, bool, error) {
	if obj["kind"] != "Secret" || obj["apiVersion"] != "v1" {
		return Cluster{}, false, nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	labels := stringMap(meta["labels"])
	if labels[secretTypeLabel] != secretTypeCluster {
		return Cluster{}, false, nil
	}
	name, _ := meta["name"].(string)
	field := func(k string) (string, error) {
		if sd, ok := obj["stringData"].(map[string]any); ok {
			if v, ok := sd[k].(string); ok {
				return v, nil
			}
		}
		if d, ok := obj["data"].(map[string]any); ok {
			if v, ok := d[k].(string); ok {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return "", fmt.Errorf("cluster secret %s: data.%s is not base64", name, k)
				}
				return string(b), nil
			}
		}
		return "", nil
	}
	c := Cluster{Labels: labels, Annotations: stringMap(meta["annotations"])}
	var err error
	if c.Name, err = field("name"); err != nil {
		return Cluster{}, false, err
	}
	if c.Server, err = field("server"); err != nil {
		return Cluster{}, false, err
	}
	if c.Project, err = field("project"); err != nil {
		return Cluster{}, false, err
	}
	if c.Server == "" {
		return Cluster{}, false, fmt.Errorf("cluster secret %s has no server", name)
	}
	c.KubeVersion = strings.TrimSpace(c.Annotations[AnnotationKubeVersion])
	if err := checkKubeVersion(c.KubeVersion); err != nil {
		return Cluster{}, false, fmt.Errorf("cluster secret %s: annotation %s: %w", name, AnnotationKubeVersion, err)
	}
	for _, v := range strings.Split(c.Annotations[AnnotationAPIVersions], ",") {
		if v = strings.TrimSpace(v); v != "" {
			c.APIVersions = append(c.APIVersions, v)
		}
	}
	return c, true, nil
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = fmt.Sprint(x)
	}
	return out
}

func normServer(s string) string { return strings.TrimRight(s, "/") }

// Clusters is the set of destination clusters an inventory resolves against.
type Clusters struct {
	list     []Cluster // secret-backed clusters, sorted by name
	byName   map[string]int
	byServer map[string]int
}

// NewClusters indexes clusters (as declared by cluster Secrets or a clusters file).
func NewClusters(cs []Cluster) *Clusters {
	list := append([]Cluster(nil), cs...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	c := &Clusters{list: list, byName: map[string]int{}, byServer: map[string]int{}}
	for i, x := range list {
		if _, dup := c.byName[x.Name]; !dup && x.Name != "" {
			c.byName[x.Name] = i
		}
		if _, dup := c.byServer[normServer(x.Server)]; !dup {
			c.byServer[normServer(x.Server)] = i
		}
	}
	return c
}

// Declared returns the secret-backed clusters, sorted by name.
func (c *Clusters) Declared() []Cluster {
	if c == nil {
		return nil
	}
	return c.list
}

// All returns the clusters Argo CD knows: the declared ones, plus the in-cluster destination when no Secret
// declares https://kubernetes.default.svc (applicationset/utils/clusterUtils.go ListClusters).
func (c *Clusters) All() []Cluster {
	out := append([]Cluster(nil), c.Declared()...)
	if c == nil {
		return append(out, inCluster())
	}
	if _, ok := c.byServer[InClusterServer]; !ok {
		out = append(out, inCluster())
	}
	return out
}

func inCluster() Cluster { return Cluster{Name: InClusterName, Server: InClusterServer, Local: true} }

// ErrUnknownCluster is returned by Resolve for a destination no cluster matches.
var ErrUnknownCluster = errors.New("unknown destination cluster")

// Resolve finds the cluster of an Application destination, by server or by name; the in-cluster destination is
// always known. For an unknown destination it returns a Cluster carrying what the destination says, and
// ErrUnknownCluster.
func (c *Clusters) Resolve(dest v1alpha1.ApplicationDestination) (Cluster, error) {
	if c == nil {
		c = NewClusters(nil)
	}
	if dest.Server != "" {
		if i, ok := c.byServer[normServer(dest.Server)]; ok {
			return c.list[i], nil
		}
		if normServer(dest.Server) == InClusterServer {
			return inCluster(), nil
		}
		return Cluster{Name: dest.Server, Server: dest.Server}, fmt.Errorf("%w: server %s", ErrUnknownCluster, dest.Server)
	}
	if dest.Name != "" {
		if i, ok := c.byName[dest.Name]; ok {
			return c.list[i], nil
		}
		if dest.Name == InClusterName {
			return inCluster(), nil
		}
		return Cluster{Name: dest.Name}, fmt.Errorf("%w: name %s", ErrUnknownCluster, dest.Name)
	}
	return Cluster{}, fmt.Errorf("%w: destination has neither server nor name", ErrUnknownCluster)
}

// splitDocuments splits a YAML stream into its documents (empty ones dropped).
func splitDocuments(data []byte) ([][]byte, error) {
	if doc, ok := singleDocument(data); ok {
		if len(bytes.TrimSpace(doc)) == 0 {
			return nil, nil
		}
		return [][]byte{doc}, nil
	}
	rd := utilyaml.NewYAMLReader(bufioReader(data))
	var docs [][]byte
	for {
		d, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("splitting YAML documents: %w", err)
		}
		if len(bytes.TrimSpace(d)) == 0 {
			continue
		}
		docs = append(docs, d)
	}
}

// singleDocument is what the YAMLReader returns for a stream without a line starting with "---" (its separator)
// and without a carriage return (its LineReader drops the one before a line feed): the stream as one document,
// its last line ended with a line feed (apimachinery util/yaml/decoder.go YAMLReader.Read, LineReader.Read). ok is
// false for other streams, which the YAMLReader splits.
func singleDocument(data []byte) (doc []byte, ok bool) {
	if bytes.HasPrefix(data, []byte("---")) || bytes.Contains(data, []byte("\n---")) || bytes.IndexByte(data, '\r') >= 0 {
		return nil, false
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data[:len(data):len(data)], '\n')
	}
	return data, true
}

func firstDocument(data []byte) []byte {
	docs, err := splitDocuments(data)
	if err != nil || len(docs) == 0 {
		return data
	}
	return docs[0]
}
