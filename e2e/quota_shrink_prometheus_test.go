package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// The usage history below is kube-state-metrics' as a real Prometheus holds it, backfilled:
// kube_resourcequota{namespace, resourcequota, resource, type} every 15 minutes, in cores for
// cpu. requests.cpu runs at 1 core with one peak of 2 cores at noon UTC five days ago; pods at
// 10 with a peak of 40 (within the band of a hard 50: target 50, band 57.5, so it never
// shrinks). The hard series say 50 cores: a detector that read them as usage would find nothing
// to shrink.
const (
	historyStep = 15 * time.Minute
	peakDaysAgo = 5
)

// quotaHistory adds the usage of quota compute in ns from since to end.
func quotaHistory(h *promtest.History, ns string, since, end time.Time) {
	peakDay := utcMidnight(end.Add(-peakDaysAgo * 24 * time.Hour))
	peakFrom, peakTo := peakDay.Add(12*time.Hour), peakDay.Add(12*time.Hour+30*time.Minute)
	labels := func(res, typ string) map[string]string {
		return map[string]string{"namespace": ns, "resourcequota": "compute", "resource": res, "type": typ}
	}
	for at := since; !at.After(end); at = at.Add(historyStep) {
		cpu, pods := 1.0, 10.0
		if !at.Before(peakFrom) && !at.After(peakTo) {
			cpu, pods = 2, 40
		}
		h.Add("kube_resourcequota", "gauge", labels("requests.cpu", "used"), promtest.Sample{At: at, Value: cpu})
		h.Add("kube_resourcequota", "gauge", labels("pods", "used"), promtest.Sample{At: at, Value: pods})
		h.Add("kube_resourcequota", "gauge", labels("requests.cpu", "hard"), promtest.Sample{At: at, Value: 50})
		h.Add("kube_resourcequota", "gauge", labels("pods", "hard"), promtest.Sample{At: at, Value: 50})
	}
}

func utcMidnight(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// historyEnd is where a backfilled history ends: before Prometheus starts, as it must.
func historyEnd() time.Time { return time.Now().Add(-time.Minute).Truncate(time.Minute) }

// expectedPeakAt is the peak's At as the history reports it: the start of the UTC day that held
// it.
func expectedPeakAt(end time.Time) string {
	return utcMidnight(end.Add(-peakDaysAgo * 24 * time.Hour)).Format(time.RFC3339)
}

// withQuotaPrometheus points the quota detector at url (--prometheus-url) with the inactivity
// detector off, and the built-in window settings (14 days, 25 % step), shrinks opted in when
// shrink is set.
func withQuotaPrometheus(url string, shrink bool) func(*app.Options) {
	return func(o *app.Options) {
		o.Inactivity = inactivity.DefaultOptions()
		o.Inactivity.Enabled = false
		o.Inactivity.Prometheus.URL = url
		o.QuotaWindow = quota.DefaultWindowPolicy()
		o.QuotaWindow.Shrink = shrink
	}
}

// TestShrinkFromPrometheusObserver: 15 days of history in Prometheus, a 14-day window, a hard
// value far above the peak. target = max(peak 2, used 1) × 1.25 = 2500m; the hard 10 lies above
// the band (2875m), and the 25 % step cuts the shrink to 10 × 0.75 = 7500m. Observer mode reports
// exactly that once, as an Event and a JSON log line naming the peak and its day.
func TestShrinkFromPrometheusObserver(t *testing.T) {
	ns := newNamespace(t, "shrink-prom-observer", nil)
	end := historyEnd()
	h := &promtest.History{}
	quotaHistory(h, ns, end.Add(-15*24*time.Hour), end)
	prom := promtest.Start(t, promtest.Options{History: h})

	newQuota(t, ns, "compute", rl("requests.cpu", "10", "pods", "50"))
	newPod(t, ns, "p1", rl("cpu", "1"))
	waitUsed(t, ns, "compute", "requests.cpu", "1")
	k := startKustos(t, withQuotaPrometheus(prom.URL, false))
	dumpOnFailure(t, k)

	peakAt := expectedPeakAt(end)
	evs := waitEvents(t, ns, quota.ReasonQuotaShrinkRecommended, 1)
	want := "requests.cpu could shrink from 10 to 7500m (peak 2 at " + peakAt + " over 14d, used 1, target 2500m; cut to at most 25% less per step)"
	if evs[0].Message != want {
		t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, want)
	}
	var recs []map[string]any
	eventually(t, "the recommendation's log line", func() bool { recs = k.logs.records(t, "recommendation"); return len(recs) > 0 })
	for _, msg := range []string{"recommendation", "shrink recommendation"} {
		recs := k.logs.records(t, msg)
		if len(recs) != 1 {
			t.Errorf("%d %q log lines, want 1: %v", len(recs), msg, recs)
			continue
		}
		r := recs[0]
		for key, want := range map[string]string{
			"reason": quota.ReasonQuotaShrinkRecommended, "namespace": ns, "resource": "requests.cpu",
			"recommended": "7500m", "target": "2500m", "peak": "2", "peakAt": peakAt, "used": "1",
			"windowComplete": "true", "blocked": "", "gates": "step",
		} {
			if got, ok := r[key]; !ok || got != want {
				t.Errorf("%q log line: %s = %v, want %q", msg, key, got, want)
			}
		}
	}
	// Once: later looks (the pod's status, the Event itself) report nothing new.
	never(t, ns, quota.ReasonQuotaShrinkRecommended, 1, 3*time.Second)
}

