package expiry

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// DetectorName names the detector in Keys, Leases, metrics and logs.
const DetectorName = "expiry"

// Event and Change reasons.
const (
	// ReasonExpiryWarning: the owner is warned that the target expires (Warning Event; the
	// message, and the mail or webhook when configured).
	ReasonExpiryWarning = "ExpiryWarning"
	// ReasonExpiryDue: the deadline passed and the warning was sent long enough ago: the
	// Change (removal or pause) is due. In observer mode this Event is all that happens.
	ReasonExpiryDue = "ExpiryDue"
	// ReasonExpired: the owner is told the target was removed (or paused, or a pull request
	// doing so was opened).
	ReasonExpired = "Expired"
	// ReasonInvalidExpiry: a lifetime, owner or action Kustos cannot use; the object is left
	// alone.
	ReasonInvalidExpiry = "InvalidExpiryMetadata"
	// ReasonReleaseOutsideNamespace: a helm release's manifest or hooks name an object in
	// another namespace, of a cluster-scoped kind, of a kind the API server does not serve, or
	// one that cannot be read: Kustos never uninstalls it and sends its owner nothing about it.
	ReasonReleaseOutsideNamespace = "ReleaseOutsideNamespace"
	// ReasonOrphan: an object of a lifecycle kind without an owner or a lifetime.
	ReasonOrphan = "ExpiryOrphan"
	// ReasonExpiryExtended: the owner extended the lifetime through a link; the Change writes
	// the new deadline back as kustos.io/expires-at (a pull request for what Git defines).
	ReasonExpiryExtended = "ExpiryExtended"
	// Pipeline vocabulary for the Changes (a removal, a pause or a written-back extension).
	ReasonProposed = "ExpiryChangeProposed"
	ReasonMerged   = "ExpiryChangeMerged"
	ReasonDeclined = "ExpiryChangeDeclined"
	ReasonApplied  = "ExpiryChangeApplied"
)

// Next is what happens next to a target, as `kustos expiry plan` prints it.
type Next string

const (
	NextWarn   Next = "warn"   // the owner is warned at At
	NextAct    Next = "act"    // the Change is due at At
	NextNone   Next = "none"   // nothing is scheduled: no lifetime, opted out, or already acted
	NextOrphan Next = "orphan" // no owner or no lifetime: reported, never touched
)

// State is what the target's Lease remembers (its bag), per deadline.
type State struct {
	// WarningFor is the deadline the last warning was about; WarnedAt when it was sent (zero:
	// recorded as being sent, not confirmed), WarningAttemptAt when the last attempt started
	// and WarningAttempts how many there were.
	WarningFor       time.Time
	WarningAttemptAt time.Time
	WarningAttempts  int
	WarnedAt         time.Time
	// ExtendedUntil is a deadline granted through the extension API, at ExtendedAt; it stands
	// until Git carries it (kustos.io/expires-at) or a later one.
	ExtendedUntil, ExtendedAt time.Time
	// UsedTokens are the ids of extension tokens already used (replays fail across replicas).
	UsedTokens []string
	// NotifiedFor is the deadline whose "removed" message was sent.
	NotifiedFor time.Time
	// Owner (as written, at most 512 bytes) and Deadline (the effective one) are what the
	// owner's page shows: every scheduled target records them, and the state store labels the
	// Lease with the owner's id (lifecycle.BagOwner), so the page finds an owner's environments
	// by label. They are recorded here, in Decide, so every kind the detector decides about
	// (workloads, Namespaces, helm releases, virtual machines) has them.
	Owner    string
	Deadline time.Time
	// Label is how people know a target that has one (Policy.Label: a VM by its name, not its
	// UUID), for the pages of the extension server; empty for everything else.
	Label string
	// Kept is the lifetime Kustos keeps for a target whose metadata can be lost where it is
	// declared (a VM's notes, reset by a snapshot rollback); zero for everything else.
	Kept Kept
	// PausedAt, PauseFrom, PauseUID: the pause at the deadline Kustos decided (when, what
	// spec.replicas was then, of which object): what a resume restores, and never more.
	// ResumeAt: the owner asked, with a resume link of that pause, to resume the target then
	// (the link's id is among UsedTokens, its extension in ExtendedUntil).
	PausedAt, ResumeAt  time.Time
	PauseFrom, PauseUID string
}

