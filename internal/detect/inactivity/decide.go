package inactivity

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// DetectorName names the detector in Keys, Leases, metrics and logs.
const DetectorName = "inactivity"

// Event and Change reasons.
const (
	// ReasonInactive: an alert — the target has not been used for its timeout and will be
	// paused or deleted after the remaining alerts (Warning Event; the mail or webhook too).
	ReasonInactive = "InactivityAlert"
	// ReasonInactivityDue: the alerts were sent and the last one is an interval old: the pause
	// or deletion is due. In observer mode this Event is all that happens.
	ReasonInactivityDue = "InactivityDue"
	// ReasonProbeFailed: an exam target's endpoint stopped answering: it is terminated.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonDestinationRefused: an exam target's kustos.io/probe-url is a destination Kustos may
	// not ask (loopback, link-local, private, not in --allowed-destinations): every probe of it is
	// refused before a connection is made.
	ReasonDestinationRefused = "DestinationRefused"
	// ReasonActivityUnknown: a source is not collecting or Prometheus cannot be asked: no target
	// is declared inactive until it is (fail safe).
	ReasonActivityUnknown = "ActivityUnknown"
	// ReasonInvalidInactivity: metadata Kustos cannot use; the target is left alone.
	ReasonInvalidInactivity = "InvalidInactivityMetadata"
	// Pipeline vocabulary for the Changes (a pause or a deletion).
	ReasonProposed = "InactivityChangeProposed"
	ReasonMerged   = "InactivityChangeMerged"
	ReasonDeclined = "InactivityChangeDeclined"
	ReasonApplied  = "InactivityChangeApplied"
)

// Next is what happens next to a target, as `kustos inactivity plan` prints it.
type Next string

const (
	NextAlert   Next = "alert"   // an alert goes out at At
	NextPause   Next = "pause"   // the target is paused at At
	NextDelete  Next = "delete"  // the target is deleted at At
	NextNone    Next = "none"    // nothing scheduled: never times out, opted out, paused, or decided
	NextUnknown Next = "unknown" // a source is not collecting: nothing is declared inactive
)

// State is what the target's Lease remembers (its bag).
type State struct {
	// UID is the target object's: a target deleted and created again under the same name is a
	// new environment, and starts with a fresh state.
	UID string
	// LastActivity is the latest activity seen (a source, or a restart after a pause).
	LastActivity time.Time
	// AlertsFor is the start of the idle period the alerts are about (the baseline); a new
	// baseline (activity) starts the count again.
	AlertsFor   time.Time
	AlertsSent  int
	LastAlertAt time.Time
	// MaxAlerts is, while alerted, how many alerts the target gets in all before the pause or
	// deletion (its policy's, as of the last look): the owner's page says "alert 1 of 3".
	MaxAlerts int
	// ProbeFailedAt is when an exam endpoint's failures reached --probe-failures: the
	// termination is due from then on (decided once the pipeline's last decision is later).
	ProbeFailedAt time.Time
	// Paused: the target was last seen not running (scaled to zero, or the pause field set).
	// Seen running again, it was restarted: that counts as activity.
	Paused bool
	// ProbeFailures counts consecutive failed probes of an exam endpoint; LastProbeAt is when
	// the last counted probe ran. ProbeArmed: the endpoint answered once since the target
	// (re)started; failures count only from then, so an exam VM that is still booting is not
	// taken for one whose exam is over.
	ProbeFailures int
	LastProbeAt   time.Time
	ProbeArmed    bool
	// KeptUntil: the owner kept the target (a keep link of an alert) until then: no alert,
	// pause or deletion before it; after it the alerts start over. KeptAt is when the last keep
	// was recorded: links of alerts sent before it no longer keep. KeepTokens are the ids of
	// keep links already used, comma-separated (a replay fails on any replica).
	KeptUntil, KeptAt time.Time
	KeepTokens        string
	// Owner is the owner (kustos.io/owner as recorded) while the target is alerted, kept or
	// paused: a keep or resume link acts only for the owner it was issued to. The store labels
	// the Lease with it.
	Owner string
	// PausedAt, PauseField, PauseFrom: the pause Kustos decided for this UID (when, the field it
	// sets, the value the field held then, e.g. spec.replicas and 3): what a resume restores, and
	// never more. Forgotten when the target runs again.
	PausedAt              time.Time
	PauseField, PauseFrom string
	// ResumeAt: the owner asked, with a resume link of the pause, to resume the target then (the
	// next look proposes or makes the resume). ResumeTokens are the ids of resume links already
	// used, comma-separated, kept past the resume so that a replay fails.
	ResumeAt     time.Time
	ResumeTokens string
}

