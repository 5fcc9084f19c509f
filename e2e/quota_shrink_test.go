package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/quotahistory"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestShrinkWindowKeptInLeaseAcrossRestart: without Prometheus the quota's state Lease keeps
// the daily peaks. Kustos runs one day, stops, runs the next, stops, and on the third day the
// Lease holds the whole window (a day, and the day before it): observer mode reports the shrink,
// cut by the step, as QuotaShrinkRecommended. Before that nothing is reported.
func TestShrinkWindowKeptInLeaseAcrossRestart(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	ns := newNamespace(t, "shrink-lease", map[string]string{quota.AnnotationWindow: "1d"})
	newQuota(t, ns, "compute", rl("requests.cpu", "10"))
	newPod(t, ns, "p1", rl("cpu", "1"))
	waitUsed(t, ns, "compute", "requests.cpu", "1")

	// The peaks the state Lease keeps for requests.cpu: "<first day>:<peak>@<hhmm>,…".
	peaks := func() string {
		var l coordinationv1.Lease
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-compute"}, &l); err != nil {
			return ""
		}
		return l.Annotations[state.BagPrefix+"peak.requests.cpu"]
	}
	for day := 0; day < 3; day++ {
		offset := time.Duration(day) * 24 * time.Hour
		k := startKustos(t, func(o *app.Options) {
			o.StateNamespace = stateNS
			o.Now = func() time.Time { return time.Now().Add(offset) }
		})
		today := time.Now().Add(offset).UTC().Format(time.DateOnly)
		eventually(t, "the Lease holds the peak of "+today, func() bool { return strings.Contains(peaks(), "1@") && strings.Count(peaks(), ",") == day })
		if day < 2 {
			never(t, ns, quota.ReasonQuotaShrinkRecommended, 0, 2*time.Second)
			k.stop()
			continue
		}
		evs := waitEvents(t, ns, quota.ReasonQuotaShrinkRecommended, 1)
		if !strings.HasPrefix(evs[0].Message, "requests.cpu could shrink from 10 to 7500m (peak 1 at ") ||
			!strings.HasSuffix(evs[0].Message, "over 1d, used 1, target 1250m; cut to at most 25% less per step)") {
			t.Errorf("event message %q", evs[0].Message)
		}
		var recs []map[string]any
		eventually(t, "the recommendation's log line", func() bool { recs = k.logs.records(t, "recommendation"); return len(recs) > 0 })
		if len(recs) != 1 || recs[0]["recommended"] != "7500m" || recs[0]["peak"] != "1" || recs[0]["windowComplete"] != "true" ||
			recs[0]["reason"] != quota.ReasonQuotaShrinkRecommended || recs[0]["peakAt"] == "" {
			t.Errorf("recommendation log lines %v", recs)
		}
	}
	if first, _, _ := strings.Cut(peaks(), ":"); first != time.Now().UTC().Format(time.DateOnly) {
		t.Errorf("the kept days begin %s, want the first day Kustos ran: %s", first, peaks())
	}
}

// fixedHistory is a usage history source (as Prometheus is) that answers one window for every
// quota.
type fixedHistory struct{ w quotahistory.Window }

func (h fixedHistory) Window(_ context.Context, _, _ string, window time.Duration, now time.Time) quotahistory.Window {
	w := h.w
	w.Start, w.End = now.Add(-window), now
	return w
}

