package quota

import (
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// DetectorName is the detector's name in Keys, metrics and log lines.
const DetectorName = "quota"

// Trigger says why a resource got a recommendation.
type Trigger string

const (
	// TriggerThreshold: used/hard × 100 reached the threshold percentage for a resource.
	TriggerThreshold Trigger = "threshold"
	// TriggerDeficit: a workload failed to create pods because the quota was exceeded (a Warning
	// FailedCreate Event whose message names the quota); the new limit lets it create what it lacks.
	TriggerDeficit Trigger = "deficit"
)

// Settings are the tunables of one resource (or of the whole namespace, or the flags).
type Settings struct {
	// Threshold in percent, 0 ≤ Threshold ≤ 100.
	Threshold *big.Rat
	// Increment as a fraction: 0.2 means +20%. 0 < Increment ≤ 10.
	Increment *big.Rat
	// Headroom is how far above the window's peak (or the usage, if higher) a quota is sized,
	// as a fraction: 0.25 means the target is peak × 1.25. 0 ≤ Headroom ≤ 10.
	Headroom *big.Rat
	// Tolerance is the band around the target, as a fraction of it, inside which the hard
	// value is left alone. 0 ≤ Tolerance ≤ 1.
	Tolerance *big.Rat
	// Min is the floor a resource is never shrunk below (resizer.io/<alias>-min); nil: none.
	// It exists per resource only: one floor for cpu and memory would mean nothing.
	Min *resource.Quantity
}

// WindowPolicy is how a quota is sized from its usage window and when it may shrink: the
// namespace annotations over the flags.
type WindowPolicy struct {
	// Length is the window the peak is taken over, whole days (resizer.io/window).
	Length time.Duration
	// Shrink is the opt-in to propose shrinks in PR and direct mode (resizer.io/shrink,
	// --enable-shrink); observer mode reports shrink recommendations without it.
	Shrink bool
	// ShrinkCooldown is how long after a shrink no further shrink is proposed.
	ShrinkCooldown time.Duration
	// MaxShrink is the largest cut one proposal makes, as a fraction of the hard value:
	// 0.25 means at most 25 % less per proposal. 0 < MaxShrink ≤ 1.
	MaxShrink *big.Rat
}

// Policy is the effective configuration of one namespace after annotations were applied to the
// flag defaults. Precedence: per-resource annotation, namespace annotation, flag.
type Policy struct {
	// Enabled is false when the namespace opted out with resizer.io/enabled: "false".
	Enabled bool
	// Namespace holds the namespace-wide settings (annotation, else flag).
	Namespace Settings
	// PerResource holds per-alias overrides; a nil field means "not overridden".
	PerResource map[string]Settings
	// Cooldown is how long no further increase is recommended after one was made.
	Cooldown time.Duration
	// Window is the sizing from the usage window and the shrink gates' settings.
	Window WindowPolicy
}

// AnnotationProblem describes one namespace annotation that could not be used.
type AnnotationProblem struct {
	Key      string // full annotation key, e.g. resizer.io/cpu-threshold
	Value    string // the value as written
	Problem  string // what is wrong, e.g. "threshold must be between 0 and 100"
	Fallback string // the value used instead, human readable, e.g. "80%"
}

// State is what the Lease remembers about one quota.
type State struct {
	// LastModified is the time of the last recommendation (observer mode) or PR (PR mode);
	// zero when none was ever made.
	LastModified time.Time
	// LastGrow and LastShrink are when the last grow and the last shrink were decided (the
	// Lease's bag); zero when none is on record. A Lease from before shrinking existed has
	// neither: its LastModified is a grow's.
	LastGrow, LastShrink time.Time
}

// lastGrow is the last grow on record: LastGrow, or LastModified on a Lease that never saw a
// shrink (every decision on it was a grow).
func (s State) lastGrow() time.Time {
	if !s.LastGrow.IsZero() || !s.LastShrink.IsZero() {
		return s.LastGrow
	}
	return s.LastModified
}

// lastWasShrink reports whether the latest change on record shrank the quota: its cooldown is
// the shrink cooldown, and it never holds back a grow.
func (s State) lastWasShrink() bool {
	return !s.LastShrink.IsZero() && s.LastShrink.After(s.LastGrow)
}

// FailureKind distinguishes the two quota messages the API server writes into FailedCreate events.
type FailureKind int

const (
	// FailureExceeded: "exceeded quota: <q>, requested: …, used: …, limited: …".
	FailureExceeded FailureKind = iota + 1
	// FailureMissingSpec: "failed quota: <q>: must specify <resources>" — nothing to raise.
	FailureMissingSpec
)

// QuotaFailure is the parsed quota part of a FailedCreate event message.
type QuotaFailure struct {
	Kind  FailureKind
	Quota string
	// For FailureExceeded.
	Requested, Used, Limited corev1.ResourceList
	// For FailureMissingSpec: the text after "must specify", as written (e.g. "limits.cpu for: c").
	Missing string
}

// Owner is the object that failed to create pods, and how many pods it still lacks.
type Owner struct {
	Kind string // ReplicaSet, StatefulSet, Job, DaemonSet, Pod, or "" when unknown
	Name string
	// Missing is how many pods the owner still lacks; 0 when unknown (counted as 1).
	Missing int64
	// Known is true when the owner was found and Missing was computed from its spec and status.
	Known bool
}

// Failure is one FailedCreate event that names a quota, with its owner.
type Failure struct {
	EventName string
	// LastSeen is the event's last timestamp (lastTimestamp, series, eventTime, firstTimestamp,
	// creation, whichever is latest).
	LastSeen time.Time
	Message  string
	Owner    Owner
	Parsed   QuotaFailure
}

// Snapshot is everything Decide needs about one ResourceQuota.
type Snapshot struct {
	Now       time.Time
	Namespace string
	Quota     string
	// Hard and Used are the quota's status; Hard empty means "no status yet".
	Hard, Used corev1.ResourceList
	Policy     Policy
	State      State
	// Failures are the FailedCreate events in the namespace that name this quota.
	Failures []Failure
	// Window is the quota's usage over Policy.Window.Length (zero: no history at all).
	Window quotahistory.Window
}

// Recommendation is one resource of one quota that should be raised.
type Recommendation struct {
	Namespace   string
	Quota       string
	Resource    corev1.ResourceName
	Current     resource.Quantity
	Used        resource.Quantity
	UsedPercent float64
	// ThresholdPercent is the threshold that applied, for the message.
	ThresholdPercent float64
	Recommended      resource.Quantity
	Trigger          Trigger
	// WindowTarget: Recommended was raised to the window's target (the usage window asks for
	// more than the threshold or the deficit did).
	WindowTarget bool
	// Window is the usage window of the resource, for the pull request's chart; nil when the
	// history holds too few daily peaks of it.
	Window *WindowEvidence
	// Owner is the failing workload for deficits.
	Owner *Owner
	// Event is an excerpt of the FailedCreate event for deficits.
	Event   string
	Message string

	// requested is what each missing pod requests (deficits), for the message.
	requested resource.Quantity
}

// MissingSpec reports a workload that cannot create pods because the quota requires a
// resource field its pod template does not set; there is nothing to raise.
type MissingSpec struct {
	Namespace, Quota string
	Owner            Owner
	Missing          string
	EventName        string
	Message          string
}

// Verdict is what Decide concluded about one quota.
type Verdict struct {
	Recommendations []Recommendation
	MissingSpecs    []MissingSpec
	// RequeueAfter is when Decide needs to look again even if nothing changes (the end of a
	// cooldown under pressure); 0 means "only when something changes".
	RequeueAfter time.Duration
	// Problems are per-resource problems (a quantity that does not parse, an overflow) that
	// skipped that resource only.
	Problems []string
	// Shrinks are the resources whose hard value lies above the window's tolerance band, each
	// with the value it could shrink to and the gates that hold it back; only when nothing is
	// to be raised (a grow always goes first).
	Shrinks []Shrink
}
