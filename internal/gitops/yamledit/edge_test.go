package yamledit

import (
	"errors"
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