// TestShrinkPRSupersededByGrow: in PR mode with --enable-shrink, a complete window with low
// usage opens a shrink PR; usage then crosses the threshold while it is open: Kustos closes the
// shrink PR with a comment saying why and proposes the grow in a new one, at once (the grow
// cooldown does not follow a shrink).
func TestShrinkPRSupersededByGrow(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	// The window's days of requests.cpu, for the PR's chart: 500m a day, 1 two days ago.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	var cpuDays []quotahistory.DayPeak
	for i := 14; i >= 0; i-- {
		v := "500m"
		if i == 2 {
			v = "1"
		}
		cpuDays = append(cpuDays, quotahistory.DayPeak{Day: today.AddDate(0, 0, -i), Value: resource.MustParse(v)})
	}
	history := fixedHistory{quotahistory.Window{Complete: true, Peaks: map[corev1.ResourceName]quotahistory.Peak{
		"requests.cpu": {Value: resource.MustParse("1"), At: time.Now().Add(-48 * time.Hour)},
		"pods":         {Value: resource.MustParse("40"), At: time.Now().Add(-48 * time.Hour)},
	}, Days: map[corev1.ResourceName][]quotahistory.DayPeak{"requests.cpu": cpuDays}}}
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.QuotaWindow = quota.DefaultWindowPolicy()
		o.QuotaWindow.Shrink = true
		o.QuotaHistory = history
	}))
	dumpOnFailure(t, k)
	newQuota(t, ns, "compute", rl("requests.cpu", "3", "pods", "50"))

	shrink := g.waitPR(t, "a shrink PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	// requests.cpu: max(peak 1, used 0) × 1.25 is the target, the step cuts to 3 × 0.75;
	// pods (peak 40, target 50) lie within the band.
	if got, want := g.fileAt(t, shrink.HeadSHA), quotaManifest("2250m"); got != want {
		t.Fatalf("file on the shrink PR branch\n got:\n%s\nwant:\n%s", got, want)
	}
	// The body charts the window in cores: 15 days, today's hard value and the proposed one.
	for _, want := range []string{"#### Usage window", "| `requests.cpu` | 1 |", "3 → **2250m** | passed failed-create, window, recent-grow, cooldown; shaped by step |",
		"```mermaid\nxychart-beta\n", "    bar [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1, 0.5, 0.5]\n",
		"    line [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]\n", "    line [2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25, 2.25]\n"} {
		if !strings.Contains(shrink.Body, want) {
			t.Errorf("the shrink PR's body lacks %q:\n%s", want, shrink.Body)
		}
	}
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", shrink.Number))

	// 2900m of 3: the threshold is crossed while the shrink PR is open.
	newPod(t, ns, "p1", rl("cpu", "2900m"))
	waitUsed(t, ns, "compute", "requests.cpu", "2900m")
	eventually(t, "the shrink PR closed and a grow PR opened", func() bool {
		prs := g.prs()
		return len(prs) == 2 && prs[0].State == "closed" && prs[1].State == "open"
	})
	prs := g.prs()
	if prs[0].Merged || len(prs[0].Comments) != 1 || !strings.HasPrefix(prs[0].Comments[0], "Kustos closes this pull request because the quota must grow instead: requests.cpu should be increased from 3 to ") {
		t.Errorf("shrink PR merged %v, comments %q", prs[0].Merged, prs[0].Comments)
	}
	grow := prs[1]
	if got := g.fileAt(t, grow.HeadSHA); !strings.Contains(got, `requests.cpu: "3625m"`) {
		t.Errorf("file on the grow PR branch:\n%s", got)
	}
	waitEvents(t, ns, pipeline.ReasonWithdrawn, 1)
}