// Kept is a lifetime remembered in the target's Lease from the first time it was seen: the
// owner and the TTL as written, and the time the TTL counts from.
type Kept struct {
	Owner, TTL string
	Since      time.Time
}

// IsZero reports whether nothing is kept.
func (k Kept) IsZero() bool { return k.Owner == "" && k.TTL == "" && k.Since.IsZero() }

// BagExtendedUntil is the bag key of an extension: the extension server writes it, and a change
// of it makes the detector look again at once (to write the new deadline back).
const BagExtendedUntil = "extended-until"

// Bag keys (below the state package's bag.kustos.io/ prefix).
const (
	bagWarningFor       = "warning-for"
	bagWarningAttemptAt = "warning-attempt-at"
	bagWarningAttempts  = "warning-attempts"
	bagWarnedAt         = "warned-at"
	bagExtendedUntil    = BagExtendedUntil
	bagExtendedAt       = "extended-at"
	bagUsedTokens       = "used-tokens"
	bagNotifiedFor      = "notified-for"
	bagOwner            = lifecycle.BagOwner
	bagDeadline         = "deadline"
	bagLabel            = "label"
	bagKeptOwner        = "kept-owner"
	bagKeptTTL          = "kept-ttl"
	bagKeptSince        = "kept-since"
	bagPausedAt         = "paused-at"
	bagPauseFrom        = "pause-from"
	bagPauseUID         = "pause-uid"
	bagResumeAt         = "resume-at"
)

// maxKept bounds a kept owner or TTL (they come from a VM's notes).
const maxKept = 256

// ParseState reads the bag. Unreadable entries are dropped (and said so): the worst outcome is
// a second warning, never a removal without one.
func ParseState(bag map[string]string) (State, []string) {
	r := lifecycle.BagReader{Bag: bag}
	s := State{
		WarningFor:       r.Time(bagWarningFor),
		WarningAttemptAt: r.Time(bagWarningAttemptAt),
		WarnedAt:         r.Time(bagWarnedAt),
		ExtendedUntil:    r.Time(bagExtendedUntil),
		ExtendedAt:       r.Time(bagExtendedAt),
		NotifiedFor:      r.Time(bagNotifiedFor),
		Deadline:         r.Time(bagDeadline),
		Owner:            bag[bagOwner],
		Label:            bag[bagLabel],
		WarningAttempts:  r.Count(bagWarningAttempts, math.MaxInt32),
		Kept:             Kept{Owner: bag[bagKeptOwner], TTL: bag[bagKeptTTL], Since: r.Time(bagKeptSince)},
		PausedAt:         r.Time(bagPausedAt),
		ResumeAt:         r.Time(bagResumeAt),
		PauseFrom:        bag[bagPauseFrom],
		PauseUID:         bag[bagPauseUID],
	}
	if v := bag[bagUsedTokens]; v != "" {
		s.UsedTokens = splitTokens(v)
	}
	return s, r.Bad
}