const (
	bagUID           = "uid"
	bagProbeArmed    = "probe-armed"
	bagLastActivity  = "last-activity"
	bagAlertsFor     = "alerts-for"
	bagAlertsSent    = "alerts-sent"
	bagMaxAlerts     = "max-alerts"
	bagLastAlertAt   = "last-alert-at"
	bagProbeFailedAt = "probe-failed-at"
	bagPaused        = "paused"
	bagProbeFailures = "probe-failures"
	bagLastProbeAt   = "last-probe-at"
	bagKeptUntil     = "kept-until"
	bagKeptAt        = "kept-at"
	bagKeepTokens    = "keep-tokens"
	bagPausedAt      = "paused-at"
	bagPauseField    = "pause-field"
	bagPauseFrom     = "pause-from"
	bagResumeAt      = BagResumeAt
	bagResumeTokens  = "resume-tokens"
)

// ParseState reads the bag. Unreadable entries are dropped and named: the worst outcome is an
// extra alert, never a pause or deletion without them.
func ParseState(bag map[string]string) (State, []string) {
	r := lifecycle.BagReader{Bag: bag}
	s := State{
		UID:           bag[bagUID],
		LastActivity:  r.Time(bagLastActivity),
		AlertsFor:     r.Time(bagAlertsFor),
		LastAlertAt:   r.Time(bagLastAlertAt),
		ProbeFailedAt: r.Time(bagProbeFailedAt),
		LastProbeAt:   r.Time(bagLastProbeAt),
		AlertsSent:    r.Count(bagAlertsSent, 1000),
		MaxAlerts:     r.Count(bagMaxAlerts, 1000),
		ProbeFailures: r.Count(bagProbeFailures, 1000),
		Paused:        bag[bagPaused] == "true",
		ProbeArmed:    bag[bagProbeArmed] == "true",
		KeptUntil:     r.Time(bagKeptUntil),
		KeptAt:        r.Time(bagKeptAt),
		KeepTokens:    bag[bagKeepTokens],
		Owner:         bag[lifecycle.BagOwner],
		PausedAt:      r.Time(bagPausedAt),
		PauseField:    bag[bagPauseField],
		PauseFrom:     bag[bagPauseFrom],
		ResumeAt:      r.Time(bagResumeAt),
		ResumeTokens:  bag[bagResumeTokens],
	}
	return s, r.Bad
}

// Bag writes the state back; zero fields are left out, and the UID when nothing else is kept.
func (s State) Bag() map[string]string {
	b := lifecycle.BagWriter{}
	b.Time(bagLastActivity, s.LastActivity)
	b.Time(bagAlertsFor, s.AlertsFor)
	b.Time(bagLastAlertAt, s.LastAlertAt)
	b.Time(bagProbeFailedAt, s.ProbeFailedAt)
	b.Time(bagLastProbeAt, s.LastProbeAt)
	b.Count(bagAlertsSent, s.AlertsSent)
	if s.AlertsSent > 0 {
		b.Count(bagMaxAlerts, s.MaxAlerts)
	}
	b.Count(bagProbeFailures, s.ProbeFailures)
	b.Time(bagKeptUntil, s.KeptUntil)
	b.Time(bagKeptAt, s.KeptAt)
	b.Time(bagPausedAt, s.PausedAt)
	b.Time(bagResumeAt, s.ResumeAt)
	for k, v := range map[string]string{bagKeepTokens: s.KeepTokens, bagPauseField: s.PauseField, bagPauseFrom: s.PauseFrom, bagResumeTokens: s.ResumeTokens} {
		if v != "" {
			b[k] = v
		}
	}
	if s.Owner != "" {
		b[lifecycle.BagOwner] = s.Owner
	}
	if s.Paused {
		b[bagPaused] = "true"
	}
	if s.ProbeArmed {
		b[bagProbeArmed] = "true"
	}
	if s.UID != "" && len(b) > 0 {
		// Only with state to guard: a target with nothing to remember gets no Lease for its
		// UID alone (10,000 idle-free targets would be 10,000 Lease writes at start).
		b[bagUID] = s.UID
	}
	return b
}

