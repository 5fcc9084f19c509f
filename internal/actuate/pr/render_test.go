package pr

import (
	"strings"
	"testing"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestBranch(t *testing.T) {
	tests := []struct {
		cluster string
		c       lifecycle.Change
		want    string
	}{
		{"prod", quotaChange("10", "12"), "kustos/prod/quota/team-a/compute"},
		{"", quotaChange("10", "12"), "kustos/quota/team-a/compute"},
		{"EU West/1", lifecycle.Change{Detector: "quota", Target: lifecycle.Target{Namespace: "a", Name: "..x.lock"}}, "kustos/eu-west-1/quota/a/x"},
		{"p", lifecycle.Change{Detector: "expiry", Target: lifecycle.Target{Kind: "Namespace", Name: "team~b"}}, "kustos/p/expiry/_cluster/team-b"},
	}
	for _, tt := range tests {
		w := NewWriter(nil, nil, Config{Cluster: tt.cluster})
		if got := w.Branch(tt.c); got != tt.want {
			t.Errorf("Branch(%q, %v) = %q, want %q", tt.cluster, tt.c.Target, got, tt.want)
		}
	}
}

func TestTitle(t *testing.T) {
	c := quotaChange("10", "12")
	tests := []struct {
		name string
		c    lifecycle.Change
		ed   yamledit.Result
		want string
	}{
		{"raise", c, yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{{Path: []string{"spec", "hard", "requests.cpu"}, Old: "10", New: "12"}}},
			"quota(team-a/compute): raise requests.cpu 10 → 12"},
		{"two fields", c, yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{
			{Path: []string{"spec", "hard", "requests.cpu"}, Old: "10", New: "12"},
			{Path: []string{"spec", "hard", "requests.memory"}, Old: "20Gi", New: "24Gi"}}},
			"quota(team-a/compute): raise requests.cpu 10 → 12, requests.memory 20Gi → 24Gi"},
		{"mixed", c, yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{
			{Path: []string{"spec", "hard", "pods"}, Old: "10", New: "5"},
			{Path: []string{"metadata", "labels", "x"}, New: "y", Created: true}}},
			"quota(team-a/compute): set pods 10 → 5, metadata.labels.x to y"},
		{"scale", lifecycle.Change{Detector: "inactivity", Target: lifecycle.Target{Namespace: "lab", Name: "vm1"}, Edit: lifecycle.Edit{Op: lifecycle.EditScaleToZero}},
			yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{{Path: []string{"spec", "replicas"}, Old: "3", New: "0"}}},
			"inactivity(lab/vm1): scale to zero (replicas 3 → 0)"},
		{"a resume names itself", lifecycle.Change{Detector: "inactivity", Target: lifecycle.Target{Namespace: "lab", Name: "vm1"}, Verb: "resume",
			Edit: lifecycle.Edit{Op: lifecycle.EditSetFields}},
			yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{{Path: []string{"spec", "replicas"}, Old: "0", New: "3"}}},
			"inactivity(lab/vm1): resume (replicas 0 → 3)"},
	}
	for _, tt := range tests {
		if got := Title(tt.c, &tt.ed); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestBodyEscapes: text from the cluster cannot inject a marker, HTML or table cells.
func TestBodyEscapes(t *testing.T) {
	c := quotaChange("10", "12")
	c.Evidence[0]["event"] = "bad <!-- kustos:key=quota/x/y --> | cell\nsecond line"
	c.Evidence[0]["ownerName"] = "we`b"
	ed := &yamledit.Result{Changed: true, Fields: []yamledit.FieldResult{{Path: []string{"spec", "hard", "requests.cpu"}, Old: "10", New: "12"}}}
	b := Body(c, ed, index.Location{Path: "a.yaml"}, "prod")
	if k, ok := MarkerKey(b); !ok || k != c.Key {
		t.Errorf("marker %q", k)
	}
	if strings.Count(b, "<!--") != 1 || !strings.Contains(b, "> second line") || !strings.Contains(b, "`we'b`") {
		t.Errorf("body:\n%s", b)
	}
	if Body(c, ed, index.Location{Path: "a.yaml"}, "prod") != b {
		t.Error("body is not deterministic")
	}
	long := strings.Repeat("é", maxBody)
	if got := truncate(long, 11); got != "éééé…" {
		t.Errorf("truncate: %q", got)
	}
}

func TestIsOwnCommit(t *testing.T) {
	key := lifecycle.NewKey("quota", "team-a", "compute")
	c := lifecycle.Change{Key: key, Summary: "raise"}
	commit := func(msg, tree string) *gh.Commit {
		return &gh.Commit{Message: gh.String(msg), Tree: &gh.Tree{SHA: gh.String(tree)}}
	}
	cases := []struct {
		name string
		cm   *gh.Commit
		want bool
	}{
		{"Kustos's message on its tree", commit(CommitMessage(c, "title", "t1"), "t1"), true},
		{"CRLF line ends", commit(strings.ReplaceAll(CommitMessage(c, "title", "t1"), "\n", "\r\n"), "t1"), true},
		{"Kustos's message on another tree (an amend)", commit(CommitMessage(c, "title", "t1"), "t2"), false},
		{"another key", commit(CommitMessage(lifecycle.Change{Key: lifecycle.NewKey("quota", "b", "c")}, "title", "t1"), "t1"), false},
		{"no tree trailer (written before it existed)", commit("title\n\nKustos-Key: "+string(key), "t1"), false},
		{"trailers not in the last paragraph", commit("title\n\nKustos-Key: "+string(key)+"\nKustos-Tree: t1\n\nmore", "t1"), false},
		{"two tree trailers", commit("title\n\nKustos-Key: "+string(key)+"\nKustos-Tree: t1\nKustos-Tree: t2", "t1"), false},
		{"an empty tree trailer on a commit without tree", commit("title\n\nKustos-Key: "+string(key)+"\nKustos-Tree: ", ""), false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsOwnCommit(tc.cm, key); got != tc.want {
				t.Errorf("IsOwnCommit = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGroupTitleNamesResumes: a group's title counts resumes apart from the edits they share an
// operation with, so that a reviewer tells a resume from a pause.
func TestGroupTitleNamesResumes(t *testing.T) {
	vm := func(verb string, op lifecycle.EditOp) lifecycle.Change {
		return lifecycle.Change{Detector: "inactivity", Target: lifecycle.Target{Kind: "VirtualMachine"}, Verb: verb, Edit: lifecycle.Edit{Op: op}}
	}
	got := groupSummary([]lifecycle.Change{vm("resume", lifecycle.EditSetFields), vm("", lifecycle.EditSetFields), vm("resume", lifecycle.EditSetFields), vm("", lifecycle.EditScaleToZero)})
	if want := "resume 2 VirtualMachines, edit 1 VirtualMachine, scale 1 VirtualMachine to zero"; got != want {
		t.Errorf("groupSummary = %q, want %q", got, want)
	}
}
