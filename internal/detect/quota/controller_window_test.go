package quota

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// TestReconcilerDecideWindow: what the controller hands the pipeline for a quota with a
// window, per mode and opt-in, with an open shrink proposal and with a corrupt bag.
func TestReconcilerDecideWindow(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "compute", UID: "uid-1"},
		Status:     corev1.ResourceQuotaStatus{Hard: rl("requests.cpu", "100"), Used: rl("requests.cpu", "1")},
	}
	pressed := q.DeepCopy()
	pressed.Status.Used = rl("requests.cpu", "90")
	complete := win(true, "requests.cpu", "1")
	shrinkProposal := lifecycle.Change{Reason: ReasonQuotaShrinkRecommended, Edit: lifecycle.Edit{Op: lifecycle.EditSetFields,
		Fields: []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, From: "100", To: "75"}}}}
	optIn := func(p *Policy) { p.Window.Shrink = true }
	// risen: usage rose so that hard 12 lies within the band of the window's target (peak 9 ×
	// 1.25 = 11.25; band 12.9375), while the shrink to 9 it once wanted is still proposed.
	risen := q.DeepCopy()
	risen.Status.Hard = rl("requests.cpu", "12")
	shrinkTo9 := lifecycle.Change{Reason: ReasonQuotaShrinkRecommended, Edit: lifecycle.Edit{Op: lifecycle.EditSetFields,
		Fields: []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, From: "12", To: "9"}}}}
	growProposal := lifecycle.Change{Reason: ReasonQuotaResizeRecommended, Edit: lifecycle.Edit{Op: lifecycle.EditSetFields,
		Fields: []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, From: "12", To: "15"}}}}
	olderShrink := lifecycle.Change{Reason: ReasonQuotaShrinkRecommended, Edit: lifecycle.Edit{Op: lifecycle.EditSetFields,
		Fields: []lifecycle.FieldChange{{Path: []string{"spec", "hard", "requests.cpu"}, From: "100", To: "80"}}}}
	proposedAt := t0.Add(-time.Hour).Format(time.RFC3339Nano)
	openShrink := func(c *lifecycle.Change, bag map[string]string) lifecycle.View {
		b := map[string]string{bagLastShrink: proposedAt}
		for k, v := range bag {
			b[k] = v
		}
		return lifecycle.View{LastModified: t0.Add(-time.Hour), ProposalOpen: true, Proposed: c, Bag: b}
	}
	risenWindow := win(true, "requests.cpu", "9")
	incomplete := win(false, "requests.cpu", "1")
	tests := []struct {
		name        string
		q           *corev1.ResourceQuota
		observe     bool
		policy      func(*Policy)
		external    *quotahistory.Window
		failures    []Failure
		view        lifecycle.View
		wantChange  string // reason and values, "" for none
		wantWithdr  string // a part of Withdraw
		wantFinding string // a reason among the Findings
		wantBag     string // a bag key that must be there
		noBag       string // a bag key that must not be there
		wantDaily   string // the Change's first evidence entry's dailyPeaks, when set
	}{
		{name: "observer mode reports a shrink without the opt-in", q: q, observe: true, external: &complete,
			wantChange: "QuotaShrinkRecommended requests.cpu=75", wantBag: bagLastShrink},
		{name: "pr mode without the opt-in proposes nothing", q: q, external: &complete, noBag: bagLastShrink},
		{name: "pr mode with the opt-in proposes the shrink", q: q, policy: optIn, external: &complete,
			wantChange: "QuotaShrinkRecommended requests.cpu=75", wantBag: bagLastShrink},
		{name: "observer mode reports a held-back shrink as a Finding", q: q, observe: true, external: &complete,
			view:        lifecycle.View{LastModified: t0.Add(-day), Bag: map[string]string{bagLastGrow: t0.Add(-day).Format(time.RFC3339Nano)}},
			wantFinding: ReasonQuotaShrinkRecommended},
		{name: "a grow while a shrink's proposal is open withdraws it", q: pressed, policy: optIn, external: &complete,
			view:       lifecycle.View{LastModified: t0.Add(-time.Minute), ProposalOpen: true, Proposed: &shrinkProposal, Bag: map[string]string{bagLastShrink: t0.Add(-time.Minute).Format(time.RFC3339Nano)}},
			wantWithdr: "the quota must grow instead: requests.cpu should be increased from 100 to 120", noBag: bagLastGrow},
		{name: "after the withdrawal the grow is proposed at once", q: pressed, policy: optIn, external: &complete,
			view:       lifecycle.View{LastModified: t0.Add(-time.Minute), Bag: map[string]string{bagLastShrink: t0.Add(-time.Minute).Format(time.RFC3339Nano)}},
			wantChange: "QuotaResizeRecommended requests.cpu=120", wantBag: bagLastGrow},
		{name: "usage risen into the band withdraws the open shrink's proposal", q: risen, policy: optIn, external: &risenWindow,
			view:       openShrink(&shrinkTo9, nil),
			wantWithdr: "usage rose: requests.cpu peak 9 over the window, target 12, hard 12 is within the band"},
		{name: "usage risen into the band leaves an open grow's proposal alone", q: risen, policy: optIn, external: &risenWindow,
			view: lifecycle.View{LastModified: t0.Add(-time.Hour), ProposalOpen: true, Proposed: &growProposal}},
		{name: "failed-create withdraws the open shrink's proposal", q: q, policy: optIn, external: &complete,
			failures:   []Failure{exceeded("compute", msgCPU, Owner{}, t0.Add(-time.Minute))},
			view:       openShrink(&shrinkProposal, nil),
			wantWithdr: "held back: failed-create"},
		{name: "a grow inside the window withdraws the open shrink's proposal", q: q, policy: optIn, external: &complete,
			view:       openShrink(&shrinkProposal, map[string]string{bagLastGrow: t0.Add(-day).Format(time.RFC3339Nano)}),
			wantWithdr: "held back: recent-grow"},
		{name: "an opt-out while the shrink's proposal is open withdraws it", q: q, external: &complete,
			view:       openShrink(&shrinkProposal, nil),
			wantWithdr: "shrinking is no longer opted in"},
		{name: "the shrink's own cooldown keeps its proposal open", q: q, policy: optIn, external: &complete,
			view: openShrink(&shrinkProposal, nil)},
		{name: "a window gone incomplete keeps the shrink's proposal open", q: q, policy: optIn, external: &incomplete,
			view: openShrink(&shrinkProposal, nil)},
		{name: "a shrink still wanted at another value replaces the open one", q: q, policy: optIn, external: &complete,
			view:       lifecycle.View{LastModified: t0.Add(-8 * day), ProposalOpen: true, Proposed: &olderShrink, Bag: map[string]string{bagLastShrink: t0.Add(-8 * day).Format(time.RFC3339Nano)}},
			wantChange: "QuotaShrinkRecommended requests.cpu=75", wantBag: bagLastShrink},
		{name: "the Lease-kept window records today's peak", q: q, observe: true,
			wantBag: "peak.requests.cpu"},
		{name: "a shrink from the Lease-kept window carries its daily peaks for the pull request", q: q, policy: optIn,
			view:       lifecycle.View{Bag: map[string]string{"peak.requests.cpu": "2026-11-06:" + strings.TrimSuffix(strings.Repeat("1@0600,", 16), ",")}},
			wantChange: "QuotaShrinkRecommended requests.cpu=75",
			wantDaily:  "2026-11-07:" + strings.TrimSuffix(strings.Repeat("1,", 15), ",")},
		{name: "a corrupt bag entry is a Finding", q: q, observe: true,
			view:        lifecycle.View{Bag: map[string]string{"peak.requests.cpu": "garbage"}},
			wantFinding: ReasonInvalidQuotaHistory, wantBag: "peak.requests.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{Observe: tt.observe, Log: logr.Discard()}
			p := sizingPolicy()
			if tt.policy != nil {
				tt.policy(&p)
			}
			_, d, _ := r.decide(tt.q, p, tt.failures, tt.external, tt.view, t0)
			got := ""
			if d.Change != nil {
				got = d.Change.Reason
				for _, f := range d.Change.Edit.Fields {
					got += " " + f.Path[2] + "=" + f.To
				}
			}
			if got != tt.wantChange {
				t.Errorf("change %q, want %q", got, tt.wantChange)
			}
			if tt.wantDaily != "" && (d.Change == nil || len(d.Change.Evidence) == 0 || d.Change.Evidence[0]["dailyPeaks"] != tt.wantDaily) {
				t.Errorf("change %+v, want dailyPeaks %q", d.Change, tt.wantDaily)
			}
			if tt.wantWithdr == "" && d.Withdraw != "" || !strings.Contains(d.Withdraw, tt.wantWithdr) {
				t.Errorf("withdraw %q, want %q", d.Withdraw, tt.wantWithdr)
			}
			var reasons []string
			for _, f := range d.Findings {
				reasons = append(reasons, f.Reason)
			}
			if tt.wantFinding != "" && !strings.Contains(strings.Join(reasons, ","), tt.wantFinding) {
				t.Errorf("findings %v, want %s", d.Findings, tt.wantFinding)
			}
			if _, ok := d.Bag[tt.wantBag]; tt.wantBag != "" && !ok {
				t.Errorf("bag %v lacks %s", d.Bag, tt.wantBag)
			}
			if _, ok := d.Bag[tt.noBag]; tt.noBag != "" && ok {
				t.Errorf("bag %v has %s", d.Bag, tt.noBag)
			}
			if tt.external == nil {
				first := utcDay(t0).AddDate(0, 0, 1).Add(dailyLookDelay).Sub(t0)
				if d.RequeueAfter < first || d.RequeueAfter >= first+dailyLookSpread {
					t.Errorf("RequeueAfter %v, want the next day's look in [%v, %v)", d.RequeueAfter, first, first+dailyLookSpread)
				}
			}
		})
	}
}

// Quotas look on their own at minutes of their own, not all at once after midnight.
func TestDailyLookSpreads(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		seen[dailyLook("team-"+strconv.Itoa(i), "compute", t0)] = true
	}
	if len(seen) < 30 {
		t.Fatalf("200 quotas look at %d distinct times", len(seen))
	}
	if dailyLook("a", "b", t0) != dailyLook("a", "b", t0.Add(time.Second))+time.Second {
		t.Fatalf("a quota's minute moves")
	}
}
