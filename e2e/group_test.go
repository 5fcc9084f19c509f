package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// previewManifest is a preview Deployment as CI writes it into the GitOps repository.
func previewManifest(name string) string {
	return "# preview of merge request " + name + ", created by CI\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name +
		"\n  annotations:\n    kustos.io/owner: ci@example.com\n    kustos.io/ttl: 3s\nspec:\n  replicas: 0\n"
}

// seedPreviews commits n previews per namespace (one file each, listed in the namespace's
// kustomization) and creates them in the cluster, as a CI job would; it returns their names.
func seedPreviews(t *testing.T, g *gitops, namespaces []string, n int) []string {
	t.Helper()
	files := map[string]string{"clusters/e2e/kustomization.yaml": "resources:\n  - " + strings.Join(namespaces, "\n  - ") + "\n"}
	var names []string
	for _, ns := range namespaces {
		kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n"
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("preview-%d", i)
			files["clusters/e2e/"+ns+"/"+name+".yaml"] = previewManifest(name)
			kust += "  - " + name + ".yaml\n"
			names = append(names, ns+"/"+name)
		}
		files["clusters/e2e/"+ns+"/kustomization.yaml"] = kust
	}
	g.s.PushBaseCommit(ghOwner, ghRepo, "main", "CI: previews", files)
	for _, ns := range namespaces {
		for i := 1; i <= n; i++ {
			newEnvironment(t, ns, fmt.Sprintf("preview-%d", i), map[string]string{expiry.AnnotationOwner: "ci@example.com", expiry.AnnotationTTL: "3s"})
		}
	}
	return names
}

// TestExpiryGroupedPRs: 30 previews of one CI run in 3 namespaces expire together: one pull
// request per namespace, each one commit deleting its namespace's 10 files. One preview is
// extended while its pull request is open: it is taken out (the pull request is updated, with a
// comment) and the rest are merged once the checks pass; the extended one stays in Git.
func TestExpiryGroupedPRs(t *testing.T) {
	namespaces := []string{newNamespace(t, "group-a", nil), newNamespace(t, "group-b", nil), newNamespace(t, "group-c", nil)}
	g := newGitOps(t, namespaces[0])
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci/validate")
	seedPreviews(t, g, namespaces, 10)
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		o.PR.GroupWindow = 4 * time.Second
		expiryOptions(o)
	}))
	dumpOnFailure(t, k)

	var prs []githubtest.PullRequest
	eventually(t, "one pull request per namespace carrying its 10 previews", func() bool {
		prs = g.prs()
		if len(prs) > 3 {
			t.Fatalf("%d pull requests for 3 namespaces: %+v", len(prs), titles(prs))
		}
		for _, p := range prs {
			if strings.Count(p.Body, "/preview-") < 10 {
				return false
			}
		}
		return len(prs) == 3
	})
	byNS := map[string]githubtest.PullRequest{}
	for _, p := range prs {
		for _, ns := range namespaces {
			if strings.HasSuffix(p.Head, "/group-namespace/"+ns) {
				byNS[ns] = p
			}
		}
		if !strings.Contains(p.Title, "delete 10 Deployments") {
			t.Errorf("#%d title %q", p.Number, p.Title)
		}
	}
	if len(byNS) != 3 {
		t.Fatalf("pull requests not one per namespace: %v", titles(prs))
	}
	for _, ns := range namespaces {
		for i := 1; i <= 10; i++ {
			if _, ok := g.s.FileAt(ghOwner, ghRepo, byNS[ns].Head, fmt.Sprintf("clusters/e2e/%s/preview-%d.yaml", ns, i)); ok {
				t.Errorf("%s/preview-%d.yaml is still on %s", ns, i, byNS[ns].Head)
			}
		}
	}
	if n := g.s.CountRequests("POST", "/repos/{owner}/{repo}/pulls"); n != 3 {
		t.Errorf("%d pull requests created, want 3", n)
	}

	// The owner of group-b/preview-7 wants it for a day more (the new TTL synced to the cluster).
	extended := namespaces[1]
	setTTL(t, extended, "preview-7", "1d")
	var updated githubtest.PullRequest
	eventually(t, "preview-7 taken out of its namespace's pull request", func() bool {
		updated, _ = g.s.PR(ghOwner, ghRepo, byNS[extended].Number)
		return updated.State == "open" && !strings.Contains(updated.Body, extended+"/preview-7`") && len(updated.Comments) == 1
	})
	if !strings.Contains(updated.Comments[0], "preview-7` out of this pull request because") {
		t.Errorf("comment %q", updated.Comments[0])
	}
	if _, ok := g.s.FileAt(ghOwner, ghRepo, updated.Head, "clusters/e2e/"+extended+"/preview-7.yaml"); !ok {
		t.Error("preview-7.yaml is still deleted on the updated branch")
	}
	waitEvents(t, extended, pipeline.ReasonWithdrawn, 1)

	// CI passes on every head: Kustos merges the three.
	for _, ns := range namespaces {
		p, _ := g.s.PR(ghOwner, ghRepo, byNS[ns].Number)
		g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci/validate", "success")
	}
	eventually(t, "the three pull requests merged", func() bool {
		for _, ns := range namespaces {
			if p, _ := g.s.PR(ghOwner, ghRepo, byNS[ns].Number); !p.Merged {
				return false
			}
		}
		return true
	})
	for _, ns := range namespaces {
		for i := 1; i <= 10; i++ {
			_, inGit := g.s.FileAt(ghOwner, ghRepo, "main", fmt.Sprintf("clusters/e2e/%s/preview-%d.yaml", ns, i))
			if want := ns == extended && i == 7; inGit != want {
				t.Errorf("%s/preview-%d.yaml on main: %v, want %v", ns, i, inGit, want)
			}
		}
		waitEvents(t, ns, expiry.ReasonMerged, map[bool]int{true: 9, false: 10}[ns == extended])
	}
	never(t, extended, expiry.ReasonDeclined, 0, time.Second)
	if n := len(g.prs()); n != 3 {
		t.Errorf("%d pull requests after the merges, want 3", n)
	}
}

