package index

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestLocateInGitPath checks a namespace's resizer.io/git-path against the repository in
// testdata/gitpath, indexed under --git-path=apps: the path must be clean, lie under a
// --git-path prefix (by path segments) and name files that define objects of the namespace
// only, as the index resolves their namespaces (a kustomization's namespace: wins over the
// document's own; a namespaced document no one gives a namespace lands wherever the GitOps tool
// applies it, so it refuses the path). A refused path is ErrGitPathRefused with the reason.
func TestLocateInGitPath(t *testing.T) {
	repo := os.DirFS("testdata/gitpath")
	ix, err := Build(repo, []string{"apps"})
	if err != nil {
		t.Fatal(err)
	}
	teamA := rq("team-a", "compute")
	tests := []struct {
		name     string
		prefixes []string // nil: apps
		path     string
		target   lifecycle.Target
		want     Location
		refused  string // the reason's words; "" when the path is accepted
		wantErr  error  // a lookup error of an accepted path
	}{
		{"a directory whose kustomization sets the namespace", nil, "apps/team-a", teamA, Location{"apps/team-a/quota.yaml", 0, "team-a"}, "", nil},
		{"the file itself", nil, "apps/team-a/quota.yaml", teamA, Location{"apps/team-a/quota.yaml", 0, "team-a"}, "", nil},
		{"a trailing slash", nil, "apps/team-a/", teamA, Location{"apps/team-a/quota.yaml", 0, "team-a"}, "", nil},
		{"a leading ./ and a doubled slash", nil, "./apps//team-a", teamA, Location{"apps/team-a/quota.yaml", 0, "team-a"}, "", nil},
		{"the namespace's own Namespace object beside the quota", nil, "apps/own/quota.yaml", teamA, Location{"apps/own/quota.yaml", 1, "team-a"}, "", nil},
		{"nothing there: not refused, not found", nil, "apps/team-a/none.yaml", teamA, Location{}, "", ErrSourceNotFound},
		{"an absolute path", nil, "/apps/team-a", teamA, Location{}, "absolute", nil},
		{"a .. that climbs to another team", nil, "apps/team-a/../team-b/quota.yaml", teamA, Location{}, `".."`, nil},
		{"a .. that climbs out of --git-path", nil, "apps/../outside/team-a/quota.yaml", teamA, Location{}, `".."`, nil},
		{"a .. that goes nowhere is refused too", nil, "apps/team-a/..", teamA, Location{}, `".."`, nil},
		{"a backslash", nil, `apps\team-a`, teamA, Location{}, "backslash", nil},
		{"a control character", nil, "apps/team-a\x00", teamA, Location{}, "control character", nil},
		{"outside every --git-path prefix", nil, "outside/team-a/quota.yaml", teamA, Location{}, "not under --git-path (apps)", nil},
		{"a prefix that only starts the same: segments, not strings", []string{"apps/team-a"}, "apps/team-ab/quota.yaml", rq("team-ab", "compute"), Location{}, "not under --git-path (apps/team-a)", nil},
		{"a document of another namespace", nil, "apps/team-ab/quota.yaml", teamA, Location{}, "apps/team-ab/quota.yaml#0 defines ResourceQuota compute in namespace team-ab", nil},
		{"a kustomization's namespace: overrides the document's own", nil, "apps/team-b/quota.yaml", teamA, Location{}, "ResourceQuota compute in namespace team-b (set by a kustomization that builds it)", nil},
		{"a kustomization's namespace: refuses the directory too", nil, "apps/team-b", teamA, Location{}, "namespace team-b", nil},
		{"a file two kustomizations build into two namespaces", nil, "apps/team-c/quota.yaml", teamA, Location{}, "in namespace team-c", nil},
		{"a namespace-less document no kustomization places", nil, "apps/loose/quota.yaml", teamA, Location{}, "apps/loose/quota.yaml#0 defines ResourceQuota compute without a namespace", nil},
		{"two namespaces in one file", nil, "apps/mixed/quotas.yaml", teamA, Location{}, "apps/mixed/quotas.yaml#1 defines ResourceQuota compute in namespace team-c", nil},
		{"a cluster-scoped object", nil, "apps/own-cluster/quota.yaml", teamA, Location{}, "the cluster-scoped ClusterRole team-a-admin", nil},
		{"the whole --git-path: other namespaces below it", nil, "apps", teamA, Location{}, "defines", nil},
		{"the whole repository under no prefix", []string{}, ".", teamA, Location{}, "defines", nil},
		{"a target without a namespace", nil, "apps/team-a", lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "team-a"}, Location{}, "namespaced", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := ix
			if tt.prefixes != nil {
				var err error
				if ix, err = Build(repo, tt.prefixes); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ix.LocateIn(tt.path, tt.target)
			switch {
			case tt.refused != "":
				if !errors.Is(err, ErrGitPathRefused) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("LocateIn(%q) = %+v, %v; want refused: %s", tt.path, got, err, tt.refused)
				}
				var ge *GitPathError
				if !errors.As(err, &ge) || ge.Path != tt.path {
					t.Errorf("error %#v does not name the path %q", err, tt.path)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || errors.Is(err, ErrGitPathRefused) {
					t.Fatalf("LocateIn(%q) = %v; want %v", tt.path, err, tt.wantErr)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("LocateIn(%q) = %+v, %v; want %+v", tt.path, got, err, tt.want)
				}
			}
		})
	}
}

func TestCleanGitPath(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"clusters/prod", "clusters/prod", ""},
		{" clusters/prod/ ", "clusters/prod", ""},
		{"./clusters//prod/.", "clusters/prod", ""},
		{".", "", ""},
		{"", "", "empty"},
		{"/clusters/prod", "", "absolute"},
		{"clusters/../prod", "", `".."`},
		{"..", "", `".."`},
		{`clusters\prod`, "", "backslash"},
		{"clusters/\tprod", "", "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CleanPath(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("CleanPath(%q) = %q, %v; want an error saying %s", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}
