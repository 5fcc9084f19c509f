package pr

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestProposeDeleteUnlistsFile: a Delete of the only document of a file removes the file and
// its entry in every kustomization that lists it, in one commit, keeping the kustomizations'
// comments and other entries; a kustomization that lists the directory is left alone. Proposing
// again changes nothing, so the tree TreeAfter computes locally for several files is the one
// GitHub built.
func TestProposeDeleteUnlistsFile(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const (
		quota     = "clusters/staging/team-a/quota.yaml"
		teamKust  = "clusters/staging/team-a/kustomization.yaml"
		extraKust = "clusters/staging/extra/kustomization.yaml"
		rootKust  = "clusters/staging/kustomization.yaml"
	)
	e.s.PushBaseCommit(owner, repoName, "main", "staging: limits and an extra build", map[string]string{
		teamKust: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\nresources:\n" +
			"  # the quota, resized by Kustos\n  - ./quota.yaml\n  - limits.yaml   # container defaults\n",
		"clusters/staging/team-a/limits.yaml": "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n",
		extraKust:                             "resources:\n- ../team-a/quota.yaml # shared quota\n- cm.yaml\n",
		"clusters/staging/extra/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
	})
	rootBefore, _ := e.s.FileAt(owner, repoName, "main", rootKust)

	w := e.writer(Config{Cluster: "staging", Paths: []string{"clusters/staging"}})
	c := quotaChange("", "")
	c.Detector, c.Key, c.Edit = "expiry", lifecycle.NewKey("expiry", "team-a", "compute"), lifecycle.Edit{Op: lifecycle.EditDelete}
	e.s.ResetRequests()
	res, err := w.Propose(ctx, c, ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || !res.Created || res.Location.Path != quota {
		t.Fatalf("result %+v", res)
	}
	if n := e.s.CountRequests("POST", "/repos/{owner}/{repo}/git/trees"); n != 1 {
		t.Errorf("%d trees created, want one tree for all files", n)
	}
	if n := e.s.CountRequests("POST", "/repos/{owner}/{repo}/git/commits"); n != 1 {
		t.Errorf("%d commits created, want one", n)
	}
	prs := e.s.PRs(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("want one PR, have %d", len(prs))
	}
	p := prs[0]
	for _, want := range []string{"Deletes `" + quota + "`", teamKust, extraKust} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("PR body lacks %q: a reviewer must see every file the PR touches\n%s", want, p.Body)
		}
	}
	head := e.s.BranchSHA(owner, repoName, res.Branch)
	if ps := e.s.CommitParents(owner, repoName, head); len(ps) != 1 || ps[0] != e.s.BranchSHA(owner, repoName, "main") {
		t.Errorf("branch head has parents %v, want exactly the base head", ps)
	}

	tests := []struct {
		path    string
		want    string
		deleted bool
	}{
		{path: quota, deleted: true},
		{path: teamKust, want: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\nresources:\n" +
			"  - limits.yaml   # container defaults\n"},
		{path: extraKust, want: "resources:\n- cm.yaml\n"},
		{path: rootKust, want: rootBefore},
		{path: "clusters/staging/team-a/limits.yaml", want: "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := e.s.FileAt(owner, repoName, res.Branch, tt.path)
			switch {
			case tt.deleted && ok:
				t.Errorf("%s still on %s", tt.path, res.Branch)
			case !tt.deleted && !ok:
				t.Errorf("%s missing on %s", tt.path, res.Branch)
			case !tt.deleted && got != tt.want:
				t.Errorf("%s on %s:\n--- got\n%s\n--- want\n%s", tt.path, res.Branch, got, tt.want)
			}
		})
	}

	res, err = w.Propose(ctx, c, ProposeOptions{})
	if err != nil || res.Committed || res.Created || !res.Adopted {
		t.Errorf("again: %+v %v", res, err)
	}
	if got := e.s.BranchSHA(owner, repoName, res.Branch); got != head {
		t.Errorf("branch moved %s → %s", head, got)
	}
}

// TestTreeAfterSeveralFiles: the locally computed tree for several changes at once equals the
// tree of the commit that makes them, including a deletion that empties a directory.
func TestTreeAfterSeveralFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	base := e.s.PushBaseCommit(owner, repoName, "main", "lonely file", map[string]string{"clusters/lonely/only.yaml": "a: 1\n"})
	snap, err := e.repo.Snapshot(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		files   []FileChange
		updates map[string]string
		deletes []string
	}{
		{"one edit", []FileChange{{Path: quotaPath, Content: []byte("x: 1\n")}}, map[string]string{quotaPath: "x: 1\n"}, nil},
		{"edits in two directories and a deletion",
			[]FileChange{
				{Path: "clusters/prod/team-a/kustomization.yaml", Content: []byte("resources: []\n")},
				{Path: "clusters/staging/team-a/quota.yaml"},
				{Path: "README.md", Content: []byte("# changed\n")},
			},
			map[string]string{"clusters/prod/team-a/kustomization.yaml": "resources: []\n", "README.md": "# changed\n"},
			[]string{"clusters/staging/team-a/quota.yaml"}},
		{"a deletion that empties a directory", []FileChange{{Path: "clusters/lonely/only.yaml"}}, nil, []string{"clusters/lonely/only.yaml"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := snap.TreeAfter(tt.files...)
			if err != nil {
				t.Fatal(err)
			}
			// Build the same change as a commit on a scratch branch and read its tree.
			branch := fmt.Sprintf("scratch/%d", i)
			if _, err := e.gh.CreateRef(ctx, branch, base); err != nil {
				t.Fatal(err)
			}
			sha := e.s.PushBaseCommit(owner, repoName, branch, tt.name, tt.updates, tt.deletes...)
			cm, err := e.gh.GetCommit(ctx, sha)
			if err != nil {
				t.Fatal(err)
			}
			if want := cm.GetTree().GetSHA(); got != want {
				t.Errorf("TreeAfter = %s, the commit's tree is %s", got, want)
			}
		})
	}
	t.Run("a missing file is an error", func(t *testing.T) {
		if _, err := snap.TreeAfter(FileChange{Path: "clusters/prod/none.yaml", Content: []byte("a: 1\n")}); err == nil {
			t.Error("TreeAfter of a file that does not exist succeeded")
		}
	})
	t.Run("the same path twice is an error", func(t *testing.T) {
		if _, err := snap.TreeAfter(FileChange{Path: quotaPath}, FileChange{Path: quotaPath, Content: []byte("a: 1\n")}); err == nil {
			t.Error("TreeAfter of one path changed twice succeeded")
		}
	})
}
