package pr

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// goldenGroupEnv seeds acme/gitops from testdata/group/<name>/input.
func goldenGroupEnv(t *testing.T, name string) *env {
	t.Helper()
	return newEnvFrom(t, filepath.Join("testdata", "group", name, "input"))
}

func expiring(ns, name string, op lifecycle.EditOp) lifecycle.Change {
	t := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name}
	return lifecycle.Change{
		Key: lifecycle.KeyFor("expiry", t), Detector: "expiry", Target: t, Edit: lifecycle.Edit{Op: op},
		Reason: "ExpiryDue", Summary: "apps/v1 Deployment " + ns + "/" + name + " expired at 2026-11-27T06:00:00Z; removing it",
		Evidence: []map[string]string{{"owner": "ci@example.com", "deadline": "2026-11-27T06:00:00Z"}},
		OptOut: &lifecycle.OptOut{Declined: "the environment stays.", Annotation: "kustos.io/expiry-ignore", Value: "true",
			Keep: "its owner extends it with the link in Kustos's notice"},
	}
}

// branchMatches asserts that every file of testdata/group/<name>/expected is on branch byte for
// byte, and that every input file missing from expected is gone from it.
func branchMatches(t *testing.T, e *env, name, branch string) {
	t.Helper()
	dir := filepath.Join("testdata", "group", name)
	err := filepath.WalkDir(filepath.Join(dir, "input"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "input"), p)
		want, err := os.ReadFile(filepath.Join(dir, "expected", rel))
		got, ok := e.s.FileAt(owner, repoName, branch, filepath.ToSlash(rel))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if ok {
				t.Errorf("%s is still on %s; expected/ says it is deleted", rel, branch)
			}
		case err != nil:
			return err
		case !ok:
			t.Errorf("%s is missing on %s", rel, branch)
		case got != string(want):
			t.Errorf("%s on %s differs from expected/:\n--- got\n%s\n--- want\n%s", rel, branch, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestProposeGroupGolden: one commit edits every member's manifest — two documents of one file
// deleted, two files deleted and taken out of their kustomization, one Deployment scaled to
// zero — and leaves out, without failing the others, a member whose manifest is gone (done) and
// one whose manifest no longer holds what the detector saw (a conflict).
func TestProposeGroupGolden(t *testing.T) {
	ctx := context.Background()
	e := goldenGroupEnv(t, "previews")
	w := e.writer(Config{})
	g := lifecycle.Group{Key: lifecycle.GroupKey("expiry", "namespace", "team-a"), Label: "namespace team-a", Namespace: "team-a"}
	conflict := expiring("team-a", "lab", lifecycle.EditSetFields)
	conflict.Key = lifecycle.KeyFor("expiry", lifecycle.Target{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "lab-conflict"})
	conflict.Edit.Fields = []lifecycle.FieldChange{{Path: []string{"spec", "replicas"}, From: "7", To: "1"}}
	members := []Member{
		{Change: expiring("team-a", "pr-1", lifecycle.EditDelete)},
		{Change: expiring("team-a", "pr-3", lifecycle.EditDelete)},
		{Change: expiring("team-a", "pr-4", lifecycle.EditDelete)},
		{Change: expiring("team-a", "pr-5", lifecycle.EditDelete)},
		{Change: expiring("team-a", "lab", lifecycle.EditScaleToZero)},
		{Change: expiring("team-a", "pr-9", lifecycle.EditDelete)},
		{Change: conflict},
	}
	res, err := w.ProposeGroup(ctx, g, members, "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Number == 0 || res.Branch != "kustos/prod/expiry/group-namespace/team-a" {
		t.Fatalf("result %+v", res.Result)
	}
	for _, m := range members[:5] {
		if r := res.Members[m.Change.Key]; !r.Included {
			t.Errorf("%s not included: %+v", m.Change.Key, r)
		}
	}
	if r := res.Members[members[5].Change.Key]; !r.AlreadyInBase || r.Included {
		t.Errorf("pr-9 (no manifest): %+v, want already done", r)
	}
	// The conflict's target is the lab Deployment's manifest too, but its values moved on.
	if r := res.Members[conflict.Key]; r.Included || !errors.Is(r.Err, index.ErrSourceNotFound) && !errors.Is(r.Err, yamledit.ErrConflict) {
		t.Errorf("conflicting member: %+v", r)
	}
	branchMatches(t, e, "previews", res.Branch)

	prs := e.s.PRs(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d PRs, want 1", len(prs))
	}
	pr := prs[0]
	if pr.Title != "expiry(namespace team-a): delete 4 Deployments, scale 1 Deployment to zero" {
		t.Errorf("title %q", pr.Title)
	}
	for _, want := range []string{Marker(g.Key), "5 targets, one commit", "| Deployment `team-a/pr-4` | delete | `clusters/prod/team-a/pr-4.yaml` (document 1) |",
		"| Deployment `team-a/lab` | scale to zero (replicas 3 → 0) |", "#### Deployment `team-a/pr-3`", "To keep it: its owner extends it with the link in Kustos's notice.",
		"kubectl annotate namespace team-a 'kustos.io/expiry-ignore=true'"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	if strings.Contains(pr.Body, "pr-9") || strings.Contains(pr.Body, "lab-conflict") {
		t.Errorf("body names a member that is not in the commit:\n%s", pr.Body)
	}
	cm, err := e.gh.GetCommit(ctx, res.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members[:5] {
		if !IsOwnCommit(cm, m.Change.Key) {
			t.Errorf("the group's commit is not Kustos's own for member %s:\n%s", m.Change.Key, cm.GetMessage())
		}
	}
	if IsOwnCommit(cm, members[5].Change.Key) || !IsOwnCommit(cm, g.Key) {
		t.Errorf("own-commit check: a member not in it passes, or the group fails:\n%s", cm.GetMessage())
	}

	// Again with the same members: nothing is written.
	again, err := w.ProposeGroup(ctx, g, members, res.HeadSHA)
	if err != nil || again.Committed || again.Created || again.Edited || again.Number != res.Number {
		t.Errorf("again: %+v, %v", again.Result, err)
	}
	// One member taken out: one new commit, the PR updated, pr-5's file back.
	fewer := append([]Member{}, members[:3]...)
	fewer = append(fewer, members[4])
	out, err := w.ProposeGroup(ctx, g, fewer, res.HeadSHA)
	if err != nil || !out.Committed || out.Number != res.Number || out.Created {
		t.Fatalf("taking pr-5 out: %+v, %v", out.Result, err)
	}
	if got, ok := e.s.FileAt(owner, repoName, res.Branch, "clusters/prod/team-a/pr-5.yaml"); !ok || got == "" {
		t.Errorf("pr-5.yaml is not back on the branch")
	}
	if k, _ := e.s.FileAt(owner, repoName, res.Branch, "clusters/prod/team-a/kustomization.yaml"); !strings.Contains(k, "pr-5.yaml") || strings.Contains(k, "pr-4.yaml") {
		t.Errorf("kustomization after taking pr-5 out:\n%s", k)
	}
}

// TestGroupBodyCut: past GitHub's limit the body counts the members it does not show, and the
// table still lists every one.
func TestGroupBodyCut(t *testing.T) {
	g := lifecycle.Group{Key: lifecycle.GroupKey("expiry", "namespace", "team-a"), Label: "namespace team-a"}
	var included []lifecycle.Change
	results := map[lifecycle.Key]MemberResult{}
	for i := 0; i < 100; i++ {
		c := expiring("team-a", "preview-"+strings.Repeat("x", 10)+string(rune('a'+i%26))+strings.Repeat("y", i), lifecycle.EditDelete)
		c.Summary = strings.Repeat("a long reason. ", 100)
		included = append(included, c)
		results[c.Key] = MemberResult{Included: true, Location: index.Location{Path: "p.yaml"}}
	}
	body := GroupBody(g, included, results, nil, "prod")
	if len(body) > maxBody {
		t.Fatalf("body has %d characters, more than %d", len(body), maxBody)
	}
	if !strings.Contains(body, "more targets are not shown here") {
		t.Errorf("a cut body does not say so")
	}
	for _, c := range included {
		if !strings.Contains(body, "`"+scope(c.Target)+"` | delete |") {
			t.Fatalf("the table lacks %s", c.Target)
		}
	}
}
