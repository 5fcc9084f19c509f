package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestPRCloseDuringReplay: Kustos opens a PR and crashes before its Lease names it; a human
// closes that PR; the next Kustos, replaying the pending decision, learns of the close and
// opens no second PR.
func TestPRCloseDuringReplay(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	stateNS := newNamespace(t, "kustos-state", nil)
	crashAfterPropose(t, g, ns, stateNS)
	p := g.waitPR(t, "the PR of the crashed Kustos", func(p githubtest.PullRequest) bool { return p.State == "open" })
	g.s.ClosePR(ghOwner, ghRepo, p.Number)

	k2 := startKustos(t, g.prMode(func(o *app.Options) { o.StateNamespace = stateNS }))
	defer func() {
		if t.Failed() {
			t.Logf("second Kustos:\n%s", k2.logs.String())
		}
	}()
	g.declined(t, stateNS, ns, p.Number)
}

// TestPRRebuiltWhenBaseMoves: a human commit to the base branch makes the open PR conflict;
// Kustos rebuilds it on the new base (auto-merge off: people must be able to merge it).
func TestPRRebuiltWhenBaseMoves(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	k := startKustos(t, g.prMode(nil))
	overQuota(t, ns, 5)
	p := g.waitPR(t, "a PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	first := p.HeadSHA

	// The line right above the value changes on the base: a conflict for Git.
	moved := strings.Replace(quotaManifest("3"), "# CPU: agreed with the team.", "# CPU: agreed with the team in November.", 1)
	base := g.s.PushBaseCommit(ghOwner, ghRepo, "main", "Reword the CPU comment", map[string]string{g.path: moved})

	p = g.waitPR(t, "the PR rebuilt on the new base", func(p githubtest.PullRequest) bool {
		parents := g.s.CommitParents(ghOwner, ghRepo, p.HeadSHA)
		return p.HeadSHA != first && len(parents) == 1 && parents[0] == base
	})
	want := strings.Replace(moved, `requests.cpu: "3"`, `requests.cpu: "10"`, 1)
	if got := g.fileAt(t, p.HeadSHA); got != want {
		t.Fatalf("file on the rebuilt branch\n got:\n%s\nwant:\n%s", got, want)
	}
	l := waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	if l.Annotations[state.AnnotationHead] != p.HeadSHA {
		t.Errorf("lease head %q, PR head %q", l.Annotations[state.AnnotationHead], p.HeadSHA)
	}
	g.onePR(t, 3*time.Second)
}

// TestPRForeignPushIsNotMerged: someone pushes to the kustos/* branch; even with auto-merge on
// and green checks, Kustos does not merge (or overwrite) it and says so once.
func TestPRForeignPushIsNotMerged(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci")
	k := startKustos(t, g.prMode(func(o *app.Options) { o.PR.AutoMerge = true }))
	overQuota(t, ns, 5)
	p := g.waitPR(t, "a PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))

	foreign := g.s.PushBaseCommit(ghOwner, ghRepo, p.Head, "Bump to 12 instead", map[string]string{g.path: quotaManifest("12")})
	g.s.SetCheck(ghOwner, ghRepo, foreign, "ci", "success")
	evs := waitEvents(t, ns, pipeline.ReasonForeignCommit, 1)
	if evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, foreign[:12]) {
		t.Errorf("ForeignCommit event %s: %q", evs[0].Type, evs[0].Message)
	}
	g.onePR(t, 4*time.Second)
	if p, _ = g.s.PR(ghOwner, ghRepo, p.Number); p.Merged || p.State != "open" || p.HeadSHA != foreign {
		t.Fatalf("PR after a foreign push: state %s merged %v head %s (foreign %s)", p.State, p.Merged, p.HeadSHA, foreign)
	}
	never(t, ns, pipeline.ReasonForeignCommit, 1, time.Second)
}

// TestPRCollidingLeaseNames: team-x/a-compute and team-x-a/compute share the conventional Lease
// name state-team-x-a-compute. Each gets its own Lease (the second a hashed name), its own PR, and
// each PR is merged only for its own key.
func TestPRCollidingLeaseNames(t *testing.T) {
	ns1 := newNamespace(t, "collide", nil)
	ns2 := ns1 + "-a"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2}}
	if err := k8s.Create(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), nsObj) })
	if state.LeaseName(lifecycle.NewKey("quota", ns1, "a-compute")) != state.LeaseName(lifecycle.NewKey("quota", ns2, "compute")) {
		t.Fatal("the two quotas do not share a conventional Lease name (state-<namespace>-<quota>); the test proves nothing")
	}

	g := newGitOps(t, ns1)
	manifest := func(name string) string {
		return strings.Replace(quotaManifest("3"), "name: compute", "name: "+name, 1)
	}
	dir2 := "clusters/e2e/" + ns2 + "/"
	g.s.PushBaseCommit(ghOwner, ghRepo, "main", "Add the second team", map[string]string{
		"clusters/e2e/" + ns1 + "/quota.yaml": manifest("a-compute"),
		"clusters/e2e/kustomization.yaml":     "resources:\n  - " + ns1 + "\n  - " + ns2 + "\n",
		dir2 + "kustomization.yaml":           "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns2 + "\nresources:\n  - quota.yaml\n",
		dir2 + "quota.yaml":                   manifest("compute"),
	})
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci")
	k := startKustos(t, g.prMode(func(o *app.Options) { o.PR.AutoMerge = true }))
	for _, q := range []struct{ ns, name string }{{ns1, "a-compute"}, {ns2, "compute"}} {
		newQuota(t, q.ns, q.name, rl("requests.cpu", "3", "pods", "50"))
		if err := k8s.Create(context.Background(), deploymentOf(q.ns, "web", 5, "2")); err != nil {
			t.Fatal(err)
		}
	}
	var prs []githubtest.PullRequest
	eventually(t, "two open PRs", func() bool {
		prs = g.prs()
		return len(prs) == 2 && prs[0].State == "open" && prs[1].State == "open"
	})
	for _, p := range prs {
		g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci", "success")
	}
	eventually(t, "both PRs merged", func() bool {
		prs = g.prs()
		return len(prs) == 2 && prs[0].Merged && prs[1].Merged
	})
	for _, q := range []struct{ ns, name string }{{ns1, "a-compute"}, {ns2, "compute"}} {
		file := "clusters/e2e/" + q.ns + "/quota.yaml"
		got, _ := g.s.FileAt(ghOwner, ghRepo, "main", file)
		if want := strings.Replace(manifest(q.name), `"3"`, `"10"`, 1); got != want {
			t.Errorf("%s after both merges\n got:\n%s\nwant:\n%s", file, got, want)
		}
	}
	var leases coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &leases, client.InNamespace(k.opts.StateNamespace)); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, l := range leases.Items {
		if key := l.Annotations[state.AnnotationKey]; strings.Contains(key, ns1) {
			keys[key] = l.Name
		}
	}
	k1, k2 := "quota/"+ns1+"/a-compute", "quota/"+ns2+"/compute"
	if keys[k1] == "" || keys[k2] == "" || keys[k1] == keys[k2] {
		t.Fatalf("want one Lease per key, got %v", keys)
	}
}

