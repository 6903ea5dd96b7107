// Package outputcap checks an app's output caps (render.Limits' MaxOutputBytes and MaxDocuments) where a
// rendering library hands its output back, before fleetwave copies, sorts or parses it.
//
// The libraries offer no hook to stop them while they write: Helm's engine renders each template into a
// strings.Builder of its own and returns them all (helm.sh/helm/v3@v3.19.4 pkg/engine/engine.go render,
// helm.sh/helm/v4@v4.3.1 pkg/engine/engine.go render), krusty returns a whole ResMap (sigs.k8s.io/kustomize/
// api@v0.21.1 krusty/kustomizer.go Run) and go-jsonnet one string (github.com/google/go-jsonnet@v0.21.0 vm.go
// EvaluateFile). What a library holds when it returns is the worker's memory cap's to bound
// (internal/render/isolate); what these checks spare is everything after: Helm's SortManifests and stdout
// assembly (two more copies of the text), the YAML or JSON parse into objects (several times the text), and
// their JSON encoding. The words of a refusal are render.go's, which checks the same caps on the objects.
package outputcap

import "fmt"

// Limits are one app's output caps as a renderer checks them. A zero field is no cap (a renderer called
// without limits behaves as before).
type Limits struct {
	MaxBytes     int64 // bytes of the library's output text
	MaxDocuments int   // YAML documents with content (or JSON array items) in it
}

// Exceeded is a refusal by one of the caps: "refused (output-size): manifests exceed N bytes" or
// "refused (document-count): more than N objects", the words render.go uses for the same caps.
type Exceeded struct {
	Rule  string // "output-size" or "document-count"
	Limit int64
}

// Rules of Exceeded.
const (
	RuleOutputSize    = "output-size"
	RuleDocumentCount = "document-count"
)

func (e *Exceeded) Error() string {
	if e.Rule == RuleDocumentCount {
		return fmt.Sprintf("refused (%s): more than %d objects", e.Rule, e.Limit)
	}
	return fmt.Sprintf("refused (%s): manifests exceed %d bytes", e.Rule, e.Limit)
}

// Bytes refuses n bytes of output over the cap.
func (l Limits) Bytes(n int64) error {
	if l.MaxBytes > 0 && n > l.MaxBytes {
		return &Exceeded{Rule: RuleOutputSize, Limit: l.MaxBytes}
	}
	return nil
}

// Documents refuses n documents over the cap.
func (l Limits) Documents(n int) error {
	if l.MaxDocuments > 0 && n > l.MaxDocuments {
		return &Exceeded{Rule: RuleDocumentCount, Limit: int64(l.MaxDocuments)}
	}
	return nil
}

// Meter adds up the output of a library handed back in parts (Helm's templates, Kustomize's resources) and
// refuses it as soon as a cap is passed. The zero value with zero Limits never refuses.
type Meter struct {
	Limits Limits
	bytes  int64
	docs   int
}

// Add counts n bytes holding docs documents.
func (m *Meter) Add(n int64, docs int) error {
	m.bytes += n
	m.docs += docs
	if err := m.Limits.Bytes(m.bytes); err != nil {
		return err
	}
	return m.Limits.Documents(m.docs)
}

// AddText counts a YAML text: its bytes and its documents with content (CountDocuments; counted only when
// there is a document cap).
func (m *Meter) AddText(s string) error {
	docs := 0
	if m.Limits.MaxDocuments > 0 {
		docs = CountDocuments(s)
	}
	return m.Add(int64(len(s)), docs)
}

// Texts checks a library's output in parts, Helm's rendered templates, as one: their sizes summed and their
// documents counted, without copying them.
func (l Limits) Texts(files map[string]string) error {
	m := Meter{Limits: l}
	for _, s := range files {
		if err := m.AddText(s); err != nil {
			return err
		}
	}
	return nil
}

// CountDocuments counts the documents of a YAML stream that have content: a line other than blank lines and
// comments. Documents are split where apimachinery's YAMLReader splits them (k8s.io/apimachinery@v0.34.0
// pkg/util/yaml/decoder.go YAMLReader.Read, which kube.SplitYAML uses): at a line starting with "---" whose
// rest is blank or a comment. It is an upper bound of the objects the stream decodes to, List items aside
// (render.go counts those once flattened): a document holding only "null" is counted and then dropped. It
// reads the text in place, allocating nothing.
func CountDocuments[T ~string | ~[]byte](s T) int {
	n := 0
	content := false // the current document has content
	for start := 0; start < len(s); {
		end := start
		for end < len(s) && s[end] != '\n' {
			end++
		}
		line := s[start:end]
		start = end + 1
		if len(line) >= 3 && line[0] == '-' && line[1] == '-' && line[2] == '-' {
			if c, ok := firstNonSpace(line[3:]); !ok || c == '#' {
				if content {
					n++
				}
				content = false
				continue
			}
		}
		if !content {
			if c, ok := firstNonSpace(line); ok && c != '#' {
				content = true
			}
		}
	}
	if content {
		n++
	}
	return n
}

// firstNonSpace is the first byte of s that is not ASCII white space.
func firstNonSpace[T ~string | ~[]byte](s T) (byte, bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return s[i], true
		}
	}
	return 0, false
}