// TestShrinkFromPrometheusPartialWindow: Prometheus holds only the last 7 days of a 14-day
// window (a quota created last week). Observer mode reports only complete windows: no
// QuotaShrinkRecommended Event and no recommendation log line for it, while a quota with the
// whole window, in the same Prometheus, is reported (the control that Kustos read the history).
// In PR mode with --enable-shrink, the same quota gets no pull request.
func TestShrinkFromPrometheusPartialWindow(t *testing.T) {
	ns := newNamespace(t, "shrink-prom-partial", nil)
	control := newNamespace(t, "shrink-prom-control", nil)
	end := historyEnd()
	h := &promtest.History{}
	quotaHistory(h, ns, end.Add(-7*24*time.Hour), end)
	quotaHistory(h, control, end.Add(-15*24*time.Hour), end)
	prom := promtest.Start(t, promtest.Options{History: h})

	newQuota(t, ns, "compute", rl("requests.cpu", "3", "pods", "50"))
	newQuota(t, control, "compute", rl("requests.cpu", "3", "pods", "50"))
	k := startKustos(t, withQuotaPrometheus(prom.URL, false))
	dumpOnFailure(t, k)

	waitEvents(t, control, quota.ReasonQuotaShrinkRecommended, 1)
	never(t, ns, quota.ReasonQuotaShrinkRecommended, 0, 3*time.Second)
	for _, msg := range []string{"recommendation", "shrink recommendation"} {
		for _, r := range k.logs.records(t, msg) {
			if r["namespace"] == ns {
				t.Errorf("%q log line for the quota whose window is incomplete: %v", msg, r)
			}
		}
	}
	k.stop()

	g := newGitOps(t, ns)
	pr := startKustos(t, g.prMode(withQuotaPrometheus(prom.URL, true)))
	dumpOnFailure(t, pr)
	waitLooked(t, pr, ns)
	// This instance read the history too: the control quota's window is complete (its shrink
	// has no pull request, as it is not in this repository).
	eventually(t, "the control quota's shrink recommendation", func() bool {
		for _, r := range pr.logs.records(t, "shrink recommendation") {
			if r["namespace"] == control {
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second)
	if prs := g.prs(); len(prs) != 0 {
		t.Fatalf("pull requests for a quota whose window is incomplete: %+v", prs)
	}
	for _, r := range pr.logs.records(t, "shrink recommendation") {
		if r["namespace"] == ns {
			t.Errorf("shrink recommendation logged for an incomplete window: %v", r)
		}
	}
}

// TestShrinkFromPrometheusPR: PR mode with --enable-shrink and the whole window in Prometheus:
// one shrink pull request. requests.cpu: target = max(peak 2, used 0) × 1.25 = 2500m, above the
// step's 3 × 0.75 = 2250m, so the target itself; pods (peak 40, target 50) stays. A restart of
// Kustos, which reads the history anew, opens no second pull request.
func TestShrinkFromPrometheusPR(t *testing.T) {
	ns := newNamespace(t, "shrink-prom-pr", nil)
	end := historyEnd()
	h := &promtest.History{}
	quotaHistory(h, ns, end.Add(-15*24*time.Hour), end)
	prom := promtest.Start(t, promtest.Options{History: h})
	g := newGitOps(t, ns)
	stateNS := newNamespace(t, "kustos-state", nil)
	opts := g.prMode(func(o *app.Options) {
		withQuotaPrometheus(prom.URL, true)(o)
		o.StateNamespace = stateNS
	})
	k := startKustos(t, opts)
	dumpOnFailure(t, k)
	newQuota(t, ns, "compute", rl("requests.cpu", "3", "pods", "50"))

	p := g.waitPR(t, "the shrink PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	if got, want := g.fileAt(t, p.HeadSHA), quotaManifest("2500m"); got != want {
		t.Fatalf("file on the shrink PR branch\n got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(p.Body, "peak 2 at "+expectedPeakAt(end)) {
		t.Errorf("PR body does not name the peak:\n%s", p.Body)
	}
	waitHolder(t, stateNS, ns, "pr-1")
	g.onePR(t, 2*time.Second)
	k.stop()

	k2 := startKustos(t, opts)
	dumpOnFailure(t, k2)
	// The new instance looks at the quota on start, with the history read anew; the decision
	// is the open PR's.
	waitLooked(t, k2, ns)
	g.onePR(t, 3*time.Second)
	if got := g.prs()[0]; got.State != "open" || got.Number != p.Number {
		t.Errorf("after the restart: %+v", got)
	}
}

// TestShrinkFromPrometheusUnreachable: --prometheus-url names a port nothing listens on. In PR
// mode with --enable-shrink, a quota far above its use gets no pull request (its window is
// incomplete), and Kustos's log says why: Prometheus is unreachable.
func TestShrinkFromPrometheusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()

	ns := newNamespace(t, "shrink-prom-down", nil)
	g := newGitOps(t, ns)
	k := startKustos(t, g.prMode(withQuotaPrometheus(url, true)))
	dumpOnFailure(t, k)
	newQuota(t, ns, "compute", rl("requests.cpu", "3", "pods", "50"))

	var recs []map[string]any
	eventually(t, "the log says Prometheus is unreachable", func() bool {
		recs = k.logs.records(t, "quota usage history unavailable: every window stays incomplete, and no quota shrinks, until it is asked again")
		return len(recs) > 0
	})
	if reason, _ := recs[0]["reason"].(string); !strings.HasPrefix(reason, "Prometheus unreachable: ") || recs[0]["window"] != "14d" {
		t.Errorf("log line %v", recs[0])
	}
	waitLooked(t, k, ns)
	time.Sleep(2 * time.Second)
	if prs := g.prs(); len(prs) != 0 {
		t.Fatalf("pull requests while Prometheus is unreachable: %+v", prs)
	}
}

// waitLooked waits until k's quota detector looked at quota compute of ns: its pipeline logged a
// step for it (the look may decide nothing, and then writes no state).
func waitLooked(t *testing.T, k *kustos, ns string) {
	t.Helper()
	eventually(t, "Kustos looked at "+ns+"/compute", func() bool {
		for _, r := range k.logs.records(t, "pipeline step") {
			if r["key"] == "quota/"+ns+"/compute" {
				return true
			}
		}
		return false
	})
}
