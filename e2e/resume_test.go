package e2e

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	extsrv "github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
)

// TestInactivityResume (direct mode): an idle environment of 3 replicas is paused (scaled to
// zero) and its owner's webhook gets the pause notice with a resume link; GET changes nothing;
// POST brings it back to exactly 3 replicas through the pipeline: an OwnerResumed Event, the
// Lease's pause record gone, and no alert right after (it counts as used at the resume); the
// same link again is 409.
func TestInactivityResume(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity-resume", map[string]string{inactivity.AnnotationTimeout: "4s"})
	newEnvironmentOf(t, ns, "idle", 3, map[string]string{inactivity.AnnotationOwner: "ana@example.com"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	k := startKustos(t, func(o *app.Options) {
		inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s"))(o)
		o.Inactivity.KeepPeriods = []string{"1m"}
		o.Inactivity.KeepMax = 5 * time.Minute
		expiryOptions(o)
		o.Expiry.Extension = ext.options([]string{"1m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	})
	dumpOnFailure(t, k)

	eventually(t, "idle paused (scaled to zero)", func() bool { return replicas(t, ns, "idle") == 0 })
	var pause lifecycle.Notice
	eventually(t, "the pause notice at the webhook", func() bool {
		ns := sink.notices(inactivity.NoticePaused)
		if len(ns) > 0 {
			pause = ns[0]
		}
		return len(ns) > 0
	})
	if len(pause.Links) != 1 || !strings.Contains(pause.Links[0].URL, extsrv.ResumePath+"?") || !strings.Contains(pause.Text, "spec.replicas: 3") {
		t.Fatalf("pause notice: %+v", pause)
	}
	b := bag(t, k.opts.StateNamespace, ns, "idle")
	if b["pause-field"] != "spec.replicas" || b["pause-from"] != "3" || b["paused-at"] == "" || b["uid"] == "" {
		t.Fatalf("Lease after the pause: %v", b)
	}
	eventually(t, "the pause seen (Lease)", func() bool { return bag(t, k.opts.StateNamespace, ns, "idle")["paused"] == "true" })

	link := pause.Links[0].URL
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<strong>3</strong>") {
		t.Fatalf("GET: %s\n%s", resp.Status, body)
	}
	if got := replicas(t, ns, "idle"); got != 0 {
		t.Fatalf("GET resumed: %d replicas", got)
	}
	post := func() int {
		u, _ := url.Parse(link)
		resp, err := http.PostForm("http://"+u.Host+u.Path, u.Query())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	alerts := len(kustosEvents(t, ns, inactivity.ReasonInactive))
	if code := post(); code != http.StatusOK {
		t.Fatalf("POST: %d", code)
	}
	resumed := waitEvents(t, ns, extsrv.ReasonOwnerResumed, 1)
	if resumed[0].InvolvedObject.Name != "idle" || resumed[0].InvolvedObject.APIVersion != "apps/v1" || !strings.Contains(resumed[0].Message, "back to 3") {
		t.Errorf("OwnerResumed: %+v %s", resumed[0].InvolvedObject, resumed[0].Message)
	}
	eventually(t, "idle resumed to 3 replicas", func() bool { return replicas(t, ns, "idle") == 3 })
	eventually(t, "the pause record forgotten, the used link remembered", func() bool {
		b := bag(t, k.opts.StateNamespace, ns, "idle")
		return b["paused"] == "" && b["pause-from"] == "" && b["resume-at"] == "" && b["resume-tokens"] != "" && b["alerts-sent"] == ""
	})
	// Used at the resume: no alert before the 4 s timeout has passed again.
	time.Sleep(2 * time.Second)
	if evs := kustosEvents(t, ns, inactivity.ReasonInactive); len(evs) != alerts {
		t.Errorf("alerted right after the resume: %v", messages(evs))
	}
	if got := replicas(t, ns, "idle"); got != 3 {
		t.Errorf("after the resume: %d replicas, want 3", got)
	}
	if code := post(); code != http.StatusConflict {
		t.Errorf("the same link again: %d, want 409", code)
	}
}

// TestInactivityResumePRMode: a VM defined in Git with 3 replicas is paused by a merged pull
// request (the GitOps tool syncs it: scaled to zero here); its owner's resume link brings a second
// pull request that sets `replicas: 3` back in the manifest, comments kept, merged with
// auto-merge; Kustos never scales the Git-managed VM itself. The owner's page (from the pause
// notice) shows the VM paused with a resume link, which the owner uses, and running once the
// resume is synced.
func TestInactivityResumePRMode(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity-resume-pr", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the lab VM", "vm.yaml", "# ana's VM for the networking lab\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vm\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/inactivity-timeout: 4s\nspec:\n  replicas: 3 # three VMs\n")
	newEnvironmentOf(t, ns, "vm", 3, map[string]string{inactivity.AnnotationOwner: "ana@example.com", inactivity.AnnotationTimeout: "4s"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		inactivityDetector(o, live.prom.URL, sourcesWithRange(t, "3s"))
		o.Inactivity.KeepPeriods = []string{"1m"}
		o.Inactivity.KeepMax = 5 * time.Minute
		expiryOptions(o)
		o.Expiry.Extension = ext.options([]string{"1m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	}))
	dumpOnFailure(t, k)

	g.waitPR(t, "the pause PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if vm, _ := g.s.FileAt(ghOwner, ghRepo, "main", dir+"vm.yaml"); !strings.Contains(vm, "replicas: 0") {
		t.Fatalf("vm.yaml after the pause:\n%s", vm)
	}
	if got := replicas(t, ns, "vm"); got != 3 {
		t.Fatalf("PR mode scaled the Git-managed VM itself (%d replicas)", got)
	}
	if n := sink.notices(inactivity.NoticePaused); len(n) != 0 {
		t.Errorf("a pause notice before the pause took effect: %+v", n)
	}
	scale(t, ns, "vm", 0) // the GitOps tool syncs the merge
	var pause lifecycle.Notice
	eventually(t, "the pause notice at the webhook once the pause is seen", func() bool {
		ns := sink.notices(inactivity.NoticePaused)
		if len(ns) > 0 {
			pause = ns[0]
		}
		return len(ns) > 0
	})

	if pause.OwnerPage == nil {
		t.Fatal("the pause notice carries no owner's page link")
	}
	page := pause.OwnerPage.URL
	e := consolePage(t, page, "vm")
	if e == nil || e.State != extsrv.StatePaused || e.Resume == "" {
		t.Fatalf("the owner's page before the resume: %+v, want paused with a resume link", e)
	}

	// The owner resumes from the page (its button posts the link the page shows).
	u, _ := url.Parse(e.Resume)
	resp, err := http.PostForm("http://"+u.Host+u.Path, u.Query())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	waitEvents(t, ns, extsrv.ReasonOwnerResumed, 1)
	var resume githubtest.PullRequest
	eventually(t, "the resume PR merged", func() bool {
		for _, p := range g.prs() {
			if p.Merged && strings.Contains(p.Body, "resumed at its owner's request") {
				resume = p
				return true
			}
		}
		return false
	})
	vm, _ := g.s.FileAt(ghOwner, ghRepo, "main", dir+"vm.yaml")
	if !strings.Contains(vm, "replicas: 3") || !strings.Contains(vm, "# ana's VM for the networking lab") {
		t.Errorf("vm.yaml after the resume (PR %q):\n%s", resume.Title, vm)
	}
	if got := replicas(t, ns, "vm"); got != 0 {
		t.Errorf("PR mode resumed the Git-managed VM itself (%d replicas)", got)
	}
	if !strings.Contains(resume.Title, "resume 1 Deployment") {
		t.Errorf("the resume PR's title %q does not say it is one", resume.Title)
	}
	if len(g.prs()) != 2 {
		t.Errorf("pull requests: %+v, want the pause and the resume", g.prs())
	}
	// The GitOps tool syncs the resume: the owner's page says the VM runs again.
	scale(t, ns, "vm", 3)
	eventually(t, "the owner's page showing the VM running", func() bool {
		e := consolePage(t, page, "vm")
		return e != nil && e.State == extsrv.StateRunning
	})
}
