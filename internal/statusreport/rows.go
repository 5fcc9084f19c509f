package statusreport

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Row is one tracked Key or Cleaner.
type Row struct {
	Detector string `json:"detector"`
	// Target is kind[.group]/namespace/name (quota Keys: ResourceQuota/namespace/name).
	Target string `json:"target"`
	// PullRequest is the open pull request ("#12"), empty without one.
	PullRequest string `json:"pullRequest,omitempty"`
	// LastAction is the last decision, merge or decline; nil if none.
	LastAction *time.Time `json:"lastAction,omitempty"`
	// Pending: a decision recorded and not yet carried out (by the replica named), or waiting
	// to be proposed ("queued (budget)").
	Pending string `json:"pending,omitempty"`
	// Queued says why the decision waits to be proposed (the pull-request budget, its group
	// gathering).
	Queued string `json:"queued,omitempty"`
	// Group names the group whose pull request carries the target's Change
	// ("expiry/@namespace/team-a"); empty when it has a pull request of its own.
	Group string `json:"group,omitempty"`
	// Ready and Reason are a Cleaner's root Ready condition; empty for Keys without conditions.
	Ready  string `json:"ready,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Message says why, when not Ready.
	Message string `json:"message,omitempty"`
	// NextCheck is when Kustos looks again without a change (Cleaners); nil if unknown.
	NextCheck *time.Time `json:"nextCheck,omitempty"`
	// Age is since the Key's Lease or the Cleaner was created.
	Age time.Duration `json:"age"`
	// Problem is set when the Lease cannot be read (a hand edit).
	Problem string `json:"problem,omitempty"`
}

// Rows turns state Leases and Cleaners into rows sorted by detector and target. Leases that
// are not Kustos state are skipped, and so are expiry Leases with nothing to report
// (quietExpiry).
func Rows(leases []coordinationv1.Lease, cleaners []v1alpha1.Cleaner, now time.Time) []Row {
	var rows []Row
	groupOf := map[string]string{}
	for i := range leases {
		if leases[i].Labels[state.LabelRole] != state.RoleGroup {
			continue
		}
		var members map[string]json.RawMessage
		if json.Unmarshal([]byte(leases[i].Annotations[state.AnnotationMembers]), &members) == nil {
			for k := range members {
				groupOf[k] = leases[i].Annotations[state.AnnotationGroup]
			}
		}
	}
	for i := range leases {
		l := &leases[i]
		rec, ok, err := state.ParseLease(l)
		if !ok {
			continue
		}
		row := Row{Detector: string(rec.Key), Target: string(rec.Key), Age: age(l.CreationTimestamp.Time, now)}
		if p, ok := rec.Key.Parts(); ok {
			row.Detector = lifecycle.DetectorLabel(p.Detector)
			kind := p.KindGroup
			if kind == "" && p.Detector == "quota" {
				kind = "ResourceQuota"
			}
			row.Target = strings.TrimPrefix(kind+"/"+p.Namespace+"/"+p.Name, "/")
		}
		if err != nil {
			row.Problem = err.Error()
		}
		if n, ok := strings.CutPrefix(rec.Holder, "pr-"); ok {
			row.PullRequest = "#" + n
		}
		if !rec.LastModified.IsZero() {
			t := rec.LastModified.UTC()
			row.LastAction = &t
		}
		if rec.Pending != "" {
			row.Pending = "yes"
			if rec.PendingBy != "" {
				row.Pending = "by " + rec.PendingBy
			}
		}
		if rec.Queued != "" {
			why, _, _ := strings.Cut(rec.Queued, ":")
			row.Pending, row.Queued = "queued ("+why+")", rec.Queued
		}
		row.Group = groupOf[string(rec.Key)]
		if quietExpiry(rec, row) {
			continue
		}
		rows = append(rows, row)
	}
	for i := range cleaners {
		cl := &cleaners[i]
		row := Row{Detector: ephemeral.Name, Target: "Cleaner.kustos.io/" + cl.Namespace + "/" + cl.Name,
			Age: age(cl.CreationTimestamp.Time, now), Ready: "Unknown"}
		if c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			row.Ready, row.Reason = string(c.Status), c.Reason
			if c.Status != "True" {
				row.Message = c.Message
			}
			if c.ObservedGeneration != cl.Generation {
				row.Ready, row.Reason = "Unknown", fmt.Sprintf("NotObserved (generation %d, status of %d)", cl.Generation, c.ObservedGeneration)
			}
		}
		if n := cl.Status.NextScheduledEvaluation; n != nil {
			t := n.UTC()
			row.NextCheck = &t
		}
		if ev := cl.Status.LastEvaluation; ev != nil {
			t := ev.Time.UTC()
			row.LastAction = &t
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Detector != rows[j].Detector {
			return rows[i].Detector < rows[j].Detector
		}
		return rows[i].Target < rows[j].Target
	})
	return rows
}

// quietExpiry: an expiry Lease with nothing to report — no decision pending or queued, no pull
// request, no warning sent, no last action, readable. Every scheduled environment has a Lease
// (it records the owner and deadline for the owner's page); `kustos status` lists only those
// Kustos did something about, as before.
func quietExpiry(rec state.Record, row Row) bool {
	if p, ok := rec.Key.Parts(); !ok || p.Detector != expiry.DetectorName {
		return false
	}
	if row.Problem != "" || row.PullRequest != "" || row.LastAction != nil || row.Pending != "" || row.Queued != "" || row.Group != "" {
		return false
	}
	st, _ := expiry.ParseState(rec.Bag)
	return st.WarningFor.IsZero() && st.WarnedAt.IsZero()
}

// age is now - created to the second; 0 when created is unknown.
func age(created, now time.Time) time.Duration {
	if created.IsZero() {
		return 0
	}
	return now.Sub(created).Truncate(time.Second)
}
