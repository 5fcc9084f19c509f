package index

import (
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestLocateThenEdit: the document number Locate returns is the one yamledit edits.
func TestLocateThenEdit(t *testing.T) {
	ix, err := Build(repo, []string{"clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		target lifecycle.Target
		field  []string
		want   string
	}{
		{"second document of a file", rq("team-j", "free"), []string{"spec", "hard", "requests.cpu"}, "name: free\n  namespace: team-j\nspec:\n  hard:\n    requests.cpu: \"12\"\n"},
		{"document after a leading separator", lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "team-a"},
			[]string{"metadata", "annotations", "resizer.io/git-path"}, "resizer.io/git-path: \"12\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := ix.Locate(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			content := repo[loc.Path].Data
			out, changed, err := yamledit.Apply(content, loc.Doc, lifecycle.Edit{Op: lifecycle.EditSetFields,
				Fields: []lifecycle.FieldChange{{Path: tt.field, To: "12"}}})
			if err != nil || !changed {
				t.Fatalf("Apply: changed=%v err=%v", changed, err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("edited %s#%d:\n%s", loc.Path, loc.Doc, out)
			}
		})
	}
}