// Probe is the result of probing an exam endpoint at this look (nil: no probe).
type Probe struct {
	// At is when the probe ran.
	At time.Time
	OK bool
	// Detail says how it failed, as its class only (egress.Failure, egress.StatusClass): it is
	// shown to the tenant.
	Detail string
	// Refused: the destination is not one Kustos may ask (--allowed-destinations).
	Refused bool
}

func (p *Probe) detail() string {
	if p == nil || p.Detail == "" {
		return "no detail"
	}
	return p.Detail
}

// Snapshot is what the controller gathered for one target. It holds no client.
type Snapshot struct {
	Now    time.Time
	Target lifecycle.Target
	UID    string
	// Created is the target's creation: an environment never used is idle since then.
	Created time.Time
	// Running: the target runs (replicas > 0, or the pause field not at its pause value).
	Running bool
	// PauseFrom is the value the field a pause sets holds now (spec.replicas, or the pause
	// field), in its Kubernetes string form; empty when absent.
	PauseFrom string
	Policy    Policy
	Activity  activity.Activity
	Probe     *Probe
	State     State
	// LastDecision, ProposalOpen, Declined: the pipeline's memory of the Key.
	LastDecision           time.Time
	ProposalOpen, Declined bool
	// Proposed is the Change of the proposal the Key holds (PR mode; nil: none): only then is
	// there anything to withdraw.
	Proposed *lifecycle.Change
	Settings Settings
}

// Verdict is what Decide concluded for one target (the detector's own result; the pipeline
// gets a lifecycle.Decision made of it).
type Verdict struct {
	Next Next
	// At is when Next happens (zero for none and unknown).
	At time.Time
	// LastActivity is the latest known activity (zero: none known); IdleSince the baseline the
	// timeout counts from (latest of activity, creation, restart and the sources' coverage).
	LastActivity, IdleSince time.Time
	// Alert: send alert number State.AlertsSent now. Unknown: say which source is missing.
	Alert, Unknown bool
	// ActAt is, with an alert, when the pause or deletion comes if nothing changes: one
	// interval after the last alert.
	ActAt time.Time
	// Withdraw says why the pause or deletion proposed earlier (Snapshot.Proposed) is no
	// longer wanted (the target was used or restarted, opted out, or no longer times out); the
	// pipeline closes that pull request instead of following it to a merge.
	Withdraw string
	// HoldMerge says why the pause or deletion proposed earlier must not be merged now: a
	// source cannot say whether the target was used since (Unknown), and the merge is the
	// pause.
	HoldMerge string
	// Change is the pause or deletion, when due now, or the resume its owner asked for.
	Change *lifecycle.Change
	// PauseSeen: this look is the first to see the target paused by the pause the state
	// records (the notice with the resume links goes out now).
	PauseSeen bool
	// ResumeRefused says why a resume the owner asked for is not done (an Event on the
	// target, once: ResumeRefusedID).
	ResumeRefused, ResumeRefusedID string
	State                          State
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration
}

// margin is a minute added to a timeout: look again once it has surely passed.
const margin = time.Minute

// Decide is the inactivity schedule of one target, as CrownLabs runs it for instances: idle for its
// timeout → an alert every notification interval up to max alerts → one interval after the last,
// pause (persistent) or delete. Activity, or a restart after a pause, starts over. When a source is
// not collecting, nothing is inactive. An exam target whose endpoint failed --probe-failures times
// in a row is terminated at once.
func Decide(s Snapshot) Verdict {
	d := decide(s)
	recordOwner(&d.State, s.Policy.Owner)
	d.State.MaxAlerts = 0
	if d.State.AlertsSent > 0 {
		d.State.MaxAlerts = s.Policy.MaxAlerts
	}
	return d
}