// Bag writes the state back; zero fields are left out.
func (s State) Bag() map[string]string {
	b := lifecycle.BagWriter{}
	b.Time(bagWarningFor, s.WarningFor)
	b.Time(bagWarningAttemptAt, s.WarningAttemptAt)
	b.Time(bagWarnedAt, s.WarnedAt)
	b.Time(bagExtendedUntil, s.ExtendedUntil)
	b.Time(bagExtendedAt, s.ExtendedAt)
	b.Time(bagNotifiedFor, s.NotifiedFor)
	b.Time(bagDeadline, s.Deadline)
	if s.Owner != "" {
		b[bagOwner] = lifecycle.RecordedOwner(s.Owner)
	}
	b.Count(bagWarningAttempts, s.WarningAttempts)
	if len(s.UsedTokens) > 0 {
		b[bagUsedTokens] = joinTokens(s.UsedTokens)
	}
	if s.Kept.Owner != "" {
		b[bagKeptOwner] = lifecycle.Clip(s.Kept.Owner, maxKept)
	}
	if s.Kept.TTL != "" {
		b[bagKeptTTL] = lifecycle.Clip(s.Kept.TTL, maxKept)
	}
	b.Time(bagKeptSince, s.Kept.Since)
	if s.Label != "" {
		b[bagLabel] = lifecycle.Clip(s.Label, maxKept)
	}
	b.Time(bagPausedAt, s.PausedAt)
	b.Time(bagResumeAt, s.ResumeAt)
	for k, v := range map[string]string{bagPauseFrom: s.PauseFrom, bagPauseUID: s.PauseUID} {
		if v != "" {
			b[k] = lifecycle.Clip(v, maxKept)
		}
	}
	return b
}

// Snapshot is what the controller gathered for one target. It holds no client.
type Snapshot struct {
	Now    time.Time
	Target lifecycle.Target
	// UID and ResourceVersion of the object decided on (direct deletions are conditional on them).
	UID, ResourceVersion string
	Policy               Policy
	State                State
	// LastDecision is when the pipeline last recorded a decision for the Key (View.LastModified);
	// ProposalOpen and Declined say what became of it in PR mode.
	LastDecision           time.Time
	ProposalOpen, Declined bool
	// Proposed is the Change of the proposal the Key holds (PR mode; nil: none).
	Proposed *lifecycle.Change
	// LeftToPeople: that proposal is open with a commit Kustos did not write, which Kustos
	// leaves to people: an extension cannot be written back on its branch.
	LeftToPeople bool
	Settings     Settings
	// Replicas is spec.replicas of a target whose lifetime ends in a pause, as a string ("":
	// not read, or another action): what a pause records, and what a resume checks.
	Replicas string
}

// Verdict is what Decide concluded for one target (the detector's own result; the pipeline
// gets a lifecycle.Decision made of it).
type Verdict struct {
	// Deadline is the effective deadline (the policy's, or a later extension); zero: never.
	Deadline time.Time
	Next     Next
	// At is when Next happens (zero for none and orphan).
	At     time.Time
	Action Action
	// Warn: send the warning now (its record is already in the Lease). SendDone: tell the
	// owner the Change was carried out.
	Warn, SendDone bool
	// Change is the removal or pause, when due now.
	Change *lifecycle.Change
	// State is the state to keep (written to the Lease when it differs).
	State State
	// RequeueAfter is when to look again (0: only when something changes).
	RequeueAfter time.Duration
	// Withdraw says why a removal proposed earlier is no longer due (a later deadline, the
	// lifetime or owner removed, opted out): the pipeline closes that pull request instead
	// of following it to a merge.
	Withdraw string
	// ResumeRefused says why a resume the owner asked for is not done (an Event on the
	// target); ResumeRefusedID names it. Empty: none refused.
	ResumeRefused, ResumeRefusedID string
	// PauseNotice: tell the owner the target was paused, with resume links (SendDone of a
	// pause Kustos recorded).
	PauseNotice bool
}

// retryBase is the first wait before a warning whose sending was interrupted (a crash, a mail
// server that did not answer) is sent again; it doubles per attempt up to the notification
// interval, so a failing mail server is never hammered and a crash re-sends once.
const retryBase = time.Minute

