package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/actuate/group"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestFirstPRReadsTheRepositoryOnce: the PR mode of a fresh process learns the default branch
// once, for the GitHub calls and the Git reader alike, and its first PR costs the calls of any
// new PR plus that one read.
func TestFirstPRReadsTheRepositoryOnce(t *testing.T) {
	s := githubtest.New(t, githubtest.Options{})
	s.SeedRepo("acme", "gitops", "main", map[string]string{
		"team-a/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: compute\n  namespace: team-a\nspec:\n  hard:\n    requests.cpu: \"10\"\n",
	})
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(s.Token()), 0o600); err != nil {
		t.Fatal(err)
	}
	o := validPR()
	o.PR.GitHub = github.Config{APIURL: s.URL(), TokenFile: tok, Repository: "acme/gitops"}
	o.PR.ClientOptions = []github.Option{github.WithMutationInterval(0)}
	m, err := group.NewMode(o.PR, o.Now, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	c := lifecycle.Change{
		Key: lifecycle.NewKey("quota", "team-a", "compute"), Detector: "quota", Reason: "QuotaResizeRecommended",
		Target: lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-a", Name: "compute"},
		Edit: lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: []lifecycle.FieldChange{
			{Path: []string{"spec", "hard", "requests.cpu"}, From: "10", To: "12"}}},
	}
	if _, err := m.Actuator.Apply(context.Background(), c, time.Now(), lifecycle.ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	rest, repoReads := 0, 0
	for _, r := range s.Requests() {
		if r.Git {
			continue
		}
		rest++
		if r.Method == "GET" && r.Path == "/repos/{owner}/{repo}" {
			repoReads++
		}
	}
	if repoReads != 1 {
		t.Errorf("the repository was read %d times, want once", repoReads)
	}
	// BenchmarkNewPR's 7 calls of a new PR, plus the default branch once per process.
	if rest > 8 {
		t.Errorf("the first PR of a process cost %d REST calls, want at most 8", rest)
	}
}
