package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// limitedStep is fakeStep with a limit on failed attempts, as the submission has one.
type limitedStep struct {
	fakeStep
	max int
	// foreign fails the next Start as an object Kustos did not create.
	foreign bool
	// crashStart makes the next Start end (a crash) before the object exists.
	crashStart bool
}

func (s *limitedStep) Start(ctx context.Context, c lifecycle.Change, name string) error {
	if s.crashStart {
		s.crashStart = false
		return errCrash
	}
	if s.foreign {
		s.foreign = false
		s.starts = append(s.starts, name)
		return &ForeignError{Message: "a Job Kustos did not create holds the name " + name}
	}
	return s.fakeStep.Start(ctx, c, name)
}

func (s *limitedStep) MaxAttempts() int { return s.max }

func (s *limitedStep) GaveUp(c lifecycle.Change, attempts int, last string) (string, string) {
	return ReasonSubmittedNothing, fmt.Sprintf("submitted nothing: %d attempts of %s failed (the last: %s)", attempts, c.Target, last)
}

// TestAttemptsAcrossDecisions: a Limited step counts its failed attempts per target, across
// decisions, in the target's Lease. A tenant who makes the detector decide again (touching its
// environment) does not get a fresh set of attempts: an attempt of an earlier decision that did
// not succeed (failed, or cut short by the new decision while it ran) counts as failed. Only a
// step that succeeds resets the count (and the Lease going, with its target). One row per
// transition, including crashes between two steps and a second replica.
func TestAttemptsAcrossDecisions(t *testing.T) {
	ns := newNamespace(t, "gate-attempts")
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: ns, Identity: "a"}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

	type world struct {
		t         *testing.T
		step      *limitedStep
		next      *next
		rep       *reporter
		gate      *Actuator
		now       time.Time
		decidedAt time.Time
		c         lifecycle.Change
		prog      *leaseProgress
		err       error
	}
	type action func(w *world)
	apply := func(w *world) {
		w.now = w.now.Add(time.Second)
		if w.prog == nil || !w.prog.crash {
			rec, err := store.Get(context.Background(), w.c.Key)
			if err != nil {
				w.t.Fatal(err)
			}
			w.prog = &leaseProgress{store: store, rec: rec, crash: w.prog != nil && w.prog.crash}
		}
		_, w.err = w.gate.Apply(context.Background(), w.c, w.decidedAt, lifecycle.ProposeOptions{Progress: w.prog})
	}
	// decide records a new decision in the Lease, as the pipeline does when the detector decides
	// again (a tenant touched its environment): the gate sees a new decision time.
	decide := func(w *world) {
		w.decidedAt = w.now.Add(time.Millisecond)
		rec, err := store.Get(context.Background(), w.c.Key)
		if err != nil {
			w.t.Fatal(err)
		}
		if _, err := store.MarkModified(context.Background(), rec, w.decidedAt, "x"); err != nil {
			w.t.Fatal(err)
		}
	}
	finish := func(p Phase) action {
		return func(w *world) {
			for name := range w.step.objects {
				if w.step.objects[name] == PhaseRunning {
					w.step.objects[name] = p
				}
			}
		}
	}
	crash := func(w *world) { w.prog = &leaseProgress{crash: true} }
	retry := func(w *world) { w.now = w.now.Add(DefaultRetryAfter) }
	poll := func(w *world) { w.now = w.now.Add(DefaultPoll) }
	running := func(w *world) {
		var q *lifecycle.QueuedError
		if !errors.As(w.err, &q) || q.Failed {
			w.t.Fatalf("Apply: %v; want the step running", w.err)
		}
	}
	held := func(msg string) action {
		return func(w *world) {
			var q *lifecycle.QueuedError
			if !errors.As(w.err, &q) || !q.Failed || !strings.Contains(q.Message, msg) {
				w.t.Fatalf("Apply: %v; want the change held saying %q", w.err, msg)
			}
		}
	}
	last := func(msg string) action {
		return func(w *world) {
			held(msg)(w)
			if !strings.Contains(w.err.Error(), "that was the last attempt") {
				w.t.Fatalf("Apply: %v; want the last attempt", w.err)
			}
		}
	}
	wantErr := func(target error) action {
		return func(w *world) {
			if !errors.Is(w.err, target) {
				w.t.Fatalf("Apply: %v; want %v", w.err, target)
			}
		}
	}
	wantOK := func(w *world) {
		if w.err != nil {
			w.t.Fatalf("Apply: %v", w.err)
		}
	}
	// failOnce is one attempt that starts and fails, and the look that finds it failed.
	failOnce := func(msg string) []action {
		return []action{apply, running, finish(PhaseFailed), apply, held(msg)}
	}
	// failTwice is a first decision whose two attempts failed.
	failTwice := join([]action{decide}, failOnce("attempt 1 of 3"), []action{retry}, failOnce("attempt 2 of 3"), []action{retry})

	cases := []struct {
		name    string
		actions []action
		starts  int // Start calls that reached the step
		objects int // objects created
		applied int // Changes handed on
		gaveUp  int // SubmittedNothing Events
	}{
		{"within one decision: the third failure is the last, then the change goes",
			join(failTwice, failOnce("attempt 3 of 3"), []action{last("attempt 3 of 3"), poll, apply, wantOK}), 3, 3, 1, 1},
		{"a new decision after two failures: its first failure is the last",
			join(failTwice, []action{decide}, failOnce("attempt 3 of 3"), []action{last("attempt 3 of 3"), poll, apply, wantOK}), 3, 3, 1, 1},
		{"a new decision while an attempt runs: the attempt cut short counts as failed",
			join([]action{decide, apply, running, decide, apply, running, decide}, failOnce("attempt 3 of 3"),
				[]action{last("attempt 3 of 3"), poll, apply, wantOK}), 3, 3, 1, 1},
		{"an attempt that succeeds resets the count: the next decision has all its attempts",
			join(failTwice, []action{apply, running, finish(PhaseDone), apply, wantOK, decide}, failOnce("attempt 1 of 3")), 4, 4, 1, 0},
		{"given up, then a new decision: one attempt, and its failure lets the change go",
			join(failTwice, failOnce("attempt 3 of 3"), []action{poll, apply, wantOK, decide}, failOnce("attempt 4"),
				[]action{last("attempt 4"), poll, apply, wantOK}), 4, 4, 2, 2},
		{"a crash between creating the new decision's object and recording it: followed, counted once",
			join(failTwice, []action{decide, crash, apply, wantErr(errCrash)}, failOnce("attempt 3 of 3"),
				[]action{last("attempt 3 of 3")}), 4, 3, 0, 0},
		{"random names carry over a new decision; a crash between recording the name and creating the object creates it once",
			join([]action{decide, func(w *world) { w.step.foreign = true }, apply, held("attempt 1 of 3"), retry, decide,
				func(w *world) { w.step.crashStart = true }, apply, wantErr(errCrash), func(w *world) {
					rec, _ := store.Get(context.Background(), w.c.Key)
					if !strings.Contains(rec.Steps["backup"], `"phase":"starting"`) {
						w.t.Fatalf("progress %s; want the random name recorded as starting", rec.Steps["backup"])
					}
				}}, failOnce("attempt 2 of 3"), []action{func(w *world) {
				for name := range w.step.objects {
					if strings.Count(name, "-") != 4 { // kustos-backup-<hash>-<attempt>-<random>
						w.t.Errorf("object %s has no random part", name)
					}
				}
			}}), 2, 1, 0, 0},
		{"a second replica at a new decision: its record conflicts, the count is not doubled",
			join(failTwice, []action{decide, func(w *world) {
				rec, _ := store.Get(context.Background(), w.c.Key)
				mine := &leaseProgress{store: store, rec: rec}
				other := &leaseProgress{store: store, rec: rec}
				if _, err := w.gate.Apply(context.Background(), w.c, w.decidedAt, lifecycle.ProposeOptions{Progress: mine}); !errors.Is(err, lifecycle.ErrQueued) {
					w.t.Fatalf("first replica: %v", err)
				}
				if _, err := w.gate.Apply(context.Background(), w.c, w.decidedAt, lifecycle.ProposeOptions{Progress: other}); !apierrors.IsConflict(err) {
					w.t.Fatalf("second replica: %v, want a conflict", err)
				}
			}, apply, running, finish(PhaseFailed), apply, last("attempt 3 of 3")}), 4, 3, 0, 0},
		{"a record of the previous release (no carried count) counts its decision's attempts",
			[]action{decide, func(w *world) {
				rec, _ := store.Get(context.Background(), w.c.Key)
				old := fmt.Sprintf(`{"decidedAt":%q,"attempt":2,"object":"kustos-backup-0123456789ab-2","phase":"failed","since":%q,"message":"gone"}`,
					w.decidedAt.Format(time.RFC3339Nano), w.now.Format(time.RFC3339Nano))
				if _, err := store.SetStep(context.Background(), rec, "backup", old); err != nil {
					w.t.Fatal(err)
				}
			}, retry, decide, apply, running, finish(PhaseFailed), apply, last("attempt 3 of 3")}, 1, 1, 0, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "exam", Name: fmt.Sprintf("desktop-%d", i)}
			c := lifecycle.Change{Key: lifecycle.KeyFor("expiry", target), Detector: "expiry", Target: target, Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
			w := &world{t: t, step: &limitedStep{fakeStep: fakeStep{objects: map[string]Phase{}}, max: 3}, next: &next{},
				rep: &reporter{ids: map[string]bool{}}, now: t0, c: c}
			w.gate = &Actuator{Steps: []Step{w.step}, Next: w.next, Now: func() time.Time { return w.now }, Reporter: w.rep, Log: logr.Discard()}
			for _, a := range tc.actions {
				a(w)
			}
			if len(w.step.starts) != tc.starts || len(w.step.objects) != tc.objects || w.next.applied != tc.applied || w.rep.count(ReasonSubmittedNothing) != tc.gaveUp {
				t.Errorf("starts %v, objects %v, applied %d, given up %d; want %d starts, %d objects, %d applied, %d given up",
					w.step.starts, w.step.objects, w.next.applied, w.rep.count(ReasonSubmittedNothing), tc.starts, tc.objects, tc.applied, tc.gaveUp)
			}
		})
	}
}

func join[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
