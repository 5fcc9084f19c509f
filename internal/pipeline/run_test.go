package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

const testKey = lifecycle.Key("test/team-a/compute")

// world is one Key's world: the Lease store, GitHub, the Events, the clock, which replicas are
// alive and what the detector currently wants.
type world struct {
	t      *testing.T
	store  *pipelinetest.MemStore
	forge  *forge
	events *events
	now    time.Time
	alive  map[string]bool
	wants  *lifecycle.Change
	// withdraw is what the detector says when it wants no change (Decision.Withdraw).
	withdraw string
	// bag is the detector's memory it asks to keep with that (Decision.Bag; nil: none).
	bag  map[string]string
	mode string // observe or pr
	auto bool
	// cooldown is the detector's: no new Change this long after the last one (none while a
	// proposal is open, like the quota detector).
	cooldown time.Duration
	// views are what the detector was shown, in order.
	views []View
	// gate, when set, is what a removal gate in front of the actuator answers (it waits, or
	// what it waited for failed); nil lets the Change through.
	gate *lifecycle.QueuedError
	// notices receive the Notices sent (nil: no notifier); held is the Request's HeldNotice.
	notices *notifier
	held    *lifecycle.Notice
	// seen is what the look read of the target (Request.Seen).
	seen string
	// hold is the detector's Decision.HoldMerge while it wants its Change (none: "").
	hold string
}

// gatedActuator is a removal gate in front of next, as internal/actuate/gate answers.
type gatedActuator struct {
	w    *world
	next Actuator
}

func (g gatedActuator) Apply(ctx context.Context, c lifecycle.Change, at time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if q := g.w.gate; q != nil {
		q := *q
		return lifecycle.Outcome{}, &q
	}
	return g.next.Apply(ctx, c, at, opts)
}

func newWorld(t *testing.T, mode string) *world {
	return &world{t: t, store: pipelinetest.NewMemStore(), forge: newForge(), events: newEvents(),
		now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), alive: map[string]bool{"a": true, "b": true}, mode: mode,
		cooldown: time.Hour}
}

func (w *world) replica(id string) *Pipeline {
	p := &Pipeline{
		Detector: "test", Store: w.store.As(id), Reporter: w.events, Identity: id,
		Vocab: Vocabulary{Proposed: "Proposed", Merged: "Merged", Declined: "Declined"},
		Alive: func(_ context.Context, other string) (bool, error) { return w.alive[other], nil },
		Log:   logr.Discard(),
	}
	if w.mode == "pr" {
		p.Actuator, p.Proposals = w.forge, w.forge
	} else {
		p.Actuator = observeActuator{w.events}
	}
	p.Actuator = gatedActuator{w: w, next: p.Actuator}
	if w.notices != nil {
		p.Notifier = w.notices
	}
	return p
}

// observeActuator reports the Change, like the observe Recorder's Apply.
type observeActuator struct{ e *events }

func (o observeActuator) Apply(ctx context.Context, c lifecycle.Change, at time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	return lifecycle.Outcome{}, o.e.Record(ctx, c, at)
}

func (w *world) run(p *Pipeline) (Result, error) {
	w.now = w.now.Add(time.Minute)
	wants := w.wants
	return p.Run(context.Background(), Request{
		Key: testKey, Now: w.now, Supersedes: supersedes, AutoMerge: w.auto, HeldNotice: w.held, Seen: w.seen,
		Target: lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-a", Name: "compute"},
		Decide: func(v View) Decision {
			w.views = append(w.views, v)
			if v.Bag["kept"] != "" {
				// An owner's keep, written into the Lease by another replica's extension server.
				return Decision{Withdraw: "its owner kept it"}
			}
			if wants == nil {
				return Decision{Withdraw: w.withdraw, Bag: w.bag}
			}
			if !v.ProposalOpen && !v.LastModified.IsZero() && w.now.Sub(v.LastModified) < w.cooldown {
				return Decision{RequeueAfter: v.LastModified.Add(w.cooldown).Sub(w.now)}
			}
			if w.hold != "" && v.ProposalOpen {
				return Decision{HoldMerge: w.hold}
			}
			c := *wants
			return Decision{Change: &c}
		},
	})
}

func (w *world) rec() state.Record { return w.store.Record(testKey) }