// Decide is the expiry schedule for one target, one rule for env-cleaner's stale environments and
// CrownLabs' expiring instances alike: at deadline − WarningBefore the owner is warned; the Change
// happens at the deadline, but never less than NotificationInterval after a warning was actually
// sent. A warning is recorded in the Lease before it is sent (Decide first returns the record,
// then, on the next look, Warn), so a crash re-sends it at most once. After the Change, the owner
// is told once. A removal proposed for a deadline that no longer holds is withdrawn.
func Decide(s Snapshot) Verdict {
	d := schedule(s)
	if p := s.Proposed; p != nil && p.Reason == ReasonExpiryDue && d.Change == nil && !(d.Next == NextAct && !s.Now.Before(d.At)) {
		switch {
		case s.Policy.Ignored:
			d.Withdraw = fmt.Sprintf("%s is opted out of expiry (%s)", s.Target, LabelIgnore)
		case s.Policy.Never:
			d.Withdraw = fmt.Sprintf("%s now never expires (%s: %s)", s.Target, AnnotationTTL, lifecycle.Never)
		case d.Next == NextOrphan:
			d.Withdraw = fmt.Sprintf("%s no longer has an owner and a lifetime", s.Target)
		case d.Next == NextNone:
			// Decided already for this deadline, and its pull request no longer open: merged,
			// or closed by a person, which the pipeline records as a decline once no
			// withdrawal stands in its way. Nothing is withdrawn.
		default:
			d.Withdraw = fmt.Sprintf("%s is not due before %s (its deadline is now %s)", s.Target,
				d.At.UTC().Format(time.RFC3339), d.Deadline.UTC().Format(time.RFC3339))
		}
	}
	if !s.Policy.Ignored && !s.Policy.Never {
		resume(s, &d)
	}
	d.PauseNotice = d.SendDone && d.Action == ActionPause && !d.State.PausedAt.IsZero() && d.State.ResumeAt.IsZero()
	return d
}

