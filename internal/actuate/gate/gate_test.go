package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// leaseProgress is the pipeline's lifecycle.Progress over a real state Lease: writes go on the
// record read, so a Lease someone else wrote meanwhile makes them conflict.
type leaseProgress struct {
	store *state.Store
	rec   state.Record
	// crash fails the next SetStep before it reaches the API server.
	crash bool
}

func (p *leaseProgress) Step(name string) string { return p.rec.Steps[name] }

func (p *leaseProgress) SetStep(ctx context.Context, name, value string) error {
	if p.crash {
		p.crash = false
		return errCrash
	}
	rec, err := p.store.SetStep(ctx, p.rec, name, value)
	if err != nil {
		return err
	}
	p.rec = rec
	return nil
}

var errCrash = errors.New("crash")

// fakeStep is a step whose objects are a map: the gate's life cycle is what is tested here; the
// real steps' objects are tested against the API server in velero_test.go and submission_test.go.
type fakeStep struct {
	objects map[string]Phase
	starts  []string
	// refuse fails every Start with ErrFailed.
	refuse bool
}

func (s *fakeStep) Name() string { return "backup" }

func (s *fakeStep) Applies(_ context.Context, c lifecycle.Change) (bool, error) {
	return c.Edit.Op == lifecycle.EditDelete, nil
}

func (s *fakeStep) Start(_ context.Context, _ lifecycle.Change, name string) error {
	s.starts = append(s.starts, name)
	if s.refuse {
		return errors.Join(ErrFailed, errors.New("kustos.io/submit-to is not https"))
	}
	if _, ok := s.objects[name]; !ok { // AlreadyExists: the existing one is followed
		s.objects[name] = PhaseRunning
	}
	return nil
}

func (s *fakeStep) Check(_ context.Context, _ lifecycle.Change, name string, _, _ time.Time) (Status, error) {
	p, ok := s.objects[name]
	if !ok {
		return Status{Phase: PhaseFailed, Message: "gone"}, nil
	}
	return Status{Phase: p, Message: string(p)}, nil
}

// next counts the Changes handed on.
type next struct{ applied int }

func (n *next) Apply(context.Context, lifecycle.Change, time.Time, lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	n.applied++
	return lifecycle.Outcome{Applied: true}, nil
}

