package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// The over-sized quota of the shrink: team-f's, sized for a launch that is over. Its namespace
// asks for the shortest window (resizer.io/window: 1d) and opts in to shrink pull requests
// (resizer.io/shrink), so the PR act needs no --enable-shrink for every tenant.
const (
	shrinkTenant    = "team-f"
	shrinkQuotaPath = "clusters/demo/" + shrinkTenant + "/quota.yaml"
	shrinkWindow    = "1d"
	// historyStep is kube-state-metrics' scrape interval in the backfilled history.
	historyStep = 15 * time.Minute
	// historyDays is how far back the history reaches: past the window's start, so the window
	// is complete.
	historyDays = 2
	// peakAgo is when team-f's peak was: inside the 1d window.
	peakAgo = 6 * time.Hour
)

// shrinkQuotaManifest is team-f's quota in the GitOps repository (the cluster gets the same).
const shrinkQuotaManifest = `# Team quota, sized for the launch in spring.
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
spec:
  hard:
    requests.cpu: "10"   # launch capacity
`

// quotaUsage is a real Prometheus holding team-f's quota usage as kube-state-metrics exports it
// (kube_resourcequota), backfilled with promtool so that the window is complete at once. The
// first act that needs it starts it (start); the demo's TB stops it at the end.
type quotaUsage struct {
	tb     *demoTB
	s      *promtest.Server
	peakAt time.Time
}

// start starts the Prometheus, once, as a step of a.
func (u *quotaUsage) start(a *act) {
	if u.s != nil {
		return
	}
	a.step(fmt.Sprintf("a real Prometheus (bin/prometheus) with %d days of %s's quota usage, backfilled by bin/promtool: kube_resourcequota every %s",
		historyDays, shrinkTenant, historyStep))
	end := time.Now().Add(-time.Minute).Truncate(time.Minute) // history ends before Prometheus starts
	h, peakAt := shrinkHistory(end)
	u.s = promtest.Start(u.tb, promtest.Options{History: h})
	u.peakAt = peakAt
	fmt.Fprintf(a.out, "     %s holds kube_resourcequota{namespace=%q,resourcequota=\"compute\",resource=\"requests.cpu\",type=\"used\"}:\n", u.s.URL, shrinkTenant)
	fmt.Fprintf(a.out, "       1 core, but 2 cores for half an hour at %s; the hard value, 10, all along\n", u.peakAt.UTC().Format("2006-01-02 15:04 UTC"))
}

// shrinkHistory is team-f's usage up to end: requests.cpu at 1 core with one peak of 2 cores
// for half an hour peakAgo before end, and the hard value (10) beside it, as kube-state-metrics
// exports both: a Kustos that read the hard series as usage would find nothing to shrink.
func shrinkHistory(end time.Time) (*promtest.History, time.Time) {
	peakFrom := end.Add(-peakAgo).Truncate(historyStep)
	peakTo := peakFrom.Add(30 * time.Minute)
	labels := func(typ string) map[string]string {
		return map[string]string{"namespace": shrinkTenant, "resourcequota": "compute", "resource": "requests.cpu", "type": typ}
	}
	h := &promtest.History{}
	for at := end.Add(-historyDays * 24 * time.Hour); !at.After(end); at = at.Add(historyStep) {
		used := 1.0
		if !at.Before(peakFrom) && !at.After(peakTo) {
			used = 2
		}
		h.Add("kube_resourcequota", "gauge", labels("used"), promtest.Sample{At: at, Value: used})
		h.Add("kube_resourcequota", "gauge", labels("hard"), promtest.Sample{At: at, Value: 10})
	}
	return h, peakFrom
}

// shrinkTenantSpec is team-f as the cluster has it: the quota of shrinkQuotaManifest and a pod
// of 1 CPU (used 1).
func shrinkTenantSpec() tenant {
	return tenant{name: shrinkTenant,
		about:       fmt.Sprintf("requests.cpu 10, uses 1 CPU, peaked at 2 in the last day (resizer.io/window: %q, resizer.io/shrink: \"true\")", shrinkWindow),
		annotations: map[string]string{quota.AnnotationWindow: shrinkWindow, quota.AnnotationShrink: "true"},
		hard:        rl("requests.cpu", "10"), pods: []corev1.ResourceList{rl("cpu", "1")}, podsFirst: true}
}

// createShrinkTenant creates team-f unless an earlier act did.
func createShrinkTenant(ctx context.Context, a *act, c client.Client) error {
	t := shrinkTenantSpec()
	var ns corev1.Namespace
	err := c.Get(ctx, client.ObjectKey{Name: t.name}, &ns)
	switch {
	case err == nil:
		fmt.Fprintf(a.out, "     %-7s (from the observer act) %s\n", t.name, t.about)
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	fmt.Fprintf(a.out, "     %-7s %s\n", t.name, t.about)
	if err := t.create(ctx, c); err != nil {
		return fmt.Errorf("tenant %s: %w", t.name, err)
	}
	return nil
}

// windowExcerpt is the usage window of a pull request body: from its heading ("#### Usage
// window": the table of peak, target and gates) to the end of its last mermaid chart, as a reader
// of the demo sees it without a renderer. Empty when the body has no window.
func windowExcerpt(body string) string {
	lines := strings.Split(body, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "#### Usage window" })
	if start < 0 {
		return ""
	}
	end, inChart := -1, false
	for i := start + 1; i < len(lines); i++ {
		switch l := strings.TrimSpace(lines[i]); {
		case l == "```mermaid":
			inChart = true
		case inChart && l == "```":
			inChart, end = false, i
		case !inChart && strings.HasPrefix(l, "#"):
			i = len(lines) // the next section
		}
	}
	if end < 0 {
		return ""
	}
	return strings.Join(lines[start:end+1], "\n") + "\n"
}

// showShrinkPR waits for team-f's shrink pull request and prints its title, the usage window of
// its body (table and chart) and its diff.
func showShrinkPR(ctx context.Context, a *act, s *githubtest.Server, dir string) (githubtest.PullRequest, error) {
	out := a.out
	a.step("waiting for Kustos's pull request for " + shrinkTenant + ": the shrink, sized from the usage window in Prometheus")
	p, err := waitQuotaPR(ctx, s, shrinkTenant)
	if err != nil {
		return p, err
	}
	before, _ := s.FileAt(ghOwner, ghRepo, p.BaseSHA, shrinkQuotaPath)
	after, ok := s.FileAt(ghOwner, ghRepo, p.HeadSHA, shrinkQuotaPath)
	if !ok {
		return p, fmt.Errorf("%s missing on the PR branch %s", shrinkQuotaPath, p.Head)
	}
	diff, err := unifiedDiff(dir, shrinkQuotaPath, version{before, true}, version{after, true})
	if err != nil {
		return p, err
	}
	if err := keepsComments(before, after); err != nil {
		return p, err
	}
	window := windowExcerpt(p.Body)
	if !strings.Contains(window, "xychart-beta") {
		return p, fmt.Errorf("the shrink pull request #%d has no chart of the usage window:\n%s", p.Number, p.Body)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Pull request #%d (%s → %s):\n", p.Number, p.Head, p.Base)
	fmt.Fprintln(out, "  Title: "+p.Title)
	fmt.Fprintln(out, "  Body, its usage window (GitHub draws the mermaid block as a chart):")
	fmt.Fprint(out, indent(window, "    | "))
	fmt.Fprintln(out, "  Diff:")
	fmt.Fprint(out, indent(diff, "    "))
	return p, nil
}
