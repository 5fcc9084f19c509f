package yamledit

import (
	"errors"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestEdgeCases(t *testing.T) {
	cpu := []string{"spec", "hard", "requests.cpu"}
	tests := []struct {
		name    string
		in      string
		path    []string
		to      string
		want    string
		wantErr error
	}{
		{"tagged scalar keeps its tag", "spec:\n  hard:\n    requests.cpu: !!str 10\n", cpu, "12",
			"spec:\n  hard:\n    requests.cpu: !!str 12\n", nil},
		{"anchored scalar used elsewhere is refused", "x: &a 10\nspec:\n  hard:\n    requests.cpu: *a\n", cpu, "12",
			"", ErrUnsupported},
		{"anchor on the edited scalar changes its alias too: refused", "spec:\n  hard:\n    requests.cpu: &a 10\n    limits.cpu: *a\n", cpu, "12",
			"", ErrVerify},
		{"path through an alias", "base: &b\n  hard:\n    requests.cpu: 1\nspec: *b\n", cpu, "2", "", ErrUnsupported},
		{"block scalar leaf", "spec:\n  hard:\n    requests.cpu: |\n      10\n", cpu, "12", "", ErrUnsupported},
		{"multi-line plain scalar", "spec:\n  hard:\n    requests.cpu: 10\n      20\n", cpu, "12", "", ErrUnsupported},
		{"sequence on the path", "spec:\n  - hard: 1\n", cpu, "12", "", ErrUnsupported},
		{"plain string that would turn into a bool is quoted", "metadata:\n  labels:\n    enabled: \"no\"\n    x: a\n",
			[]string{"metadata", "labels", "x"}, "yes", "metadata:\n  labels:\n    enabled: \"no\"\n    x: \"yes\"\n", nil},
		{"new annotation value is always a string", "metadata:\n  name: q\n",
			[]string{"metadata", "annotations", "resizer.io/cooldown"}, "24", "metadata:\n  name: q\n  annotations:\n    resizer.io/cooldown: \"24\"\n", nil},
		{"value with a comment-like text", "spec:\n  hard:\n    requests.cpu: 10 # was 8\n", cpu, "a #b",
			"spec:\n  hard:\n    requests.cpu: \"a #b\" # was 8\n", nil},
		{"empty flow map", "spec:\n  hard: {}\n", cpu, "2", "spec:\n  hard: {requests.cpu: 2}\n", nil},
		{"null parent with tilde", "spec:\n  hard: ~ # none yet\n", cpu, "2", "spec:\n  hard: # none yet\n    requests.cpu: 2\n", nil},
		{"utf-8 before the value", "spec:\n  hard: {\"ünï\": 1, requests.cpu: 10}\n", cpu, "12", "spec:\n  hard: {\"ünï\": 1, requests.cpu: 12}\n", nil},
		{"BOM", "\xEF\xBB\xBFspec: {hard: {requests.cpu: 10}}\n", cpu, "12", "\xEF\xBB\xBFspec: {hard: {requests.cpu: 12}}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := Apply([]byte(tt.in), 0, lifecycle.Edit{Op: lifecycle.EditSetFields,
				Fields: []lifecycle.FieldChange{{Path: tt.path, To: tt.to}}})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v (out %q)", err, tt.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out, tt.want)
			}
		})
	}
}

func TestSetAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		annotations map[string]string
		want        string
		wantFields  int
		wantErr     string
	}{
		{"no annotations", "metadata:\n  name: a\n", nil, "", 0, "without annotations"},
		{"empty key", "metadata:\n  name: a\n", map[string]string{"": "x"}, "", 0, "empty annotation key"},
		{"a plain number is replaced by a quoted one", "metadata:\n  annotations:\n    n: 3\n",
			map[string]string{"n": "4"}, "metadata:\n  annotations:\n    n: \"4\"\n", 1, ""},
		{"a quantity-looking value stays a string", "metadata:\n  annotations:\n    size: 20Gi\n",
			map[string]string{"size": "24"}, "metadata:\n  annotations:\n    size: \"24\"\n", 1, ""},
		{"a single-quoted value keeps its quotes", "metadata:\n  annotations:\n    a: 'x'\n",
			map[string]string{"a": "true"}, "metadata:\n  annotations:\n    a: 'true'\n", 1, ""},
		{"a value with a line break is double-quoted", "metadata:\n  name: a\n",
			map[string]string{"note": "a\nb"}, "metadata:\n  name: a\n  annotations:\n    note: \"a\\nb\"\n", 1, ""},
		{"a key that looks like a list index", "metadata:\n  annotations:\n    \"0\": a\n",
			map[string]string{"0": "b"}, "metadata:\n  annotations:\n    \"0\": b\n", 1, ""},
		{"no metadata at all", "kind: ConfigMap\n",
			map[string]string{"k": "v"}, "kind: ConfigMap\nmetadata:\n  annotations:\n    k: v\n", 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Edit([]byte(tt.in), 0, lifecycle.Edit{Op: lifecycle.EditSetAnnotations, Annotations: tt.annotations})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Out) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", res.Out, tt.want)
			}
			if len(res.Fields) != tt.wantFields {
				t.Errorf("%d fields recorded, want %d: %+v", len(res.Fields), tt.wantFields, res.Fields)
			}
		})
	}
}

// TestVerifyAnnotationIsString: the verifier refuses an annotation value that does not decode as
// the intended string, whatever its node value says.
func TestVerifyAnnotationIsString(t *testing.T) {
	path := []string{"metadata", "annotations", "n"}
	before := []byte("metadata:\n  annotations:\n    n: \"3\"\n")
	tests := []struct {
		name, after string
		wantErr     bool
	}{
		{"quoted", "metadata:\n  annotations:\n    n: \"4\"\n", false},
		{"plain number", "metadata:\n  annotations:\n    n: 4\n", true},
		{"plain bool", "metadata:\n  annotations:\n    n: true\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := strings.TrimPrefix(strings.TrimSuffix(strings.Fields(tt.after)[3], "\""), "\"")
			err := verify(before, []byte(tt.after), path, to)
			if tt.wantErr != errors.Is(err, ErrVerify) {
				t.Errorf("verify: %v, want an ErrVerify: %v", err, tt.wantErr)
			}
		})
	}
}