func schedule(s Snapshot) Verdict {
	d := Verdict{State: s.State, Action: s.Policy.Action}
	p := s.Policy
	if p.Ignored {
		d.Next = NextNone
		d.State = unscheduled(d.State)
		return d
	}
	d.Deadline = p.Deadline
	if !d.Deadline.IsZero() && s.State.ExtendedUntil.After(d.Deadline) {
		d.Deadline = s.State.ExtendedUntil
	}
	if p.Never && p.Owner != "" {
		// kustos.io/ttl: never: kept on purpose, nothing to warn about or remove.
		d.Next = NextNone
		d.State = unscheduled(d.State)
		return d
	}
	if p.Owner == "" || d.Deadline.IsZero() {
		// No owner or no lifetime: reported, never touched (nobody could be warned, or there is
		// no deadline to warn about).
		d.Next = NextOrphan
		d.State = unscheduled(d.State)
		return d
	}

	st := &d.State
	// What the owner's page lists: whose the target is and when it goes.
	st.Owner, st.Deadline, st.Label = lifecycle.RecordedOwner(p.Owner), d.Deadline.UTC(), lifecycle.Clip(p.Label, maxKept)
	if s.Settings.CarriesOut && !p.KeptInState && st.ExtendedUntil.Equal(d.Deadline) && st.ExtendedUntil.After(p.Deadline) && s.LastDecision.Before(st.ExtendedAt) &&
		!s.LeftToPeople {
		// Extended through a link and not yet where the environment is declared: write the
		// new deadline back (Git stays the truth). The next look, after this decision, goes on
		// with the schedule of the new deadline. Not while the removal's pull request is left
		// to people (the write-back would go on its branch): the schedule of the new deadline
		// goes on without it, so that its owner is still warned before it.
		d.Change = writeBack(s, d.Deadline)
		d.Next, d.At = NextWarn, d.Deadline.Add(-s.Settings.WarningBefore)
		return d
	}
	// Sent (WarnedAt) after its latest attempt: a warned-at left from an earlier deadline's
	// warning (a Lease whose new deadline's record did not clear it) is not this one's.
	warned := st.WarningFor.Equal(d.Deadline) && !st.WarnedAt.IsZero() && !st.WarnedAt.Before(st.WarningAttemptAt)
	warnAt := d.Deadline.Add(-s.Settings.WarningBefore)
	now := s.Now

	if !warned {
		if now.Before(warnAt) {
			d.Next, d.At = NextWarn, warnAt
			d.RequeueAfter = warnAt.Sub(now)
			return d
		}
		if p.OwnerAddress == "" && s.Settings.needsAddress() {
			// Nobody can be warned: never act. The problem was reported by ParsePolicy.
			d.Next, d.At = NextWarn, now
			return d
		}
		d.Next = NextWarn
		if !st.WarningFor.Equal(d.Deadline) {
			// Record the attempt first: the next look sends it. Not sent yet: an earlier
			// deadline's sent time (before an extension) says nothing of this warning.
			st.WarningFor, st.WarningAttemptAt, st.WarningAttempts, st.WarnedAt = d.Deadline, now, 1, time.Time{}
			d.At = now
			return d
		}
		// An attempt is recorded and not confirmed: this look sends it, unless an earlier
		// attempt started recently (it may have gone through before a crash; wait, then retry).
		if st.WarningAttemptAt.Equal(now) {
			d.Warn = true
			st.WarnedAt = now
			d.Next, d.At = NextAct, actAt(d.Deadline, now, s.Settings)
			d.RequeueAfter = d.At.Sub(now)
			return d
		}
		retry := st.WarningAttemptAt.Add(backoff(st.WarningAttempts, s.Settings.NotificationInterval))
		if now.Before(retry) {
			d.At = retry
			d.RequeueAfter = retry.Sub(now)
			return d
		}
		st.WarningAttemptAt, st.WarningAttempts = now, st.WarningAttempts+1
		d.At = now
		return d
	}

	at := actAt(d.Deadline, st.WarnedAt, s.Settings)
	d.Next, d.At = NextAct, at
	if now.Before(at) {
		d.RequeueAfter = at.Sub(now)
		return d
	}
	if !s.LastDecision.Before(at) {
		// Decided already: the Change was carried out, proposed, declined or (observer mode)
		// reported.
		switch {
		case s.ProposalOpen:
			return d // the pull request waits for review; the pipeline follows it
		case s.Declined:
			// A human closed the pull request: the environment stays. A later deadline (an
			// extension, a new expires-at) starts a new cycle.
		case s.Settings.CarriesOut && !st.NotifiedFor.Equal(d.Deadline):
			d.SendDone = true
			st.NotifiedFor = d.Deadline
		}
		d.Next, d.At = NextNone, time.Time{}
		return d
	}
	d.Change = change(s, d)
	if d.Action == ActionPause {
		recordPause(s, st)
	}
	return d
}

// unscheduled is st of a target nothing is scheduled for (opted out, never, an orphan): no
// owner, deadline or label, so the state store drops the Lease's owner label and the former
// owner's page no longer lists it (nor offers to extend it). What was sent stays remembered.
func unscheduled(st State) State {
	st.Owner, st.Deadline, st.Label = "", time.Time{}, ""
	return st
}

// actAt is when the Change may happen once a warning was sent at warned.
func actAt(deadline, warned time.Time, s Settings) time.Time {
	if earliest := warned.Add(s.NotificationInterval); earliest.After(deadline) {
		return earliest
	}
	return deadline
}

// backoff is the wait after the n-th unconfirmed attempt: retryBase × 2^(n−1), at most interval
// (and at least retryBase).
func backoff(n int, interval time.Duration) time.Duration {
	d := retryBase
	for i := 1; i < n && d < interval; i++ {
		d *= 2
	}
	if interval > retryBase && d > interval {
		d = interval
	}
	return d
}

// needsAddress: warnings go to owners by mail, so an owner without an address cannot be warned.
// Events and webhooks reach people without one.
func (s Settings) needsAddress() bool { return s.Mail }