// TestLifeCycle walks a gate through each path of one decision, with its progress in a real
// Lease: a step that does not apply, running → done → Next once, failed → held → retried with a
// new object, a crash between creating the object and recording it, a crash after done before
// Next, a second replica at the same time, a later decision, a refusal.
func TestLifeCycle(t *testing.T) {
	ns := newNamespace(t, "gate-life")
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: ns, Identity: "a"}
	del := lifecycle.Change{Key: "expiry/team-a/exam", Detector: "expiry", Target: lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "exam"},
		Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

	type world struct {
		t    *testing.T
		step *fakeStep
		next *next
		gate *Actuator
		now  time.Time
		c    lifecycle.Change
		prog *leaseProgress
		err  error
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
		_, w.err = w.gate.Apply(context.Background(), w.c, t0, lifecycle.ProposeOptions{Progress: w.prog})
	}
	decide := func(w *world) { // the decision recorded in the Lease
		rec, _ := store.Get(context.Background(), w.c.Key)
		if _, err := store.MarkModified(context.Background(), rec, t0, "x"); err != nil {
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
	later := func(d time.Duration) action { return func(w *world) { w.now = w.now.Add(d) } }
	wantQueued := func(failed bool) action {
		return func(w *world) {
			var q *lifecycle.QueuedError
			if !errors.As(w.err, &q) || q.Failed != failed || q.Reason != "backup" {
				w.t.Fatalf("Apply: %v; want a QueuedError (failed %v)", w.err, failed)
			}
		}
	}
	wantErr := func(match func(error) bool) action {
		return func(w *world) {
			if !match(w.err) {
				w.t.Fatalf("Apply: %v", w.err)
			}
		}
	}
	wantOK := wantErr(func(err error) bool { return err == nil })

	cases := []struct {
		name    string
		change  func(lifecycle.Change) lifecycle.Change
		actions []action
		starts  int // Start calls
		objects int // objects created
		applied int // Changes handed on
	}{
		{"a step that does not apply: Next at once", func(c lifecycle.Change) lifecycle.Change {
			c.Edit.Op = lifecycle.EditScaleToZero
			return c
		}, []action{apply, wantOK}, 0, 0, 1},
		{"not started → running → done → Next once", nil,
			[]action{decide, apply, wantQueued(false), apply, wantQueued(false), finish(PhaseDone), apply, wantOK}, 1, 1, 1},
		{"running → failed: held until the retry, then a new object, done → Next", nil,
			[]action{decide, apply, finish(PhaseFailed), apply, wantQueued(true), apply, wantQueued(true), later(DefaultRetryAfter),
				apply, wantQueued(false), finish(PhaseDone), apply, wantOK}, 2, 2, 1},
		{"a crash between creating the object and recording it: the same object is followed", nil,
			[]action{decide, crash, apply, wantErr(func(err error) bool { return errors.Is(err, errCrash) }), apply, wantQueued(false),
				finish(PhaseDone), apply, wantOK}, 2, 1, 1},
		{"a crash after done and before Next: Next again, no second object", nil,
			[]action{decide, apply, finish(PhaseDone), apply, wantOK, apply, wantOK}, 1, 1, 2},
		{"a second replica at the same time: its record conflicts, no second object", nil,
			[]action{decide, func(w *world) {
				rec, _ := store.Get(context.Background(), w.c.Key)
				other := &leaseProgress{store: store, rec: rec}
				mine := &leaseProgress{store: store, rec: rec}
				if _, err := w.gate.Apply(context.Background(), w.c, t0, lifecycle.ProposeOptions{Progress: mine}); !errors.Is(err, lifecycle.ErrQueued) {
					w.t.Fatalf("first replica: %v", err)
				}
				_, err := w.gate.Apply(context.Background(), w.c, t0, lifecycle.ProposeOptions{Progress: other})
				if !apierrors.IsConflict(err) {
					w.t.Fatalf("second replica: %v, want a conflict", err)
				}
			}, apply, wantQueued(false)}, 2, 1, 0},
		{"a later decision starts afresh", nil,
			[]action{decide, apply, finish(PhaseDone), apply, wantOK, func(w *world) {
				t0 = t0.Add(time.Hour) // the decision time names the next decision's objects
				t.Cleanup(func() { t0 = t0.Add(-time.Hour) })
			}, decide, apply, wantQueued(false)}, 2, 2, 1},
		{"a refused start fails the attempt with no object", nil,
			[]action{decide, func(w *world) { w.step.refuse = true }, apply, wantQueued(true), func(w *world) {
				var q *lifecycle.QueuedError
				errors.As(w.err, &q)
				if q.Attempt == "" || q.Until.Before(w.now.Add(DefaultRetryAfter-time.Minute)) {
					w.t.Errorf("failed attempt %q until %s", q.Attempt, q.Until)
				}
			}}, 1, 0, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := del
			c.Key = lifecycle.Key("expiry/team-a/exam-" + string(rune('a'+i)))
			if tc.change != nil {
				c = tc.change(c)
			}
			w := &world{t: t, step: &fakeStep{objects: map[string]Phase{}}, next: &next{}, now: t0, c: c}
			w.gate = &Actuator{Steps: []Step{w.step}, Next: w.next, Now: func() time.Time { return w.now }, Log: logr.Discard()}
			for _, a := range tc.actions {
				a(w)
			}
			if len(w.step.starts) != tc.starts || len(w.step.objects) != tc.objects || w.next.applied != tc.applied {
				t.Errorf("starts %v, objects %v, applied %d; want %d starts, %d objects, %d applied",
					w.step.starts, w.step.objects, w.next.applied, tc.starts, tc.objects, tc.applied)
			}
		})
	}
}
