package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Applier carries out a Change (the pipeline's Actuator): the Actuator hands it a Change once
// every step that applies to it is done.
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

var _ Applier = (*Actuator)(nil)

// ErrFailed marks a Step's error as the step's failure (a refused destination, no volume to
// submit): the Change is held and the step tried again after RetryAfter, as for an object that
// failed. Other errors are passed to the pipeline as they are (retried with backoff).
var ErrFailed = errors.New("step failed")

// Phase is where a step's attempt stands.
type Phase string

const (
	PhaseRunning Phase = "running"
	PhaseDone    Phase = "done"
	PhaseFailed  Phase = "failed"
)

// Status is what a Step found of its object.
type Status struct {
	Phase Phase
	// Message says what the object is doing, or why it failed, for Events and the owner's
	// notice (no secrets, no URLs with credentials).
	Message string
}

// Step is one thing that must be done and confirmed before a Change is carried out.
type Step interface {
	// Name names the step in the Lease (step.kustos.io/<name>), in the QueuedError's Reason and
	// in its objects' names: "backup", "submission".
	Name() string
	// Applies reports whether c must wait for the step.
	Applies(ctx context.Context, c lifecycle.Change) (bool, error)
	// Start creates the step's object, named name, for c. An object of that name that exists
	// already is the step's own (created before a crash): it is followed, not created again.
	// An error matching ErrFailed fails the attempt.
	Start(ctx context.Context, c lifecycle.Change, name string) error
	// Check says how the object named name stands; since is when the attempt started (a step
	// with a timeout fails it after that long), now the clock. An object that is gone is
	// Failed (someone deleted it).
	Check(ctx context.Context, c lifecycle.Change, name string, since, now time.Time) (Status, error)
}

// Defaults of Actuator's intervals.
const (
	DefaultPoll       = 10 * time.Second
	DefaultRetryAfter = 30 * time.Minute
)

// Actuator runs Steps before Next: a Change no step applies to goes to Next at once.
type Actuator struct {
	Steps []Step
	Next  Applier
	// Poll is how soon a running step is looked at again (default DefaultPoll).
	Poll time.Duration
	// RetryAfter is how long a failed step waits before its next attempt (default
	// DefaultRetryAfter).
	RetryAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log logr.Logger
}

// progress is one step's record in the Lease, as JSON.
type progress struct {
	// DecidedAt names the decision the step is for: a later decision starts afresh.
	DecidedAt time.Time `json:"decidedAt"`
	Attempt   int       `json:"attempt"`
	Object    string    `json:"object"`
	Phase     Phase     `json:"phase"`
	Since     time.Time `json:"since"`
	Message   string    `json:"message,omitempty"`
	// RetryAt is when a failed attempt is followed by the next.
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// Apply runs the steps that apply to c, in order, and hands c to Next once each is done.
func (a *Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	for _, s := range a.Steps {
		applies, err := s.Applies(ctx, c)
		if err != nil {
			return lifecycle.Outcome{}, fmt.Errorf("%s before %s: %w", s.Name(), c.Target, err)
		}
		if !applies {
			continue
		}
		if opts.Progress == nil {
			// Without a record a crash could repeat or skip the step: refuse rather than guess.
			return lifecycle.Outcome{}, fmt.Errorf("%w: %s before %s: nothing records the step's progress", lifecycle.ErrInvalidChange, s.Name(), c.Target)
		}
		if err := a.step(ctx, s, c, decidedAt, opts.Progress); err != nil {
			return lifecycle.Outcome{}, err
		}
	}
	return a.Next.Apply(ctx, c, decidedAt, opts)
}

// step brings one step forward; nil when it is done.
func (a *Actuator) step(ctx context.Context, s Step, c lifecycle.Change, decidedAt time.Time, rec lifecycle.Progress) error {
	now := a.now()
	name := s.Name()
	log := a.Log.WithValues("key", string(c.Key), "step", name)
	var p progress
	if raw := rec.Step(name); raw != "" {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			// A hand edit: start over (a new attempt number keeps its object apart).
			log.Info("unreadable step progress in the state Lease; starting over", "error", err.Error())
			p = progress{}
		}
	}
	if !p.DecidedAt.Equal(decidedAt) {
		p = progress{DecidedAt: decidedAt}
	}
	switch p.Phase {
	case PhaseDone:
		return nil
	case PhaseFailed:
		if now.Before(p.RetryAt) {
			return a.failed(s, p)
		}
		p = progress{DecidedAt: decidedAt, Attempt: p.Attempt}
	}
	if p.Object == "" {
		p.Attempt++
		p.Object = ObjectName(name, c.Key, decidedAt, p.Attempt)
		p.Phase, p.Since = PhaseRunning, now
		if err := s.Start(ctx, c, p.Object); err != nil {
			if !errors.Is(err, ErrFailed) {
				return err
			}
			return a.fail(ctx, rec, s, p, strings.TrimPrefix(err.Error(), ErrFailed.Error()+": "), now)
		}
		log.Info("step started", "object", p.Object, "attempt", p.Attempt)
		if err := a.record(ctx, rec, name, p); err != nil {
			return err
		}
		return a.waiting(s, p, "started", now)
	}
	st, err := s.Check(ctx, c, p.Object, p.Since, now)
	if err != nil {
		return err
	}
	switch st.Phase {
	case PhaseDone:
		p.Phase, p.Message = PhaseDone, st.Message
		log.Info("step done", "object", p.Object, "attempt", p.Attempt)
		return a.record(ctx, rec, name, p)
	case PhaseFailed:
		return a.fail(ctx, rec, s, p, st.Message, now)
	}
	return a.waiting(s, p, st.Message, now)
}

// fail records the attempt as failed and holds the Change until RetryAfter.
func (a *Actuator) fail(ctx context.Context, rec lifecycle.Progress, s Step, p progress, msg string, now time.Time) error {
	p.Phase, p.Message, p.RetryAt = PhaseFailed, lifecycle.Clip(msg, 400), now.Add(a.retryAfter())
	a.Log.Info("step failed; the change is held", "step", s.Name(), "object", p.Object, "attempt", p.Attempt, "message", p.Message, "retryAt", p.RetryAt)
	if err := a.record(ctx, rec, s.Name(), p); err != nil {
		return err
	}
	return a.failed(s, p)
}

func (a *Actuator) failed(s Step, p progress) error {
	return &lifecycle.QueuedError{Reason: s.Name(), Failed: true, Attempt: p.Object, Until: p.RetryAt,
		Message: fmt.Sprintf("%s %s (attempt %d) failed: %s", s.Name(), p.Object, p.Attempt, p.Message)}
}

func (a *Actuator) waiting(s Step, p progress, msg string, now time.Time) error {
	m := fmt.Sprintf("%s %s (attempt %d) is running", s.Name(), p.Object, p.Attempt)
	if msg != "" {
		m += ": " + lifecycle.Clip(msg, 200)
	}
	return &lifecycle.QueuedError{Reason: s.Name(), Message: m, Until: now.Add(a.poll())}
}

func (a *Actuator) record(ctx context.Context, rec lifecycle.Progress, name string, p progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := rec.SetStep(ctx, name, string(b)); err != nil {
		return fmt.Errorf("recording %s's progress: %w", name, err)
	}
	return nil
}

// ObjectName is the name of step's object for attempt of the decision key made at decidedAt:
// "kustos-<step>-<hash>-<attempt>", at most 63 characters (a Job's name is a label value).
// The same decision and attempt always give the same name, so that a crash after creating
// the object and before recording it finds it again.
func ObjectName(step string, key lifecycle.Key, decidedAt time.Time, attempt int) string {
	sum := sha256.Sum256([]byte(string(key) + "|" + decidedAt.UTC().Format(time.RFC3339Nano)))
	return fmt.Sprintf("kustos-%s-%s-%d", lifecycle.Clip(step, 20), hex.EncodeToString(sum[:])[:12], attempt)
}

func (a *Actuator) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

func (a *Actuator) poll() time.Duration { return positive(a.Poll, DefaultPoll) }

func (a *Actuator) retryAfter() time.Duration { return positive(a.RetryAfter, DefaultRetryAfter) }

// positive is d, or def when d is not positive (a field left unset).
func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