// maxUsedTokens bounds the remembered token ids (16 hex digits each): tokens expire with the
// deadline, and a new deadline starts a new list.
const maxUsedTokens = 32

func splitTokens(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func joinTokens(ts []string) string {
	if len(ts) > maxUsedTokens {
		ts = ts[len(ts)-maxUsedTokens:]
	}
	return strings.Join(ts, ",")
}

// writeBack is the Change that records an extension where the environment is declared.
func writeBack(s Snapshot, until time.Time) *lifecycle.Change {
	at := until.UTC().Format(time.RFC3339)
	c := &lifecycle.Change{
		Key:      lifecycle.KeyFor(DetectorName, s.Target),
		Detector: DetectorName,
		Target:   s.Target,
		OptOut:   optOut(),
		Reason:   ReasonExpiryExtended,
		Edit:     lifecycle.Edit{Op: lifecycle.EditSetAnnotations, Annotations: map[string]string{AnnotationExpiresAt: at}},
		Summary: fmt.Sprintf("%s was extended until %s through Kustos (at %s, by its owner's link); recording %s: %q",
			s.Target, at, s.State.ExtendedAt.UTC().Format(time.RFC3339), AnnotationExpiresAt, at),
	}
	c.Evidence = []map[string]string{{"message": c.Summary, "owner": s.Policy.Owner, "deadline": at,
		"previousDeadline": s.Policy.Deadline.UTC().Format(time.RFC3339), "from": s.Policy.From}}
	return c
}

func change(s Snapshot, d Verdict) *lifecycle.Change {
	c := &lifecycle.Change{
		Key:      lifecycle.KeyFor(DetectorName, s.Target),
		Detector: DetectorName,
		Target:   s.Target,
		OptOut:   optOut(),
		Reason:   ReasonExpiryDue,
	}
	ev := map[string]string{
		"owner": s.Policy.Owner, "deadline": d.Deadline.Format(time.RFC3339), "from": s.Policy.From,
		"warnedAt": s.State.WarnedAt.Format(time.RFC3339),
	}
	if s.State.ExtendedUntil.Equal(d.Deadline) {
		ev["from"] = "an extension granted through Kustos"
	}
	for k, v := range s.Policy.Facts {
		if _, taken := ev[k]; !taken {
			ev[k] = v
		}
	}
	what := s.Policy.label(s.Target)
	switch d.Action {
	case ActionPause:
		c.Edit = lifecycle.Edit{Op: lifecycle.EditScaleToZero}
		c.Summary = fmt.Sprintf("%s expired at %s (%s); owner %s was warned at %s; pausing it (scale to zero)",
			what, d.Deadline.Format(time.RFC3339), ev["from"], s.Policy.Owner, s.State.WarnedAt.Format(time.RFC3339))
	default:
		c.Edit = lifecycle.Edit{Op: lifecycle.EditDelete}
		// The same object, not the same version: a workload's status changes all the time, and
		// the deadline does not depend on it.
		if s.UID != "" {
			c.Edit.Preconditions = &lifecycle.Preconditions{UID: s.UID}
		}
		how := "removing it"
		if d.Action == ActionQuarantine {
			how = "quarantining it (power off, rename, move into the quarantine folder; never destroyed)"
		}
		c.Summary = fmt.Sprintf("%s expired at %s (%s); owner %s was warned at %s; %s",
			what, d.Deadline.Format(time.RFC3339), ev["from"], s.Policy.Owner, s.State.WarnedAt.Format(time.RFC3339), how)
	}
	ev["message"] = c.Summary
	c.Evidence = []map[string]string{ev}
	return c
}

// optOut is the "Opting out" of an expiry proposal.
func optOut() *lifecycle.OptOut {
	return &lifecycle.OptOut{Declined: declinedNote + ".", Annotation: LabelIgnore, Value: "true",
		Keep: "its owner extends it with a link in Kustos's warning, or sets a later " + AnnotationExpiresAt}
}