func titles(prs []githubtest.PullRequest) []string {
	var out []string
	for _, p := range prs {
		out = append(out, fmt.Sprintf("#%d %s (%s)", p.Number, p.Title, p.State))
	}
	return out
}

// TestCleanerGroupedPR: a Cleaner whose five targets the GitOps repository defines removes them
// with one pull request — one commit deleting the five files and taking them out of the
// kustomization — and its status names that pull request while it is open.
func TestCleanerGroupedPR(t *testing.T) {
	ns := newNamespace(t, "cleaner-group", nil)
	g := newGitOps(t, ns)
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci/validate")
	dir := "clusters/e2e/" + ns + "/"
	files := map[string]string{}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n  - quota.yaml\n"
	var targets []v1alpha1.Target
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("scratch-%d", i)
		files[dir+name+".yaml"] = "# scratch data of job " + name + "\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
		kust += "  - " + name + ".yaml\n"
		if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, v1alpha1.Target{Name: fmt.Sprintf("t%d", i), Delete: true,
			Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: name}})
	}
	files[dir+"kustomization.yaml"] = kust
	g.s.PushBaseCommit(ghOwner, ghRepo, "main", "five scratch ConfigMaps", files)
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch"}, Spec: v1alpha1.CleanerSpec{TTL: "1s", Targets: targets}})
	startCleanersPR(t, g)

	p := g.waitPR(t, "one pull request for the Cleaner's five targets", func(p githubtest.PullRequest) bool { return p.State == "open" })
	if !strings.Contains(p.Title, "delete 5 ConfigMaps") || !strings.Contains(p.Head, "group-cleaner") {
		t.Errorf("#%d %q from %s", p.Number, p.Title, p.Head)
	}
	for i := 1; i <= 5; i++ {
		if _, ok := g.s.FileAt(ghOwner, ghRepo, p.Head, fmt.Sprintf("%sscratch-%d.yaml", dir, i)); ok {
			t.Errorf("scratch-%d.yaml is still on %s", i, p.Head)
		}
	}
	if k, _ := g.s.FileAt(ghOwner, ghRepo, p.Head, dir+"kustomization.yaml"); strings.Contains(k, "scratch") || !strings.Contains(k, "quota.yaml") {
		t.Errorf("kustomization on the branch:\n%s", k)
	}
	if n := g.s.CountRequests("POST", "/repos/{owner}/{repo}/git/commits"); n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
	eventually(t, "the Cleaner's status names the pull request", func() bool {
		cl := getCleaner(t, ns, "scratch")
		return len(cl.Status.PullRequests) == 1 && cl.Status.PullRequests[0] == fmt.Sprintf("#%d", p.Number)
	})
	g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci/validate", "success")
	g.waitPR(t, "the pull request merged", func(p githubtest.PullRequest) bool { return p.Merged })
	g.onePR(t, 2*time.Second)
}

