package gate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

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

// ErrForeign marks a Step's failure because an object Kustos did not create (or not as Kustos
// would have) holds the attempt's name: the step's names are predictable, so a tenant could
// create one first. It matches ErrFailed too; the gate names every later attempt with a random
// part, recorded in the Lease before the object is created.
var ErrForeign = errors.New("an object Kustos did not create holds the name")

// ForeignError is a Start error matching ErrFailed and ErrForeign.
type ForeignError struct{ Message string }

func (e *ForeignError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrFailed) and errors.Is(err, ErrForeign) hold.
func (e *ForeignError) Is(target error) bool { return target == ErrFailed || target == ErrForeign }

// Phase is where a step's attempt stands.
type Phase string

const (
	PhaseRunning Phase = "running"
	PhaseDone    Phase = "done"
	PhaseFailed  Phase = "failed"
	// PhaseStarting: the attempt's object has a random name, recorded before it is created; a
	// look that finds the attempt starting creates it (or follows it, when it exists).
	PhaseStarting Phase = "starting"
	// PhaseGaveUp: a Limited step's last attempt failed; the Change went ahead without it.
	PhaseGaveUp Phase = "gave-up"
)

// Status is what a Step found of its object.
type Status struct {
	Phase Phase
	// Message says what the object is doing, or why it failed, for Events and the owner's
	// notice (no secrets, no URLs with credentials).
	Message string
	// Foreign: the object of that name is not the step's own (ErrForeign).
	Foreign bool
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

// Limited is a Step whose failures hold a Change only so often: once MaxAttempts attempts
// failed, the Change goes ahead without the step, with a Warning Event (GaveUp). A step whose
// failures the tenant can cause (the submission: its Job lives in the tenant's namespace, its
// destination may be the tenant's) must not let the tenant keep its environment forever.
type Limited interface {
	Step
	// MaxAttempts is how many failed attempts hold the Change (0: no limit).
	MaxAttempts() int
	// GaveUp is the Warning Event's reason and message when the last attempt (last, its
	// message) failed and the Change goes ahead.
	GaveUp(c lifecycle.Change, attempts int, last string) (reason, message string)
}

// Reporter writes Events (deduplicated by id): the pipeline's Reporter (observe.Recorder).
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
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
	// Reporter writes the Warning Event of a Limited step given up (nil: the log only).
	Reporter Reporter
	Log      logr.Logger
}