// TestShrinkPRWithdrawnWhenUsageRises: in PR mode with --enable-shrink, the state Lease keeps a
// window of 1d over three days of low usage, and the third day opens a shrink PR (3 → 2250m).
// Usage then rises to 2200m: below the threshold (80% of 3), but the window's target
// (2200m × 1.25 = 2.75) puts the hard 3 within the tolerance band. Kustos closes the shrink PR
// with a comment saying so, and proposes nothing new.
func TestShrinkPRWithdrawnWhenUsageRises(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	ns := newNamespace(t, "shrink-withdraw", map[string]string{quota.AnnotationWindow: "1d"})
	g := newGitOps(t, ns)
	newQuota(t, ns, "compute", rl("requests.cpu", "3"))
	newPod(t, ns, "p1", rl("cpu", "200m"))
	waitUsed(t, ns, "compute", "requests.cpu", "200m")

	peaks := func() string {
		var l coordinationv1.Lease
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-compute"}, &l); err != nil {
			return ""
		}
		return l.Annotations[state.BagPrefix+"peak.requests.cpu"]
	}
	var k *kustos
	for day := 0; day < 3; day++ {
		offset := time.Duration(day) * 24 * time.Hour
		k = startKustos(t, g.prMode(func(o *app.Options) {
			o.StateNamespace = stateNS
			o.QuotaWindow = quota.DefaultWindowPolicy()
			o.QuotaWindow.Shrink = true
			o.Now = func() time.Time { return time.Now().Add(offset) }
		}))
		dumpOnFailure(t, k)
		eventually(t, fmt.Sprintf("the Lease holds the peak of day %d", day), func() bool {
			p := peaks()
			return strings.Contains(p, "200m@") && strings.Count(p, ",") == day
		})
		if day < 2 {
			if prs := g.prs(); len(prs) != 0 {
				t.Fatalf("day %d: a pull request before the window is complete: %+v", day, prs)
			}
			k.stop()
		}
	}
	shrink := g.waitPR(t, "a shrink PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	if got, want := g.fileAt(t, shrink.HeadSHA), quotaManifest("2250m"); got != want {
		t.Fatalf("file on the shrink PR branch\n got:\n%s\nwant:\n%s", got, want)
	}
	waitHolder(t, stateNS, ns, fmt.Sprintf("pr-%d", shrink.Number))

	newPod(t, ns, "p2", rl("cpu", "2"))
	waitUsed(t, ns, "compute", "requests.cpu", "2200m")
	closed := g.waitPR(t, "the shrink PR closed", func(p githubtest.PullRequest) bool { return p.State == "closed" })
	const want = "Kustos closes this pull request because usage rose: requests.cpu peak 2200m over the window, target 2750m, hard 3 is within the band"
	if closed.Merged || len(closed.Comments) != 1 || !strings.HasPrefix(closed.Comments[0], want) {
		t.Errorf("shrink PR merged %v, comments %q, want one beginning %q", closed.Merged, closed.Comments, want)
	}
	waitEvents(t, ns, pipeline.ReasonWithdrawn, 1)
	g.onePR(t, 3*time.Second)
}

