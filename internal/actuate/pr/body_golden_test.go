package pr

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var update = flag.Bool("update", false, "rewrite testdata/body/*/expected.md from what the renderer gives")

// bodyCase is testdata/body/<case>/input.json: one Change's pull request (Change, Fields,
// Location), or a group's (Group, Members, Results).
type bodyCase struct {
	Change   *lifecycle.Change
	Fields   []yamledit.FieldResult
	Location index.Location
	Cluster  string

	Group   *lifecycle.Group
	Members []lifecycle.Change
	Results map[lifecycle.Key]struct {
		Location index.Location
		Fields   []yamledit.FieldResult
	}
}

// TestBodyGolden renders every testdata/body/<case>/input.json and compares it with the case's
// expected.md byte for byte (-update rewrites them). A case without a usage window is the body
// as it was before windows were charted.
func TestBodyGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/body/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "input.json"))
			if err != nil {
				t.Fatal(err)
			}
			var in bodyCase
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatalf("input.json: %v", err)
			}
			var got string
			switch {
			case in.Change != nil:
				got = Body(*in.Change, &yamledit.Result{Changed: true, Fields: in.Fields}, in.Location, in.Cluster)
			case in.Group != nil:
				results := map[lifecycle.Key]MemberResult{}
				for k, r := range in.Results {
					results[k] = MemberResult{Included: true, Location: r.Location, Fields: r.Fields}
				}
				got = GroupBody(*in.Group, in.Members, results, nil, in.Cluster)
			default:
				t.Fatal("input.json has neither a Change nor a Group")
			}
			path := filepath.Join(dir, "expected.md")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("body differs from %s:\n--- got\n%s", path, got)
			}
		})
	}
}