// progress is one step's record in the Lease, as JSON.
type progress struct {
	// DecidedAt names the decision the step is for: a later decision starts afresh, with a new
	// object and attempt 1, but not with a new count of failures (Carried).
	DecidedAt time.Time `json:"decidedAt"`
	// Attempt numbers the decision's attempts (it names their objects); every attempt before
	// the current one failed.
	Attempt int `json:"attempt"`
	// Carried is how many attempts of earlier decisions of the Key did not succeed since the
	// step last did: failed, given up, or cut short by a newer decision while running. A
	// Limited step counts Carried+Attempt against its MaxAttempts, so that a tenant who makes
	// the detector decide again (touching its environment) does not get a fresh set of
	// attempts. Only an attempt that succeeds resets it, and the Lease going with its target.
	// A record written before it existed has none; its own attempts are carried as any.
	Carried int       `json:"carried,omitempty"`
	Object  string    `json:"object"`
	Phase   Phase     `json:"phase"`
	Since   time.Time `json:"since"`
	Message string    `json:"message,omitempty"`
	// RetryAt is when a failed attempt is followed by the next.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// Random: an object Kustos did not create held an attempt's name; every later attempt's
	// object has a random part in its name.
	Random bool `json:"random,omitempty"`
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
		p = p.next(decidedAt)
	}
	switch p.Phase {
	case PhaseDone, PhaseGaveUp:
		return nil
	case PhaseFailed:
		if now.Before(p.RetryAt) {
			return a.failed(s, p)
		}
		if l, ok := s.(Limited); ok && l.MaxAttempts() > 0 && p.counted() >= l.MaxAttempts() {
			return a.giveUp(ctx, rec, l, c, p)
		}
		p = progress{DecidedAt: decidedAt, Attempt: p.Attempt, Carried: p.Carried, Random: p.Random}
	}
	start := p.Phase == PhaseStarting
	if p.Object == "" {
		p.Attempt++
		p.Object = ObjectName(name, c.Key, decidedAt, p.Attempt)
		p.Phase, p.Since = PhaseRunning, now
		start = true
		if p.Random {
			// A name no one can know before it is in the Lease: recorded first, so that a
			// crash before the object exists finds the name and creates it then.
			p.Object += "-" + randomPart()
			p.Phase = PhaseStarting
			if err := a.record(ctx, rec, name, p); err != nil {
				return err
			}
		}
	}
	if start {
		p.Phase = PhaseRunning
		if err := s.Start(ctx, c, p.Object); err != nil {
			if !errors.Is(err, ErrFailed) {
				return err
			}
			if errors.Is(err, ErrForeign) {
				p.Random = true
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
		if st.Foreign {
			p.Random = true
		}
		return a.fail(ctx, rec, s, p, st.Message, now)
	}
	return a.waiting(s, p, st.Message, now)
}

// fail records the attempt as failed and holds the Change until RetryAfter; a Limited step's
// last attempt holds it only until the next look, which lets it go (giveUp).
func (a *Actuator) fail(ctx context.Context, rec lifecycle.Progress, s Step, p progress, msg string, now time.Time) error {
	p.Phase, p.Message, p.RetryAt = PhaseFailed, lifecycle.Clip(msg, 400), now.Add(a.retryAfter())
	if l, ok := s.(Limited); ok && l.MaxAttempts() > 0 && p.counted() >= l.MaxAttempts() {
		p.RetryAt = now.Add(a.poll())
	}
	a.Log.Info("step failed; the change is held", "step", s.Name(), "object", p.Object, "attempt", p.Attempt, "message", p.Message, "retryAt", p.RetryAt)
	if err := a.record(ctx, rec, s.Name(), p); err != nil {
		return err
	}
	return a.failed(s, p)
}

func (a *Actuator) failed(s Step, p progress) error {
	m := fmt.Sprintf("%s %s (attempt %d) failed: %s", s.Name(), p.Object, p.Attempt, p.Message)
	if l, ok := s.(Limited); ok && l.MaxAttempts() > 0 {
		m = fmt.Sprintf("%s %s (attempt %d of %d) failed: %s", s.Name(), p.Object, p.counted(), l.MaxAttempts(), p.Message)
		if p.counted() > l.MaxAttempts() {
			// The limit was reached by an earlier decision: each later one has one attempt.
			m = fmt.Sprintf("%s %s (attempt %d; the %d that hold the change failed before) failed: %s", s.Name(), p.Object, p.counted(), l.MaxAttempts(), p.Message)
		}
		if p.counted() >= l.MaxAttempts() {
			m += fmt.Sprintf("; that was the last attempt: the change goes ahead without its %s", s.Name())
		}
	}
	return &lifecycle.QueuedError{Reason: s.Name(), Failed: true, Attempt: p.Object, Until: p.RetryAt, Message: m}
}

// giveUp lets the Change go after a Limited step's last failed attempt: a Warning Event, then
// the record (a crash between them writes the same Event again, deduplicated by its id).
func (a *Actuator) giveUp(ctx context.Context, rec lifecycle.Progress, l Limited, c lifecycle.Change, p progress) error {
	reason, msg := l.GaveUp(c, p.counted(), p.Message)
	a.Log.Info("step given up; the change goes ahead without it", "step", l.Name(), "key", string(c.Key), "attempts", p.counted(), "message", msg)
	if a.Reporter != nil {
		ref := corev1.ObjectReference{APIVersion: c.Target.APIVersion(), Kind: c.Target.Kind, Namespace: c.Target.Namespace, Name: c.Target.Name}
		id := fmt.Sprintf("gave-up|%s|%s|%s", c.Key, l.Name(), p.DecidedAt.UTC().Format(time.RFC3339Nano))
		if err := a.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, reason, msg, id, a.now()); err != nil {
			return fmt.Errorf("reporting that %s was given up: %w", l.Name(), err)
		}
	}
	p.Phase, p.Message = PhaseGaveUp, lifecycle.Clip(msg, 400)
	return a.record(ctx, rec, l.Name(), p)
}

// next is the progress a new decision, made at decidedAt, starts from: no attempt yet, the
// failures carried over unless the last attempt succeeded. An attempt the new decision cuts
// short (running, or recorded and not yet started) counts as failed: a tenant could otherwise
// hold each attempt up (a Job that cannot start until its deadline) and decide again before it
// fails. Random names stay: whoever took one predictable name may guess the next.
func (p progress) next(decidedAt time.Time) progress {
	n := progress{DecidedAt: decidedAt, Random: p.Random}
	if p.Phase != PhaseDone {
		n.Carried = p.Carried + p.Attempt
	}
	return n
}

// counted is the number of the decision's current attempt among those a Limited step counts:
// the failures carried over from earlier decisions, then this decision's attempts.
func (p progress) counted() int { return p.Carried + p.Attempt }

// randomPart is 8 random hex digits.
func randomPart() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

func (a *Actuator) waiting(s Step, p progress, msg string, now time.Time) error {
	m := fmt.Sprintf("%s %s (attempt %d) is running", s.Name(), p.Object, p.Attempt)
	if l, ok := s.(Limited); ok && l.MaxAttempts() > 0 {
		m = fmt.Sprintf("%s %s (attempt %d of %d) is running", s.Name(), p.Object, p.counted(), l.MaxAttempts())
	}
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
