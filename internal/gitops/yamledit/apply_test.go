package yamledit

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var update = flag.Bool("update", false, "rewrite testdata/<case>/expected.yaml from the current output")

// goldenEdit is testdata/<case>/edit.json: a lifecycle.Edit plus the document index and, for
// failing cases, the expected error.
type goldenEdit struct {
	lifecycle.Edit
	Doc   int    `json:"doc"`
	Error string `json:"error,omitempty"` // "conflict", "unsupported", "docnotfound"
}

var namedErrors = map[string]error{
	"conflict":    ErrConflict,
	"unsupported": ErrUnsupported,
	"docnotfound": ErrDocNotFound,
}

func TestGolden(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "fuzz" || d.Name() == "kustomization" {
			continue
		}
		n++
		name := d.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "edit.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ge goldenEdit
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ge); err != nil {
				t.Fatalf("edit.json: %v", err)
			}
			orig := bytes.Clone(input)
			res, err := Edit(input, ge.Doc, ge.Edit)
			if !bytes.Equal(orig, input) {
				t.Fatal("Edit modified its input")
			}
			if ge.Error != "" {
				want := namedErrors[ge.Error]
				if want == nil {
					t.Fatalf("unknown error name %q", ge.Error)
				}
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Edit: %v", err)
			}
			expPath := filepath.Join(dir, "expected.yaml")
			if *update {
				if err := os.WriteFile(expPath, res.Out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			expected, err := os.ReadFile(expPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Out, expected) {
				t.Errorf("output differs from %s:\n--- got ---\n%s\n--- want ---\n%s", expPath, res.Out, expected)
			}
			if res.Changed != !bytes.Equal(input, res.Out) {
				t.Errorf("changed = %v but output equal to input = %v", res.Changed, bytes.Equal(input, res.Out))
			}
			// Apply agrees with Edit.
			out, changed, err := Apply(input, ge.Doc, ge.Edit)
			if err != nil || changed != res.Changed || !bytes.Equal(out, res.Out) {
				t.Errorf("Apply disagrees with Edit: changed=%v err=%v", changed, err)
			}
			// Every document other than the edited one is byte-identical.
			checkOtherDocs(t, input, res.Out, ge.Doc, ge.Op == lifecycle.EditDelete)
			if ge.Op == lifecycle.EditSetAnnotations {
				checkAnnotations(t, res.Out, ge.Doc, ge.Annotations)
			}
			// CRLF files stay CRLF.
			if bytes.Contains(input, []byte("\r\n")) && bytes.Count(res.Out, []byte("\n")) != bytes.Count(res.Out, []byte("\r\n")) {
				t.Error("CRLF file got bare LF line endings")
			}
		})
	}
	if n < 12 {
		t.Errorf("only %d golden cases", n)
	}
}

// checkAnnotations decodes document doc of out and checks that every annotation in want is a
// string with the wanted value.
func checkAnnotations(t *testing.T, out []byte, doc int, want map[string]string) {
	t.Helper()
	docs := Documents(out)
	if doc >= len(docs) {
		t.Fatalf("output has %d documents", len(docs))
	}
	var obj struct {
		Metadata struct {
			Annotations map[string]any `yaml:"annotations"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal(out[docs[doc].Start:docs[doc].End], &obj); err != nil {
		t.Fatalf("edited document does not decode: %v", err)
	}
	for k, v := range want {
		got, ok := obj.Metadata.Annotations[k]
		if s, isStr := got.(string); !ok || !isStr || s != v {
			t.Errorf("annotation %s decodes as %T %v, want the string %q", k, got, got, v)
		}
	}
}

func checkOtherDocs(t *testing.T, in, out []byte, doc int, deleted bool) {
	t.Helper()
	docText := func(b []byte) []string {
		var s []string
		for _, sp := range Documents(b) {
			// compare without the separator line, which a delete may move
			d := string(b[sp.Start:sp.End])
			if isSeparator([]byte(d)) {
				if i := strings.IndexByte(d, '\n'); i >= 0 {
					d = d[i+1:]
				} else {
					d = ""
				}
			}
			s = append(s, d)
		}
		return s
	}
	a, b := docText(in), docText(out)
	if deleted {
		a = append(a[:doc:doc], a[doc+1:]...)
		if (len(a) > 0 || len(b) > 0) && !reflect.DeepEqual(a, b) {
			t.Errorf("remaining documents changed:\n%q\n%q", a, b)
		}
		return
	}
	if len(a) != len(b) {
		t.Fatalf("document count %d → %d", len(a), len(b))
	}
	for i := range a {
		if i != doc && a[i] != b[i] {
			t.Errorf("document %d changed:\n%q\n%q", i, a[i], b[i])
		}
	}
}

func TestEditRecordsFields(t *testing.T) {
	in := []byte("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n  hard:\n    requests.cpu: \"10\"\n")
	tests := []struct {
		name   string
		fields []lifecycle.FieldChange
		want   []FieldResult
	}{
		{"replace", []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, From: "10", To: "12"}},
			[]FieldResult{{Path: []string{"spec", "hard", "requests.cpu"}, Old: "10", New: "12"}}},
		{"create", []lifecycle.FieldChange{{Path: []string{"spec", "hard", "pods"}, To: "5"}},
			[]FieldResult{{Path: []string{"spec", "hard", "pods"}, New: "5", Created: true}}},
		{"noop is not recorded", []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, To: "10"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Edit(in, 0, lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: tt.fields})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Fields, tt.want) {
				t.Errorf("Fields = %+v, want %+v", res.Fields, tt.want)
			}
		})
	}
}

func TestConflictError(t *testing.T) {
	in := []byte("spec:\n  hard:\n    requests.cpu: \"10\"\n")
	tests := []struct {
		name  string
		path  []string
		from  string
		found string
	}{
		{"value differs", []string{"spec", "hard", "requests.cpu"}, "8", "10"},
		{"path absent", []string{"spec", "hard", "pods"}, "8", "<absent>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Apply(in, 0, lifecycle.Edit{Op: lifecycle.EditSetFields,
				Fields: []lifecycle.FieldChange{{Path: tt.path, From: tt.from, To: "12"}}})
			var ce *ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
				t.Fatalf("err = %v, want *ConflictError", err)
			}
			if ce.Found != tt.found || ce.Expected != tt.from {
				t.Errorf("ConflictError = %+v", ce)
			}
		})
	}
}

func TestDocuments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"single", "a: 1\n", 1},
		{"leading separator", "---\na: 1\n", 1},
		{"comment prelude", "# c\n---\na: 1\n---\nb: 2\n", 2},
		{"empty documents", "---\n---\n# only a comment\n---\na: 1\n---\n", 1},
		{"separator with comment", "a: 1\n--- # two\nb: 2\n", 2},
		{"crlf", "a: 1\r\n---\r\nb: 2\r\n", 2},
		{"dashes in value are not separators", "a: ---x\nb: |\n  ---\n", 1},
		{"document end marker", "a: 1\n...\n---\nb: 2\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(Documents([]byte(tt.in))); got != tt.want {
				t.Errorf("Documents = %d, want %d", got, tt.want)
			}
		})
	}
}