func decide(s Snapshot) Verdict {
	d := Verdict{State: s.State, Next: NextNone}
	st := &d.State
	if s.UID != "" && st.UID != s.UID {
		if st.UID != "" {
			// Deleted and created again under the same name: nothing of the old one's idle
			// period, alerts or probes applies to it.
			*st = State{}
		}
		st.UID = s.UID
	}
	p := s.Policy
	if p.Ignored {
		if s.Proposed != nil {
			d.Withdraw = fmt.Sprintf("%s is opted out of the inactivity detector (%s)", s.Target, AnnotationIgnore)
		}
		return d
	}
	// A restart after a pause is activity, and starts the count again.
	if !s.Running {
		// The first look at a pause Kustos decided: its owner is told, with a resume link.
		d.PauseSeen = !st.Paused && !st.PausedAt.IsZero() && st.ResumeAt.IsZero()
		st.Paused = true
	} else if st.Paused {
		st.Paused = false
		st.LastActivity = s.Now
		st.AlertsSent, st.AlertsFor, st.LastAlertAt, st.ProbeFailures, st.ProbeFailedAt, st.ProbeArmed = 0, time.Time{}, time.Time{}, 0, time.Time{}, false
		// Resumed (by its owner's link or anyone): the pause is over, nothing is left to restore.
		forgetPause(st)
	}
	if s.Running && !st.PausedAt.IsZero() && !st.Paused {
		notYetPaused(s, &d)
	}
	last := st.LastActivity
	if a := s.Activity.Last; a.After(last) {
		last = a
		// Written to the Lease only when it moved enough to matter: the sources answer every
		// check, and a Lease write per used target per check is what a busy lab would pay.
		if st.LastActivity.IsZero() || a.Sub(st.LastActivity) >= persistEvery(p.Timeout) {
			st.LastActivity = a
		}
	}
	d.LastActivity = last
	check := s.Settings.CheckInterval
	if check <= 0 {
		check = 5 * time.Minute
	}

	if p.ProbeURL != "" && s.Running {
		if s.Probe != nil && s.Probe.At.After(st.LastProbeAt) {
			// Counted once: the pipeline decides again over the state it just wrote.
			st.LastProbeAt = s.Probe.At
			switch {
			case s.Probe.OK:
				st.ProbeFailures, st.ProbeArmed = 0, true
			case st.ProbeArmed:
				st.ProbeFailures++
			}
		}
		if st.ProbeFailures < max(1, s.Settings.ProbeFailures) {
			st.ProbeFailedAt = time.Time{}
		} else {
			// The exam is over: terminated at once, no alerts. Decided once the pipeline's
			// last decision is later than when it became due; a restart starts over.
			if st.ProbeFailedAt.IsZero() {
				st.ProbeFailedAt = s.Now
			}
			d.Next, d.At = NextNone, time.Time{}
			if s.LastDecision.Before(st.ProbeFailedAt) {
				d.Next, d.At = next(p.Action), st.ProbeFailedAt
				d.Change = change(s, ReasonProbeFailed, fmt.Sprintf("its endpoint %s failed %d checks in a row (last: %s)",
					p.ProbeURL, st.ProbeFailures, s.Probe.detail()), st.ProbeFailedAt)
				recordPause(s, st)
			}
			return d
		}
	}

	if p.Timeout <= 0 && s.Running && st.ProbeFailedAt.IsZero() && s.Proposed != nil {
		d.Withdraw = fmt.Sprintf("%s no longer times out (%s)", s.Target, p.From)
	}
	if !s.Running && !st.ResumeAt.IsZero() {
		resume(s, &d)
		return d
	}
	if p.Timeout <= 0 || !s.Running {
		// Never times out, or paused already: nothing to count. The probe still runs.
		if p.ProbeURL != "" {
			d.RequeueAfter = check
		}
		return d
	}
	if !s.Activity.Known() {
		// Fail safe: a source that is not collecting could be hiding activity. Said (Unknown)
		// only for a target that would be idle by what is known, not for every target.
		d.Next, d.RequeueAfter = NextUnknown, check
		d.IdleSince = latest(last, s.Created)
		// Before the first check (Kustos just started) there is nothing to say yet: the check
		// looks at every target again when it is done.
		d.Unknown = !s.Activity.CheckedAt.IsZero() && !s.Now.Before(d.IdleSince.Add(p.Timeout))
		if s.Proposed != nil {
			// Proposed on what was known then; whether it was used since cannot be told, and
			// an auto-merge now would pause it on the old evidence.
			d.HoldMerge = fmt.Sprintf("whether %s was used since cannot be told now (an activity source is not answering in full)", s.Target)
		}
		return d
	}
	base := latest(last, s.Created, s.Activity.CoveredSince)
	if !st.AlertsFor.IsZero() && !last.After(st.AlertsFor) {
		// Nobody used the target since the idle period the alerts are about began: it goes
		// on, and so do they, though the baseline moved — forward when the sources' coverage
		// did (Kustos restarted; its first check reaches back only the lookback), back when
		// the activity it began with fell out of the lookback before the Lease recorded it.
		base = st.AlertsFor
	}
	d.IdleSince = base
	idleAt := base.Add(p.Timeout)
	if kept(s, &d, idleAt, check) {
		return d
	}
	if s.Now.Before(idleAt) {
		if s.Proposed != nil { // formatted only when there is a proposal: every look at a used target passes here
			d.Withdraw = fmt.Sprintf("%s is not idle before %s (last activity: %s)", s.Target, idleAt.UTC().Format(time.RFC3339), orNone(last))
		}
		if !st.AlertsFor.IsZero() && !st.AlertsFor.Equal(base) {
			// Used again since the alerts: they are void.
			st.AlertsSent, st.AlertsFor, st.LastAlertAt = 0, time.Time{}, time.Time{}
		}
		d.Next, d.At = NextAlert, idleAt
		if p.MaxAlerts == 0 {
			d.Next = next(p.Action)
		}
		d.RequeueAfter = min(idleAt.Add(margin).Sub(s.Now), check)
		return d
	}

	// Idle for the timeout.
	if !st.AlertsFor.Equal(base) {
		st.AlertsFor, st.AlertsSent, st.LastAlertAt = base, 0, time.Time{}
	}
	interval := s.Settings.NotificationInterval
	if st.AlertsSent < p.MaxAlerts {
		at := s.Now
		if st.AlertsSent > 0 {
			at = st.LastAlertAt.Add(interval)
		}
		d.Next, d.At = NextAlert, at
		if s.Now.Before(at) {
			d.RequeueAfter = min(at.Sub(s.Now), check)
			return d
		}
		if st.AlertsSent == 0 {
			at = idleAt
		}
		if waitForCheck(s, at, &d, check) {
			return d
		}
		st.AlertsSent++
		st.LastAlertAt = s.Now
		d.Alert = true
		d.Next, d.At = NextAlert, s.Now.Add(interval)
		d.ActAt = s.Now.Add(time.Duration(p.MaxAlerts-st.AlertsSent+1) * interval)
		if st.AlertsSent >= p.MaxAlerts {
			d.Next = next(p.Action)
		}
		d.RequeueAfter = min(interval, check)
		return d
	}
	// All alerts sent: the pause or deletion one interval after the last (at once when no
	// alert is wanted).
	at := idleAt
	if st.AlertsSent > 0 {
		at = st.LastAlertAt.Add(interval)
	}
	d.Next, d.At = next(p.Action), at
	if s.Now.Before(at) {
		d.RequeueAfter = min(at.Sub(s.Now), check)
		return d
	}
	if waitForCheck(s, at, &d, check) {
		return d
	}
	if !s.LastDecision.Before(at) {
		// Decided already: proposed (the pipeline follows the pull request), declined (a human
		// said no: the target stays until it is used and idle again), reported (observer
		// mode) or carried out.
		d.Next, d.At = NextNone, time.Time{}
		return d
	}
	d.Change = change(s, ReasonInactivityDue, fmt.Sprintf("not used since %s (%s), %d alert(s) sent, the last at %s",
		base.UTC().Format(time.RFC3339), p.From, st.AlertsSent, orNone(st.LastAlertAt)), base)
	recordPause(s, st)
	return d
}