// TestPRBudget: with --max-open-prs=2, two namespaces' pauses open their pull requests; three
// more groups fall due (a pause, then two removals) and wait, each with a ProposalQueued Event;
// as pull requests merge, the waiting ones go most urgent first — the removals, oldest first,
// then the pause that waited longest — and never more than two are open.
func TestPRBudget(t *testing.T) {
	names := []string{"p1", "p2", "r1", "r2", "p3"}
	ns := map[string]string{}
	for _, n := range names {
		ns[n] = newNamespace(t, "budget-"+n, nil)
	}
	g := newGitOps(t, ns["p1"])
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci/validate")
	files := map[string]string{"clusters/e2e/kustomization.yaml": "resources:\n"}
	for _, n := range names {
		files["clusters/e2e/kustomization.yaml"] += "  - " + ns[n] + "\n"
		dir := "clusters/e2e/" + ns[n] + "/"
		files[dir+"kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns[n] + "\nresources:\n  - env.yaml\n"
		onExpiry := "delete"
		if n[0] == 'p' {
			onExpiry = "pause"
		}
		files[dir+"env.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: env\n  annotations:\n    kustos.io/owner: ci@example.com\n" +
			"    kustos.io/ttl: 3s\n    kustos.io/on-expiry: " + onExpiry + "\nspec:\n  replicas: 2\n"
	}
	g.s.PushBaseCommit(ghOwner, ghRepo, "main", "five environments", files)
	create := func(n string) {
		a := map[string]string{expiry.AnnotationOwner: "ci@example.com", expiry.AnnotationTTL: "3s"}
		if n[0] == 'p' {
			a[expiry.AnnotationOnExpiry] = "pause"
		}
		newEnvironmentOf(t, ns[n], "env", 2, a)
	}
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		o.PR.MaxOpenPRs, o.PR.BudgetRefresh = 2, 2*time.Second
		expiryOptions(o)
	}))
	dumpOnFailure(t, k)
	prOf := func(n string) (githubtest.PullRequest, bool) {
		for _, p := range g.prs() {
			if strings.HasSuffix(p.Head, "/group-namespace/"+ns[n]) {
				return p, true
			}
		}
		return githubtest.PullRequest{}, false
	}
	openPRs := func() int {
		n := 0
		for _, p := range g.prs() {
			if p.State == "open" {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d pull requests open with --max-open-prs=2: %v", n, titles(g.prs()))
		}
		return n
	}

	create("p1")
	create("p2")
	eventually(t, "the two pauses proposed", func() bool { _, a := prOf("p1"); _, b := prOf("p2"); return a && b })
	// One after the other: the pause p3 waits longest, then r1, then r2. The removals still go
	// first (more urgent), r1 before r2 (longer waiting).
	for _, n := range []string{"p3", "r1", "r2"} {
		create(n)
		e := waitEvents(t, ns[n], pipeline.ReasonQueued, 1)[0]
		if !strings.Contains(e.Message, "--max-open-prs=2") {
			t.Errorf("%s: ProposalQueued %q", n, e.Message)
		}
		if _, ok := prOf(n); ok {
			t.Fatalf("%s has a pull request while two are open", n)
		}
	}
	// CI passes on one pull request at a time; each merge makes room for the next.
	merge := func(n string) {
		p, _ := prOf(n)
		g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci/validate", "success")
		eventually(t, n+"'s pull request merged", func() bool { q, _ := prOf(n); openPRs(); return q.Merged })
	}
	next := func(want string) {
		eventually(t, want+" proposed next", func() bool {
			openPRs()
			_, ok := prOf(want)
			return ok
		})
	}
	merge("p1")
	next("r1")
	merge("p2")
	next("r2")
	merge("r1")
	next("p3")
	// Pull request numbers follow the order they were opened in.
	r1, _ := prOf("r1")
	r2, _ := prOf("r2")
	p3, _ := prOf("p3")
	if !(r1.Number < r2.Number && r2.Number < p3.Number) {
		t.Errorf("opened in the order %v, want r1, r2 (removals, oldest first), then p3 (a pause)", titles(g.prs()))
	}
	never(t, ns["p3"], pipeline.ReasonQueued, 1, time.Second)
}