// TestRun walks the pipeline through each life-cycle path of one Key, including crashes
// between two steps and a second replica acting at the same time, and checks what users rely
// on: how many PRs are open, which Events were written, what the Lease remembers.
func TestRun(t *testing.T) {
	type step func(w *world)
	run := func(id string) step {
		return func(w *world) {
			if _, err := w.run(w.replica(id)); err != nil && !errors.Is(err, errCrash) {
				w.t.Fatalf("run %s: %v", id, err)
			}
		}
	}
	want := func(v int) step { return func(w *world) { w.wants = cpu(testKey, v) } }
	// withdraw: the detector wants no change any more, and says why.
	withdraw := func(w *world) { w.wants, w.withdraw = nil, "the environment was used again" }
	human := func(act string) step { return func(w *world) { w.forge.human(testKey, act, w.now) } }
	crashBefore := func(op string) step { return func(w *world) { w.store.FailNext(op, errCrash) } }
	die := func(id string) step { return func(w *world) { w.alive[id] = false } }
	noCooldown := func(w *world) { w.cooldown = 0 }
	// full: the budget has no room for a new proposal; room: it has.
	full := func(w *world) {
		w.forge.full = &lifecycle.QueuedError{Reason: lifecycle.QueuedBudget, Message: "10 of 10 pull requests are open", Until: w.now.Add(15 * time.Second)}
	}
	room := func(w *world) { w.forge.full = nil }
	// backupRunning: a removal gate waits for its backup; backupFailed: the backup of attempt
	// failed; gateOpen: the gate lets the Change through.
	backupRunning := func(w *world) {
		w.gate = &lifecycle.QueuedError{Reason: lifecycle.QueuedBackup, Message: "Velero backup velero/b-1 is InProgress", Until: w.now.Add(10 * time.Second)}
	}
	backupFailed := func(attempt string) step {
		return func(w *world) {
			w.gate = &lifecycle.QueuedError{Reason: lifecycle.QueuedBackup, Message: "Velero backup velero/" + attempt + " ended PartiallyFailed",
				Until: w.now.Add(30 * time.Minute), Failed: true, Attempt: attempt}
		}
	}
	gateOpen := func(w *world) { w.gate = nil }
	owner := func(w *world) {
		w.notices = &notifier{}
		w.held = &lifecycle.Notice{To: "ana@example.com", Owner: "ana"}
	}

	cases := []struct {
		name  string
		mode  string
		auto  bool
		steps []step
		check func(t *testing.T, w *world)
	}{
		{"observe: a decision is reported once", "observe", false,
			[]step{want(12), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.events.records != 1 || w.rec().Pending != "" {
					t.Errorf("records %d, pending %q", w.events.records, w.rec().Pending)
				}
			}},
		{"pr: after a merge the detector is asked again in the same run, and looks again when the cooldown ends", "pr", false,
			[]step{want(12), run("a"), human("merge"), func(w *world) {
				w.views = nil
				res, err := w.run(w.replica("a"))
				if err != nil || res.Merged == nil || res.RequeueAfter != w.cooldown {
					w.t.Errorf("run: %+v, %v; want the merge and a look again in %s", res, err, w.cooldown)
				}
			}},
			func(t *testing.T, w *world) {
				last := w.views[len(w.views)-1]
				if !last.LastModified.Equal(w.now) || last.ProposalOpen || last.Declined {
					t.Errorf("the detector's last view after the merge: %+v", last)
				}
			}},
		{"pr: after a decline the detector is asked again and told it was declined", "pr", false,
			[]step{want(12), run("a"), human("close"), func(w *world) { w.views = nil }, run("a")},
			func(t *testing.T, w *world) {
				if len(w.views) == 0 || !w.views[len(w.views)-1].Declined || w.views[len(w.views)-1].ProposalOpen {
					t.Errorf("the detector's views after the decline: %+v", w.views)
				}
				if n := len(w.forge.prs); n != 1 {
					t.Errorf("%d PRs, want the declined one only", n)
				}
			}},
		{"observe: after a decision, look again when the cooldown ends", "observe", false,
			[]step{want(12), func(w *world) {
				res, err := w.run(w.replica("a"))
				if err != nil || res.RequeueAfter != w.cooldown || res.Committed == nil {
					w.t.Errorf("run: %+v, %v; want a committed decision and a look again in %s", res, err, w.cooldown)
				}
			}},
			func(t *testing.T, w *world) {}},
		{"observe: clearing the pending mark conflicts: look again soon, report once", "observe", false,
			[]step{want(12), func(w *world) {
				w.store.FailNext("ClearPending", apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "x", errors.New("modified")))
				res, err := w.run(w.replica("a"))
				if err != nil || res.RequeueAfter != conflictRetry {
					w.t.Errorf("run: %+v, %v; want a quick retry", res, err)
				}
			}, run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending != "" || w.events.records != 1 {
					t.Errorf("record %+v, records %d", r, w.events.records)
				}
			}},
		{"pr: a finding still asks to look again when the cooldown ends", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.failApply = lifecycle.NewError("no manifest", lifecycle.ErrSourceNotFound)
				res, err := w.run(w.replica("a"))
				if err != nil || res.RequeueAfter != w.cooldown {
					w.t.Errorf("run: %+v, %v", res, err)
				}
			}},
			func(t *testing.T, w *world) {}},
		{"observe: crash after the Lease write, before the report: replayed once", "observe", false,
			[]step{want(12), crashBefore("ClearPending"), run("a"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.events.records != 1 || w.rec().Pending != "" {
					t.Errorf("records %d, pending %q", w.events.records, w.rec().Pending)
				}
			}},
		{"observe: a live replica's pending decision is not replayed by another", "observe", false,
			[]step{want(12), crashBefore("ClearPending"), run("a"), run("b")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending == "" || r.PendingBy != "a" {
					t.Errorf("b took a live replica's pending decision: %+v", r)
				}
			}},
		{"observe: a pending decision of a replica that is gone is taken over", "observe", false,
			[]step{want(12), crashBefore("ClearPending"), run("a"), die("a"), run("b")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending != "" || w.events.records != 1 {
					t.Errorf("pending %q, records %d", r.Pending, w.events.records)
				}
			}},
		{"unreadable pending: reported, dropped, decided afresh", "observe", false,
			[]step{func(w *world) {
				w.store.Put(state.Record{Key: testKey, Pending: "{not json", Version: "1"})
			}, want(12), run("a")},
			func(t *testing.T, w *world) {
				if w.events.count(ReasonInvalidState) != 1 || w.events.records != 1 || w.rec().Pending != "" {
					t.Errorf("events %s, records %d, pending %q", w.events, w.events.records, w.rec().Pending)
				}
			}},
		{"pr: a decision becomes one PR, locked with Kustos's head", "pr", false,
			[]step{want(12), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.openPRs() != 1 || r.Holder != "pr-1" || r.Head != "sha-1-1" || r.Pending != "" || w.events.count("Proposed") != 1 {
					t.Errorf("open %d, record %+v, events %s", w.forge.openPRs(), r, w.events)
				}
			}},
		{"pr: crash after the PR, before the lock: one PR", "pr", false,
			[]step{want(12), crashBefore("Lock"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || w.rec().Holder != "pr-1" {
					t.Errorf("PRs created %d, holder %q", w.forge.next, w.rec().Holder)
				}
			}},
		{"pr: the namespace went while the PR was opened (its Event refused): the PR is withdrawn", "pr", false,
			[]step{want(12), func(w *world) {
				w.events.failReason = "Proposed"
				w.events.failErr = apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a")
			}, run("a")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || w.forge.openPRs() != 0 {
					t.Errorf("PRs created %d, open %d; want the one opened, closed", w.forge.next, w.forge.openPRs())
				}
			}},
		{"pr: the namespace went while the PR was opened, and a person pushed onto it: left open to people, no error", "pr", false,
			[]step{want(12), func(w *world) {
				w.events.failReason = "Proposed"
				w.events.failErr = apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a")
				w.forge.afterApply = func() { w.forge.afterApply = nil; w.forge.human(testKey, "push", w.now) }
			}, func(w *world) {
				if _, err := w.run(w.replica("a")); err != nil {
					w.t.Errorf("run: %v; want the PR left to people without an error", err)
				}
			}},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || w.forge.openPRs() != 1 || len(w.forge.withdrawn) != 0 {
					t.Errorf("PRs created %d, open %d, comments %q; want the one opened left open", w.forge.next, w.forge.openPRs(), w.forge.withdrawn)
				}
			}},
		{"pr: the Lease was swept while the PR was opened (its lock refused): the PR is withdrawn", "pr", false,
			[]step{want(12), func(w *world) {
				w.store.FailNext("Lock", apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x"))
			}, run("a")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || w.forge.openPRs() != 0 {
					t.Errorf("PRs created %d, open %d; want the one opened, closed", w.forge.next, w.forge.openPRs())
				}
			}},
		{"pr: crash before the lock, then a human closes the PR: no second PR", "pr", false,
			[]step{want(12), crashBefore("Lock"), run("a"), human("close"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Holder != "" || r.ClosedValues == "" || w.events.count("Declined") != 1 {
					t.Errorf("PRs created %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: close during the replay of an update: no second PR, the update is remembered as declined", "pr", false,
			[]step{want(12), run("a"), want(14), crashBefore("Lock"), run("a"), human("close"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Holder != "" || r.Pending != "" || cpuOfJSON(r.ClosedValues) != 14 {
					t.Errorf("PRs created %d, record %+v", w.forge.next, r)
				}
			}},
		{"pr: closed values suppress the same recommendation after the cooldown", "pr", false,
			[]step{noCooldown, want(12), run("a"), human("close"), run("a"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || w.rec().Holder != "" || w.events.count("Declined") != 1 {
					t.Errorf("PRs created %d, record %+v, events %s", w.forge.next, w.rec(), w.events)
				}
			}},
		{"pr: a larger recommendation after a decline opens a new PR and keeps the memory", "pr", false,
			[]step{noCooldown, want(12), run("a"), human("close"), run("a"), want(14), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 2 || r.Holder != "pr-2" || cpuOfJSON(r.ClosedValues) != 12 {
					t.Errorf("PRs created %d, record %+v", w.forge.next, r)
				}
			}},
		{"pr: a withdrawn change closes its PR with a comment, once, and is not remembered as declined", "pr", false,
			[]step{want(12), run("a"), withdraw, run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.openPRs() != 0 || len(w.forge.withdrawn) != 1 || r.Holder != "" || r.ClosedValues != "" ||
					w.events.count(ReasonWithdrawn) != 1 || w.events.count("Declined") != 0 {
					t.Errorf("open %d, comments %q, record %+v, events %s", w.forge.openPRs(), w.forge.withdrawn, r, w.events)
				}
				if len(w.forge.withdrawn) == 1 && w.forge.withdrawn[0] != "the environment was used again" {
					t.Errorf("comment %q", w.forge.withdrawn[0])
				}
			}},
		{"pr: a withdrawn change is never merged, even clean with auto-merge", "pr", true,
			[]step{want(12), func(w *world) { w.auto = false }, run("a"), func(w *world) { w.auto = true }, withdraw, run("a")},
			func(t *testing.T, w *world) {
				if w.forge.merges != 0 || len(w.forge.withdrawn) != 1 {
					t.Errorf("merges %d, withdrawn %q", w.forge.merges, w.forge.withdrawn)
				}
			}},
		{"pr: crash after closing, before the unlock: unlocked once, not taken for a human's decline", "pr", false,
			[]step{want(12), run("a"), withdraw, func(w *world) { w.forge.failWithdraw = errCrash }, run("a"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if r.Holder != "" || r.ClosedValues != "" || len(w.forge.withdrawn) != 1 ||
					w.events.count(ReasonWithdrawn) != 1 || w.events.count("Declined") != 0 {
					t.Errorf("record %+v, comments %q, events %s", r, w.forge.withdrawn, w.events)
				}
			}},
		{"pr: crash before the unlock's Lease write: one comment, one Event", "pr", false,
			[]step{want(12), run("a"), withdraw, crashBefore("Unlock"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || len(w.forge.withdrawn) != 1 || w.events.count(ReasonWithdrawn) != 1 {
					t.Errorf("record %+v, comments %q, events %s", r, w.forge.withdrawn, w.events)
				}
			}},
		{"pr: another replica looking right after the withdrawal: one comment, one Event", "pr", false,
			[]step{want(12), run("a"), withdraw, run("a"), run("b")},
			func(t *testing.T, w *world) {
				if len(w.forge.withdrawn) != 1 || w.events.count(ReasonWithdrawn) != 1 {
					t.Errorf("comments %q, events %s", w.forge.withdrawn, w.events)
				}
			}},
		{"pr: merged before the withdrawal: merged, nothing to close", "pr", false,
			[]step{want(12), run("a"), human("merge"), withdraw, run("a")},
			func(t *testing.T, w *world) {
				if len(w.forge.withdrawn) != 0 || w.events.count("Merged") != 1 || w.rec().Holder != "" || w.events.count(ReasonMergedBeforeWithdrawal) != 0 {
					t.Errorf("comments %q, events %s, record %+v", w.forge.withdrawn, w.events, w.rec())
				}
			}},
		{"pr: merged just before the withdrawal took effect: reported as merged, with a Warning and a notice, never as withdrawn", "pr", false,
			[]step{owner, want(12), run("a"), withdraw, func(w *world) { w.forge.mergeFirst = true }, run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if r.Holder != "" || r.ClosedValues != "" || !r.LastModified.Equal(w.now.Add(-time.Minute)) {
					t.Errorf("record %+v, want unlocked as merged at the look that found it", r)
				}
				if w.events.count(ReasonMergedBeforeWithdrawal) != 1 || w.events.count("Merged") != 1 || w.events.count(ReasonWithdrawn) != 0 {
					t.Errorf("events %s", w.events)
				}
				if len(w.notices.sent) != 1 || w.notices.sent[0].Kind != NoticeMergedBeforeWithdrawal || w.notices.sent[0].To != "ana@example.com" ||
					w.notices.sent[0].Target.Name != "compute" || !strings.Contains(w.notices.sent[0].Text, "the environment was used again") {
					t.Errorf("notices %+v", w.notices.sent)
				}
			}},
		{"pr: merged first, crash before the Lease records the merge: the next look reports it, one Event", "pr", false,
			[]step{owner, want(12), run("a"), withdraw, func(w *world) { w.forge.mergeFirst = true }, crashBefore("Unlock"), run("a"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || r.ClosedValues != "" {
					t.Errorf("record %+v", r)
				}
				if w.events.count(ReasonMergedBeforeWithdrawal) != 1 || w.events.count("Merged") != 1 || w.events.count(ReasonWithdrawn) != 0 {
					t.Errorf("events %s", w.events)
				}
				// Sent again after the crash at most once, with the same ID (one message to its reader).
				if n := len(w.notices.sent); n < 1 || n > 2 || w.notices.sent[0].ID != w.notices.sent[n-1].ID {
					t.Errorf("notices %+v", w.notices.sent)
				}
			}},
		{"pr: merged first, the Warning cannot be written: the next look writes it", "pr", false,
			[]step{owner, want(12), run("a"), withdraw, func(w *world) {
				w.forge.mergeFirst = true
				w.events.failReason = ReasonMergedBeforeWithdrawal
			}, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || r.ClosedValues != "" {
					t.Errorf("record %+v", r)
				}
				if w.events.count(ReasonMergedBeforeWithdrawal) != 1 || w.events.count("Merged") != 1 || w.events.count(ReasonWithdrawn) != 0 || len(w.notices.sent) != 1 {
					t.Errorf("events %s, notices %+v", w.events, w.notices.sent)
				}
			}},
		{"observe and no holder: a withdrawal does nothing", "pr", false,
			[]step{withdraw, run("a")},
			func(t *testing.T, w *world) {
				if len(w.forge.withdrawn) != 0 || w.events.count(ReasonWithdrawn) != 0 {
					t.Errorf("comments %q, events %s", w.forge.withdrawn, w.events)
				}
			}},
		{"pr: the detector is shown the Change its open PR carries, and nothing without one", "pr", false,
			[]step{want(12), run("a"), func(w *world) { w.views = nil }, run("a"), human("merge"), run("a")},
			func(t *testing.T, w *world) {
				if len(w.views) < 2 || w.views[0].Proposed == nil || cpuOf(*w.views[0].Proposed) != 12 || w.views[len(w.views)-1].Proposed != nil {
					t.Errorf("views %+v: want the proposed cpu 12 while the PR is open, none after the merge", w.views)
				}
			}},
		{"pr: a larger recommendation updates the open PR", "pr", false,
			[]step{want(12), run("a"), want(14), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || cpuOfJSON(r.Proposed) != 14 || r.Head != "sha-1-2" {
					t.Errorf("PRs created %d, record %+v", w.forge.next, r)
				}
			}},
		{"pr: auto-merge merges Kustos's clean head and starts the cooldown", "pr", true,
			[]step{want(12), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.merges != 1 || r.Holder != "" || !r.LastModified.Equal(w.now) || w.events.count("Merged") != 1 {
					t.Errorf("merges %d, record %+v, events %s", w.forge.merges, r, w.events)
				}
			}},
		{"pr: without auto-merge a clean PR is left to people", "pr", false,
			[]step{want(12), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.forge.merges != 0 || w.rec().Holder != "pr-1" {
					t.Errorf("merges %d, record %+v", w.forge.merges, w.rec())
				}
			}},
		{"pr: a foreign push is never merged and reported once", "pr", true,
			[]step{want(12), run("a"), human("push"), run("a"), run("a"), want(14), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.merges != 0 || w.events.count(ReasonForeignCommit) != 1 || cpuOfJSON(r.Proposed) != 12 || w.forge.prs[testKey].head != "human-2" {
					t.Errorf("merges %d, events %s, record %+v", w.forge.merges, w.events, r)
				}
			}},
		{"pr: a withdrawal of a PR a person pushed onto leaves it to people, on the next leader too, after its memory is kept", "pr", false,
			[]step{want(12), run("a"), human("push"), run("a"), withdraw, run("a"), die("a"),
				func(w *world) { w.bag = map[string]string{"extended-until": "later"} }, run("b")},
			func(t *testing.T, w *world) {
				if w.forge.openPRs() != 1 || w.events.count(ReasonWithdrawn) != 0 || w.rec().Holder != "pr-1" {
					t.Errorf("open %d, events %s, record %+v; want the PR left open to people", w.forge.openPRs(), w.events, w.rec())
				}
			}},
		{"pr: a withdrawal decided on a read from before a person's push is refused, and the next look leaves the PR to people", "pr", false,
			[]step{want(12), run("a"), func(w *world) { w.forge.stale = true }, human("push"), withdraw, run("a"),
				func(w *world) { w.forge.stale = false }, run("a")},
			func(t *testing.T, w *world) {
				if w.forge.openPRs() != 1 || len(w.forge.withdrawn) != 0 || w.events.count(ReasonWithdrawn) != 0 ||
					w.events.count(ReasonForeignCommit) != 1 || w.rec().Holder != "pr-1" {
					t.Errorf("open %d, comments %q, events %s, record %+v; want the PR left open to people", w.forge.openPRs(), w.forge.withdrawn, w.events, w.rec())
				}
			}},
		{"pr: the detector is told an open PR a person pushed onto is left to people", "pr", false,
			[]step{want(12), run("a"), func(w *world) { w.views = nil }, run("a"), human("push"), run("a")},
			func(t *testing.T, w *world) {
				if n := len(w.views); n < 2 || w.views[0].LeftToPeople || !w.views[n-1].LeftToPeople || !w.views[n-1].ProposalOpen {
					t.Errorf("the detector's views: %+v; want LeftToPeople only after the push", w.views)
				}
			}},
		{"pr: a PR a person pushed onto and then closed is declined by people, not withdrawn, on the next leader after an extension", "pr", false,
			[]step{want(12), run("a"), human("push"), run("a"), human("close"), withdraw, die("a"),
				func(w *world) { w.bag = map[string]string{"extended-until": "later"} }, run("b")},
			func(t *testing.T, w *world) {
				if r := w.rec(); len(w.forge.withdrawn) != 0 || w.events.count(ReasonWithdrawn) != 0 || w.events.count("Declined") != 1 ||
					r.Holder != "" || r.ClosedValues == "" {
					t.Errorf("comments %q, events %s, record %+v; want it unlocked as declined by people", w.forge.withdrawn, w.events, r)
				}
			}},
		// A stop, a failed Event write or a Lease conflict (the extension server writes the same
		// Lease) between pushing a commit and recording it in the Lease: the next run must know
		// the head as Kustos's own, not disown its own PR.
		{"pr: crash after pushing an update, before the lock: the update is locked, not disowned", "pr", false,
			[]step{want(12), run("a"), want(14), crashBefore("Lock"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.events.count(ReasonForeignCommit) != 0 || r.Head != "sha-1-2" || cpuOfJSON(r.Proposed) != 14 || r.Pending != "" ||
					w.forge.prs[testKey].commits != 2 {
					t.Errorf("events %s, record %+v, commits %d", w.events, r, w.forge.prs[testKey].commits)
				}
			}},
		{"pr: the Proposed Event fails after pushing an update: the update is locked on the next run", "pr", true,
			[]step{want(12), func(w *world) { w.auto = false }, run("a"), want(14), func(w *world) { w.events.failReason = "Proposed" },
				run("a"), func(w *world) { w.auto = true }, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.events.count(ReasonForeignCommit) != 0 || w.forge.merges != 1 || w.forge.prs[testKey].change.Edit.Fields[0].To != "14" {
					t.Errorf("events %s, merges %d; want the update merged", w.events, w.forge.merges)
				}
			}},
		{"pr: a Lease conflict after pushing an update: the update is locked on the next run", "pr", false,
			[]step{want(12), run("a"), want(14), func(w *world) {
				w.store.FailNext("Lock", apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "x", errors.New("modified")))
			}, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); w.events.count(ReasonForeignCommit) != 0 || r.Head != "sha-1-2" || r.Pending != "" {
					t.Errorf("events %s, record %+v", w.events, r)
				}
			}},
		{"pr: crash after pushing a rebuild, before the lock: merged afterwards with auto-merge", "pr", true,
			[]step{want(12), func(w *world) { w.auto = false }, run("a"), human("dirty"), crashBefore("Lock"),
				func(w *world) { w.auto = true }, run("a"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.events.count(ReasonForeignCommit) != 0 || w.forge.merges != 1 || w.rec().Holder != "" {
					t.Errorf("events %s, merges %d, record %+v", w.events, w.forge.merges, w.rec())
				}
			}},
		{"pr: crash after pushing an update, then the change is withdrawn: the PR is closed, never left open", "pr", false,
			[]step{want(12), run("a"), want(14), crashBefore("Lock"), run("a"), withdraw, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); w.forge.openPRs() != 0 || len(w.forge.withdrawn) != 1 || r.Holder != "" || w.events.count(ReasonForeignCommit) != 0 {
					t.Errorf("open %d, withdrawn %q, record %+v, events %s", w.forge.openPRs(), w.forge.withdrawn, r, w.events)
				}
			}},
		{"pr: a human pushes to the new PR before the lock: the replay never force-pushes over it", "pr", true,
			[]step{want(12), crashBefore("Lock"), run("a"), human("push"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				p := w.forge.prs[testKey]
				if p.head != "human-2" || w.forge.merges != 0 || w.events.count(ReasonForeignCommit) != 1 || w.rec().Pending != "" {
					t.Errorf("head %s, merges %d, events %s, record %+v", p.head, w.forge.merges, w.events, w.rec())
				}
			}},
		{"pr: a withdrawal keeps the memory of an earlier human decline", "pr", false,
			[]step{noCooldown, want(12), run("a"), human("close"), run("a"), want(14), run("a"), withdraw, run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); len(w.forge.withdrawn) != 1 || r.Holder != "" || cpuOfJSON(r.ClosedValues) != 12 {
					t.Errorf("withdrawn %q, record %+v; want the declined 12 still remembered", w.forge.withdrawn, r)
				}
			}},
		{"pr: a detector without a supersede rule never updates its open PR (and does not crash)", "pr", false,
			[]step{want(12), run("a"), want(14), func(w *world) {
				p := w.replica("a")
				w.now = w.now.Add(time.Minute)
				c := *w.wants
				if _, err := p.Run(context.Background(), Request{Key: testKey, Now: w.now,
					Target: lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-a", Name: "compute"},
					Decide: func(View) Decision { return Decision{Change: &c} }}); err != nil {
					w.t.Errorf("run: %v", err)
				}
			}},
			func(t *testing.T, w *world) {
				if r := w.rec(); cpuOfJSON(r.Proposed) != 12 || w.forge.prs[testKey].commits != 1 {
					t.Errorf("record %+v, commits %d", r, w.forge.prs[testKey].commits)
				}
			}},
		{"pr: dirty is rebuilt without auto-merge", "pr", false,
			[]step{want(12), run("a"), human("dirty"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Head != "sha-1-2" || w.forge.next != 1 {
					t.Errorf("record %+v", r)
				}
			}},
		{"pr: dirty is rebuilt and then merged with auto-merge", "pr", true,
			[]step{want(12), func(w *world) { w.auto = false }, run("a"), human("dirty"), func(w *world) { w.auto = true }, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if w.forge.merges != 1 || w.forge.prs[testKey].commits != 2 {
					t.Errorf("merges %d, commits %d", w.forge.merges, w.forge.prs[testKey].commits)
				}
			}},
		{"pr: behind is updated with auto-merge", "pr", true,
			[]step{want(12), func(w *world) { w.auto = false }, run("a"), human("behind"), func(w *world) { w.auto = true }, run("a")},
			func(t *testing.T, w *world) {
				if w.forge.prs[testKey].commits != 2 || w.rec().Head != "sha-1-2" {
					t.Errorf("commits %d, record %+v", w.forge.prs[testKey].commits, w.rec())
				}
			}},
		{"pr: a dirty PR whose rebuild is refused: reported once, tried again at the next poll", "pr", false,
			[]step{want(12), run("a"), human("dirty"), func(w *world) {
				w.forge.failApply = lifecycle.NewError("yamledit: conflict", lifecycle.ErrSourceConflict)
				res, err := w.run(w.replica("a"))
				if err != nil || res.RequeueAfter != time.Minute {
					w.t.Errorf("run: %+v, %v; want the poll interval", res, err)
				}
			}, run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "pr-1" || r.Pending != "" || w.events.count(ReasonSourceConflict) != 1 {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: behind is left alone without auto-merge", "pr", false,
			[]step{want(12), run("a"), human("behind"), run("a")},
			func(t *testing.T, w *world) {
				if w.forge.prs[testKey].commits != 1 {
					t.Errorf("commits %d", w.forge.prs[testKey].commits)
				}
			}},
		{"pr: merged by a human: unlocked, cooldown starts", "pr", false,
			[]step{want(12), run("a"), human("merge"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || w.events.count("Merged") != 1 || r.ClosedValues != "" {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: merged during the replay of an update: the update is dropped", "pr", false,
			[]step{want(12), run("a"), want(14), crashBefore("Lock"), run("a"), human("merge"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || r.Pending != "" || w.events.count("Merged") != 1 {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: the base already holds the change: nothing opened, pending cleared", "pr", false,
			[]step{want(12), func(w *world) { w.forge.inBase = true }, run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Holder != "" || r.Pending != "" || w.forge.next != 0 {
					t.Errorf("record %+v", r)
				}
			}},
		{"pr: a rate limit keeps the pending decision and requeues at the reset", "pr", false,
			[]step{want(12), func(w *world) { w.forge.failApply = rateLimited{w.now.Add(time.Minute + 90*time.Second)} }, func(w *world) {
				res, err := w.run(w.replica("a"))
				if err != nil || res.RequeueAfter != 90*time.Second {
					w.t.Errorf("rate limited run: %+v, %v", res, err)
				}
			}},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending == "" || r.Holder != "" {
					t.Errorf("record %+v", r)
				}
			}},
		{"pr: a source that cannot be edited is a finding, reported once, and the detector goes on", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.failApply = lifecycle.NewError("yamledit: unsupported edit: anchors", lifecycle.ErrSourceNotEditable)
			}, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending != "" || w.events.count(ReasonSourceNotEditable) != 1 || w.events.records != 1 {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: a refused pause (a target outside Git, no --allow entry) is a PauseNotAllowed finding, reported once, and the detector goes on", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.failApply = fmt.Errorf("direct: pause Deployment team/web: the test detector may not pause apps/deployments in the cluster: %w", lifecycle.ErrPauseNotAllowed)
			}, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending != "" || w.events.count(ReasonPauseNotAllowed) != 1 || w.events.count(ReasonDeleteNotAllowed) != 0 || w.events.records != 1 {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: a refused deletion is a DeleteNotAllowed finding, reported once", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.failApply = fmt.Errorf("direct: delete helm release team/web: %w", lifecycle.ErrDeleteNotAllowed)
			}, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); r.Pending != "" || w.events.count(ReasonDeleteNotAllowed) != 1 || w.events.records != 1 {
					t.Errorf("record %+v, events %s", r, w.events)
				}
			}},
		{"pr: two replicas at once: the second waits while the first proposes", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.afterApply = func() {
					w.forge.afterApply = nil
					if _, err := w.run(w.replica("b")); err != nil {
						w.t.Errorf("replica b: %v", err)
					}
				}
			}, run("a"), run("b")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || len(w.forge.applies) != 1 || w.rec().Holder != "pr-1" {
					t.Errorf("PRs %d, applies %v, record %+v", w.forge.next, w.forge.applies, w.rec())
				}
			}},
		{"pr: a replica that crashed mid-proposal is replaced once its liveness expires", "pr", false,
			[]step{want(12), crashBefore("Lock"), run("a"), run("b"), die("a"), run("b")},
			func(t *testing.T, w *world) {
				if w.forge.next != 1 || len(w.forge.applies) != 2 || w.rec().Holder != "pr-1" {
					t.Errorf("PRs %d, applies %v, record %+v", w.forge.next, w.forge.applies, w.rec())
				}
			}},
		{"pr: a replica crashed before the lock, a human closed the PR, another replica takes over: no second PR", "pr", false,
			[]step{want(12), crashBefore("Lock"), run("a"), human("close"), die("a"), run("b"), run("b")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Holder != "" || r.Pending != "" || w.events.count("Declined") != 1 {
					t.Errorf("PRs created %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: over budget the Change waits in its Lease with one ProposalQueued Event, then goes when room frees", "pr", false,
			[]step{want(12), full, run("a"), run("a"), run("a"), func(w *world) {
				r := w.rec()
				if w.forge.next != 0 || r.Pending == "" || r.Queued != "budget: 10 of 10 pull requests are open" || w.events.count(ReasonQueued) != 1 {
					w.t.Fatalf("while full: PRs %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}, room, run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Holder != "pr-1" || r.Pending != "" || r.Queued != "" || w.events.count("Proposed") != 1 {
					t.Errorf("after room freed: PRs %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: a queued Change its detector takes back is dropped, never proposed", "pr", false,
			[]step{want(12), full, run("a"), withdraw, run("a"), room, run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 0 || r.Pending != "" || r.Queued != "" || w.events.count(ReasonWithdrawn) != 1 {
					t.Errorf("PRs %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: a queued Change that grows is replaced while it waits, and the larger one is proposed", "pr", false,
			[]step{want(12), full, run("a"), want(14), run("a"), func(w *world) {
				var c lifecycle.Change
				if err := jsonUnmarshal(w.rec().Pending, &c); err != nil || cpuOf(c) != 14 {
					w.t.Fatalf("pending while queued: %q, %v", w.rec().Pending, err)
				}
			}, room, run("a")},
			func(t *testing.T, w *world) {
				p := w.forge.prs[testKey]
				if w.forge.next != 1 || p == nil || cpuOf(p.change) != 14 || w.events.count(ReasonQueued) != 1 {
					t.Errorf("PRs %d, proposed %+v, events %s (one ProposalQueued per decision)", w.forge.next, p, w.events)
				}
			}},
		{"pr: a decision that opened its PR before a crash, then waited, is declined when a human closed that PR meanwhile", "pr", false,
			[]step{want(12), crashBefore("Lock"), run("a"), full, run("a"), human("close"), room, run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Pending != "" || r.Holder != "" || r.ClosedValues == "" || w.events.count("Declined") != 1 {
					t.Errorf("PRs %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: a queued decision of a replica that is gone is taken over by another", "pr", false,
			[]step{want(12), full, run("a"), die("a"), room, run("b")},
			func(t *testing.T, w *world) {
				if r := w.rec(); w.forge.next != 1 || r.Holder != "pr-1" {
					t.Errorf("PRs %d, record %+v", w.forge.next, r)
				}
			}},
		{"observe: a running removal gate holds the Change with one ProposalQueued Event and no Warning, then lets it through once", "observe", false,
			[]step{want(12), owner, backupRunning, run("a"), run("a"), run("a"), func(w *world) {
				r := w.rec()
				if w.events.records != 0 || r.Pending == "" || !strings.HasPrefix(r.Queued, "backup: ") || w.events.count(ReasonQueued) != 1 ||
					w.events.count(ReasonRemovalHeld) != 0 || len(w.notices.sent) != 0 {
					w.t.Fatalf("while the backup runs: records %d, record %+v, events %s, notices %d", w.events.records, r, w.events, len(w.notices.sent))
				}
			}, gateOpen, run("a"), run("a")},
			func(t *testing.T, w *world) {
				if r := w.rec(); w.events.records != 1 || r.Pending != "" || r.Queued != "" {
					t.Errorf("after the backup: records %d, record %+v", w.events.records, r)
				}
			}},
		{"observe: a failed removal gate holds the Change with one RemovalHeld Warning and one owner notice per attempt, never carrying it out", "observe", false,
			[]step{want(12), owner, backupFailed("b-1"), run("a"), run("a"), func(w *world) {
				if w.events.count(ReasonRemovalHeld) != 1 || len(w.notices.sent) != 1 || w.events.records != 0 {
					w.t.Fatalf("first failure: events %s, notices %d, records %d", w.events, len(w.notices.sent), w.events.records)
				}
			}, backupRunning, run("a"), backupFailed("b-2"), run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.events.count(ReasonRemovalHeld) != 2 || len(w.notices.sent) != 2 || w.events.records != 0 || r.Pending == "" {
					t.Fatalf("two failed attempts: events %s, notices %d, records %d, record %+v", w.events, len(w.notices.sent), w.events.records, r)
				}
				n := w.notices.sent[1]
				if n.To != "ana@example.com" || n.Kind != NoticeHeld || n.Target.Name != "compute" || !strings.Contains(n.Text, "b-2 ended PartiallyFailed") ||
					n.ID == w.notices.sent[0].ID {
					t.Errorf("notice: %+v", n)
				}
			}},
		{"pr: a failed removal gate opens no proposal; the Change is proposed once the retry succeeds", "pr", false,
			[]step{want(12), backupFailed("b-1"), run("a"), run("a"), gateOpen, run("a"), run("a")},
			func(t *testing.T, w *world) {
				r := w.rec()
				if w.forge.next != 1 || r.Holder != "pr-1" || r.Pending != "" || w.events.count(ReasonRemovalHeld) != 1 {
					t.Errorf("PRs %d, record %+v, events %s", w.forge.next, r, w.events)
				}
			}},
		{"pr: the Lease changed under us (conflict): nothing carried out", "pr", false,
			[]step{want(12), func(w *world) {
				w.forge.afterApply = nil
				p := w.replica("a")
				p.Store = conflictingStore{w.store.As("a")}
				res, err := w.run(p)
				if err != nil || res.RequeueAfter != conflictRetry || len(w.forge.applies) != 0 {
					w.t.Errorf("conflict run: %+v, %v, applies %v", res, err, w.forge.applies)
				}
			}},
			func(t *testing.T, w *world) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.mode)
			w.auto = tc.auto
			for _, s := range tc.steps {
				s(w)
			}
			tc.check(t, w)
		})
	}
}

type rateLimited struct{ at time.Time }

func (r rateLimited) Error() string              { return "rate limited" }
func (r rateLimited) RetryAt() (time.Time, bool) { return r.at, true }

// conflictingStore loses every race: someone else always wrote first.
type conflictingStore struct{ *pipelinetest.ReplicaStore }

func (c conflictingStore) MarkModified(ctx context.Context, rec state.Record, t time.Time, pending string) (state.Record, error) {
	rec.Version = "stale"
	return c.ReplicaStore.MarkModified(ctx, rec, t, pending)
}

func cpuOfJSON(s string) int {
	var c lifecycle.Change
	if err := jsonUnmarshal(s, &c); err != nil {
		return -1
	}
	return cpuOf(c)
}