// waitForCheck holds an alert or an act due at due until a check at or after due has
// answered: the last one may predate activity that voids it (a login a minute before the
// pause). The check loop looks at every target again after each check; RequeueAfter is the
// fallback.
func waitForCheck(s Snapshot, due time.Time, d *Verdict, check time.Duration) bool {
	if !s.Activity.CheckedAt.Before(due) {
		return false
	}
	d.RequeueAfter = check
	return true
}

// persistEvery is how far the last activity must move before the Lease records it again: 5% of
// the timeout, at most an hour. The Lease's value only matters after a restart of Kustos, for
// activity older than --activity-lookback; being behind by this much makes a target idle at
// most that much sooner, after its alerts.
func persistEvery(timeout time.Duration) time.Duration {
	return min(timeout/20, time.Hour)
}

func next(a Action) Next {
	if a == ActionDelete {
		return NextDelete
	}
	return NextPause
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out.UTC()
}

func orNone(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// change is the pause or deletion of s.Target; why completes the sentence; idleSince names the
// idle period in the evidence (Supersedes compares it).
func change(s Snapshot, reason, why string, idleSince time.Time) *lifecycle.Change {
	c := &lifecycle.Change{
		Key:      lifecycle.KeyFor(DetectorName, s.Target),
		Detector: DetectorName,
		Target:   s.Target,
		Reason:   reason,
		OptOut: &lifecycle.OptOut{Declined: declinedNote + ".", Annotation: AnnotationIgnore, Value: "true",
			Keep: "it is used again (activity in its sources)"},
	}
	ev := map[string]string{"owner": s.Policy.Owner, "idleSince": idleSince.UTC().Format(time.RFC3339), "from": s.Policy.From}
	if !s.State.LastActivity.IsZero() {
		ev["lastActivity"] = s.State.LastActivity.UTC().Format(time.RFC3339)
	}
	if s.Policy.Action == ActionDelete {
		c.Edit = lifecycle.Edit{Op: lifecycle.EditDelete}
		if s.UID != "" {
			c.Edit.Preconditions = &lifecycle.Preconditions{UID: s.UID}
		}
		c.Summary = fmt.Sprintf("%s is deleted: %s", s.Target, why)
	} else {
		c.Edit = PauseEdit(s.Settings.Pause)
		c.Summary = fmt.Sprintf("%s is paused (%s): %s", s.Target, describePause(s.Settings.Pause), why)
	}
	ev["message"] = c.Summary
	activityEvidence(ev, s.Activity, s.Policy.Timeout)
	c.Evidence = []map[string]string{ev}
	return c
}

// activityEvidence adds what the pull request shows per source (internal/actuate/pr draws
// it): "sources" is each source's last activity of the target in configuration order,
// "name=<RFC 3339>", "name=" for none within what the tracker remembers, "name=?" for a source
// that did not answer at the last check; "checkedAt" that check; "coveredSince" since when every
// source collected (only when all answered); "timeout" the policy's. Source names are
// [a-z0-9_-] (activity.LoadConfig), so the list needs no quoting.
func activityEvidence(ev map[string]string, a activity.Activity, timeout time.Duration) {
	if timeout > 0 {
		ev["timeout"] = lifecycle.FormatDuration(timeout)
	}
	if a.CheckedAt.IsZero() || len(a.Sources) == 0 {
		return
	}
	ev["checkedAt"] = a.CheckedAt.UTC().Format(time.RFC3339)
	if a.Known() {
		ev["coveredSince"] = a.CoveredSince.UTC().Format(time.RFC3339)
	}
	parts := make([]string, 0, len(a.Sources))
	for _, src := range a.Sources {
		switch {
		case src.Status != activity.StatusOK:
			parts = append(parts, src.Name+"=?")
		case src.Last.IsZero():
			parts = append(parts, src.Name+"=")
		default:
			parts = append(parts, src.Name+"="+src.Last.UTC().Format(time.RFC3339))
		}
	}
	ev["sources"] = strings.Join(parts, ",")
}

// PauseEdit is the Edit that pauses a target.
func PauseEdit(p Pause) lifecycle.Edit {
	if len(p.Field) == 0 {
		return lifecycle.Edit{Op: lifecycle.EditScaleToZero}
	}
	return lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: []lifecycle.FieldChange{{Path: p.Field, To: p.Value}}}
}

func describePause(p Pause) string {
	if len(p.Field) == 0 {
		return "scaled to zero"
	}
	return lifecycle.PathString(p.Field) + ": " + p.Value
}