// TestPRBehindIsUpdatedAndMerged: under "require branches to be up to date", an unrelated commit
// on the base leaves the PR behind; with auto-merge on Kustos rebuilds it on the new base
// instead of waiting forever, and merges it once the check on the new head is green.
func TestPRBehindIsUpdatedAndMerged(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci")
	g.s.SetRequireUpToDate(ghOwner, ghRepo, true)
	k := startKustos(t, g.prMode(func(o *app.Options) { o.PR.AutoMerge = true }))
	overQuota(t, ns, 5)
	p := g.waitPR(t, "a PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	first := p.HeadSHA
	// The base moves first, then the check turns green: the PR is never clean before it is
	// rebuilt, only behind.
	base := g.s.PushBaseCommit(ghOwner, ghRepo, "main", "Unrelated change", map[string]string{"README.md": "# GitOps of the platform team\n"})
	g.s.SetCheck(ghOwner, ghRepo, first, "ci", "success")
	p = g.waitPR(t, "the PR rebuilt on the new base", func(p githubtest.PullRequest) bool {
		parents := g.s.CommitParents(ghOwner, ghRepo, p.HeadSHA)
		return p.HeadSHA != first && len(parents) == 1 && parents[0] == base
	})
	if p.Merged {
		t.Fatal("merged before the check on the new head ran")
	}
	g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci", "success")
	p = g.waitPR(t, "the PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if got, want := g.fileAt(t, "main"), quotaManifest("10"); got != want {
		t.Fatalf("base after the merge\n got:\n%s\nwant:\n%s", got, want)
	}
}