// TestShrinkDirect: in direct mode the state Lease keeps a window of 1d over three days of a
// quota of 10 CPUs using 1. With --enable-shrink the third day lowers spec.hard to 7500m (the
// target 1250m, cut by the step to 10 × 0.75) in one write and says so in a QuotaResized Event;
// a second look that day and the looks of the days after it change nothing while the shrink
// cooldown (7 days) lasts, and the first complete window after it lowers the quota one step
// more. Without --enable-shrink nothing changes and nothing is reported.
func TestShrinkDirect(t *testing.T) {
	for _, tt := range []struct {
		name   string
		shrink bool
	}{
		{name: "with --enable-shrink the quota is lowered once per cooldown", shrink: true},
		{name: "without --enable-shrink nothing changes", shrink: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stateNS := newNamespace(t, "kustos-state", nil)
			ns := newNamespace(t, "shrink-direct", map[string]string{quota.AnnotationWindow: "1d"})
			newQuota(t, ns, "compute", rl("requests.cpu", "10"))
			newPod(t, ns, "p1", rl("cpu", "1"))
			waitUsed(t, ns, "compute", "requests.cpu", "1")

			// Every spec.hard value the quota goes through, in order: each is a write.
			var mu sync.Mutex
			seen := []string{"10"}
			hard := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					var q corev1.ResourceQuota
					if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compute"}, &q) == nil {
						v := q.Spec.Hard[corev1.ResourceRequestsCPU]
						mu.Lock()
						if s := v.String(); s != seen[len(seen)-1] {
							seen = append(seen, s)
						}
						mu.Unlock()
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			t.Cleanup(func() { cancel(); <-done })

			peaks := func() string {
				var l coordinationv1.Lease
				if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-compute"}, &l); err != nil {
					return ""
				}
				return l.Annotations[state.BagPrefix+"peak.requests.cpu"]
			}
			start := time.Now()
			// look runs Kustos on day (counted from today) until the Lease holds that day's peak,
			// in a run of days that begins on first.
			look := func(day, first int, peak string) *kustos {
				offset := time.Duration(day) * 24 * time.Hour
				k := startKustos(t, func(o *app.Options) {
					o.Mode = app.ModeDirect
					o.StateNamespace = stateNS
					o.QuotaWindow = quota.DefaultWindowPolicy()
					o.QuotaWindow.Shrink = tt.shrink
					o.Now = func() time.Time { return time.Now().Add(offset) }
				})
				dumpOnFailure(t, k)
				from := start.Add(time.Duration(first)*24*time.Hour).UTC().Format(time.DateOnly) + ":"
				eventually(t, fmt.Sprintf("the Lease holds the peak of day %d", day), func() bool {
					p := peaks()
					return strings.HasPrefix(p, from) && strings.Count(p, ",") == day-first && strings.Contains(p[strings.LastIndex(p, ",")+1:], peak+"@")
				})
				return k
			}
			for day := 0; day < 2; day++ {
				look(day, 0, "1").stop()
			}
			k := look(2, 0, "1")
			if !tt.shrink {
				never(t, ns, quota.ReasonQuotaResized, 0, 3*time.Second)
				never(t, ns, quota.ReasonQuotaShrinkRecommended, 0, 0)
				if got := hard(); len(got) != 1 {
					t.Errorf("spec.hard.requests.cpu went through %v, want 10 unchanged", got)
				}
				return
			}
			evs := waitEvents(t, ns, quota.ReasonQuotaResized, 1)
			if evs[0].Message != "Applied requests.cpu → 7500m" {
				t.Errorf("QuotaResized message %q", evs[0].Message)
			}
			eventually(t, "spec.hard lowered to 7500m", func() bool { return len(hard()) == 2 })
			if got := hard(); got[1] != "7500m" {
				t.Fatalf("spec.hard.requests.cpu went through %v, want 10, 7500m", got)
			}
			// The write is Kustos's own (its field manager), an update of spec.hard only.
			var q corev1.ResourceQuota
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "compute"}, &q); err != nil {
				t.Fatal(err)
			}
			owned := false
			for _, m := range q.ManagedFields {
				if m.Manager == direct.DefaultFieldManager && m.Operation == metav1.ManagedFieldsOperationUpdate && m.FieldsV1 != nil {
					owned = strings.Contains(m.FieldsV1.GetRawString(), `"f:requests.cpu"`) && !strings.Contains(m.FieldsV1.GetRawString(), `"f:status"`)
				}
			}
			if !owned {
				t.Errorf("spec.hard.requests.cpu is not Kustos's (%s) update: %+v", direct.DefaultFieldManager, q.ManagedFields)
			}

			// A second look the same day (usage changed) proposes nothing more.
			newPod(t, ns, "p2", rl("cpu", "100m"))
			waitUsed(t, ns, "compute", "requests.cpu", "1100m")
			eventually(t, "the second look recorded its peak", func() bool { p := peaks(); return strings.Contains(p[strings.LastIndex(p, ",")+1:], "1100m@") })
			never(t, ns, quota.ReasonQuotaResized, 1, 2*time.Second)
			k.stop()
			// Days 7 and 8 fall within the cooldown; day 9's window (day 8 to 9, and the day
			// before it) is complete and the cooldown is over: 7500m × 0.75. The Lease keeps the
			// days from the one before the window's first.
			look(7, 5, "1100m").stop()
			look(8, 6, "1100m").stop()
			never(t, ns, quota.ReasonQuotaResized, 1, 0)
			if got := hard(); len(got) != 2 {
				t.Fatalf("spec.hard.requests.cpu went through %v within the cooldown, want 10, 7500m", got)
			}
			look(9, 7, "1100m")
			waitEvents(t, ns, quota.ReasonQuotaResized, 2)
			eventually(t, "spec.hard lowered to 5625m", func() bool { return len(hard()) == 3 })
			if got := hard(); got[2] != "5625m" {
				t.Errorf("spec.hard.requests.cpu went through %v, want 10, 7500m, 5625m", got)
			}
		})
	}
}
