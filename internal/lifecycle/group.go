package lifecycle

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Group names the proposal a target's Change shares with the Changes of other targets (in PR
// mode: one branch, one pull request, one commit). The zero Group is no group: the target's
// Change is a proposal of its own, as it always was.
type Group struct {
	// Key names the group stably across restarts and replicas; it names the group's Lease and
	// branch, and its pull request's marker. GroupKey builds it.
	Key Key
	// Label says what the members share, for a pull request's title and body and for Events:
	// "namespace team-a", "owner alice@example.com", "Cleaner team-a/previews".
	Label string
	// Window is how long the group gathers members before its proposal opens: the Changes of a
	// CI job's 500 previews that fall due within a minute become one pull request, not 500.
	// Zero opens it at once.
	Window time.Duration
	// Namespace is the namespace every member lives in (a group by namespace, a Cleaner's);
	// empty when they span several. The group's state goes when that namespace goes.
	Namespace string
	// Expect, when positive, is how many members the detector knows will join (a Cleaner's
	// targets, decided in one look): the proposal opens as soon as that many have joined,
	// without waiting out the Window.
	Expect int
}

// IsZero reports that g is no group.
func (g Group) IsZero() bool { return g.Key == "" }

// GroupKey builds a group's Key: "<detector>/@<by>/<value>". A Kubernetes namespace never
// starts with "@", so a group's Key never equals a target's (NewKey's three segments), and a
// value holding "/" (an owner's address cannot, a Cleaner's namespace/name can) is kept as it
// is after the second segment.
func GroupKey(detector, by, value string) Key {
	return Key(detector + "/@" + by + "/" + value)
}

// Cleaners' groups: one per Cleaner, its removals that Git may hold, keyed
// GroupKey(CleanerGroupDetector, CleanerGroupBy, "<namespace>/<cleaner>"). The detector is the
// Cleaners' stored Key prefix. A gone namespace's Cleaner groups are found by that prefix.
const (
	CleanerGroupDetector = "ephemeral"
	CleanerGroupBy       = "cleaner"
)

// CleanerGroupKey is the group Key of the removals of Cleaner namespace/name.
func CleanerGroupKey(namespace, name string) Key {
	return GroupKey(CleanerGroupDetector, CleanerGroupBy, namespace+"/"+name)
}

// IsGroup reports whether k is a group's Key (GroupKey).
func (k Key) IsGroup() bool {
	p, ok := k.groupParts()
	return ok && p[0] != ""
}

func (k Key) groupParts() ([3]string, bool) {
	var out [3]string
	s := strings.SplitN(string(k), "/", 3)
	if len(s) != 3 || len(s[1]) < 2 || s[1][0] != '@' || s[2] == "" {
		return out, false
	}
	out[0], out[1], out[2] = s[0], s[1][1:], s[2]
	return out, true
}

// GroupParts splits a group's Key into detector, what it groups by and the shared value.
func (k Key) GroupParts() (detector, by, value string, ok bool) {
	p, ok := k.groupParts()
	return p[0], p[1], p[2], ok && p[0] != ""
}

// Urgency orders the proposals waiting for room in the pull-request budget: a lower value goes
// first, ties go to the longest waiting.
type Urgency int

const (
	// UrgencyBlocking: a quota that keeps pods from being created.
	UrgencyBlocking Urgency = iota
	// UrgencyRemoval: a removal whose deadline has passed.
	UrgencyRemoval
	// UrgencyPause: a pause (scale to zero) of an idle environment.
	UrgencyPause
	// UrgencyOther: everything else (a quota that has room to grow, an annotation).
	UrgencyOther
)

func (u Urgency) String() string {
	switch u {
	case UrgencyBlocking:
		return "blocking"
	case UrgencyRemoval:
		return "removal"
	case UrgencyPause:
		return "pause"
	}
	return "other"
}

// UrgencyOf is how urgent c's proposal is: Blocking when the detector said so (a quota whose
// exhaustion failed pod creations), Removal for a deletion (proposed at or after its deadline),
// Pause for a scale to zero, Other for the rest.
func UrgencyOf(c Change) Urgency {
	switch {
	case c.Blocking:
		return UrgencyBlocking
	case c.Edit.Op == EditDelete:
		return UrgencyRemoval
	case c.Edit.Op == EditScaleToZero:
		return UrgencyPause
	}
	return UrgencyOther
}

// ErrQueued: the proposal of a Change has to wait (the pull-request budget is spent, or its
// group is still gathering members). Nothing was written to the forge; the Change stays the
// target's pending decision and is carried out when room frees. Match it with errors.Is; a
// *QueuedError says why and until when.
var ErrQueued = errors.New("proposal queued")

// Reasons a proposal waits (QueuedError.Reason).
const (
	// QueuedBudget: --max-open-prs or --max-new-prs-per-hour is reached.
	QueuedBudget = "budget"
	// QueuedGathering: the group is gathering members during its window.
	QueuedGathering = "gathering"
	// QueuedGroupFull: the group's pull request carries as many targets as one may; the
	// target waits for the next one.
	QueuedGroupFull = "group-full"
	// QueuedBackup: a removal waits for its Velero backup (internal/actuate/gate).
	QueuedBackup = "backup"
	// QueuedSubmission: a removal or pause waits for the environment's submission Job
	// (internal/actuate/gate).
	QueuedSubmission = "submission"
)

// QueuedError is ErrQueued with its reason, a sentence for people, and when to look again.
type QueuedError struct {
	Reason string
	// Message completes "The proposal waits: …" (no secrets, no URLs).
	Message string
	// Until is when the proposal may be tried again (the end of a window, the next look at the
	// budget).
	Until time.Time
	// Failed: what the Change waits for failed (a removal gate's backup or submission); the
	// Change is held, not carried out, and tried again at Until. The pipeline writes a Warning
	// Event and sends the Request's HeldNotice once per Attempt.
	Failed bool
	// Attempt names the failed attempt (the gate's object), so that each failure is reported
	// once and a later attempt's failure again.
	Attempt string
}

func (e *QueuedError) Error() string {
	return fmt.Sprintf("proposal queued (%s): %s", e.Reason, e.Message)
}

// Is makes errors.Is(err, ErrQueued) hold.
func (e *QueuedError) Is(target error) bool { return target == ErrQueued }

// RetryAt implements RetryAfter: the proposal may be tried again at Until.
func (e *QueuedError) RetryAt() (time.Time, bool) { return e.Until, !e.Until.IsZero() }

// GroupBy is what a detector's targets share when their Changes are proposed together.
type GroupBy string

const (
	// GroupByNone: every target has a proposal of its own.
	GroupByNone GroupBy = "none"
	// GroupByNamespace: one proposal per namespace (a cluster-scoped target is alone).
	GroupByNamespace GroupBy = "namespace"
	// GroupByOwner: one proposal per owner (kustos.io/owner); a target without one is grouped
	// by its namespace.
	GroupByOwner GroupBy = "owner"
)

// GroupingDetectors are the detectors --group-by may name, and DefaultGrouping what each does
// without it: the removals and pauses of short-lived environments come in bursts (a CI job's
// previews, a lab's desktops) and go per namespace; a quota is its namespace's own business.
var (
	GroupingDetectors = []string{"quota", "expiry", "inactivity"}
	DefaultGrouping   = map[string]GroupBy{"quota": GroupByNone, "expiry": GroupByNamespace, "inactivity": GroupByNamespace}
)

// ParseGroupBy reads --group-by: "namespace" (or "owner", "none") sets expiry and inactivity;
// "quota=namespace,expiry=owner" sets each detector named. Detectors not named keep
// DefaultGrouping.
func ParseGroupBy(s string) (map[string]GroupBy, error) {
	out := map[string]GroupBy{}
	for d, b := range DefaultGrouping {
		out[d] = b
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	parse := func(v string) (GroupBy, error) {
		switch b := GroupBy(strings.TrimSpace(v)); b {
		case GroupByNone, GroupByNamespace, GroupByOwner:
			return b, nil
		}
		return "", fmt.Errorf("%q: want namespace, owner or none", Clip(v, 40))
	}
	if !strings.Contains(s, "=") {
		b, err := parse(s)
		if err != nil {
			return nil, err
		}
		out["expiry"], out["inactivity"] = b, b
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		d, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want detector=namespace|owner|none", Clip(part, 40))
		}
		d = strings.TrimSpace(d)
		if _, known := DefaultGrouping[d]; !known {
			return nil, fmt.Errorf("%q: not a detector that groups; want one of %s", Clip(d, 40), strings.Join(GroupingDetectors, ", "))
		}
		b, err := parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		out[d] = b
	}
	return out, nil
}

// For is the Group of detector's target t, owned by owner, gathering for window.
func (b GroupBy) For(detector string, t Target, owner string, window time.Duration) Group {
	switch {
	case b == GroupByOwner && owner != "":
		return Group{Key: GroupKey(detector, string(b), owner), Label: "owner " + owner, Window: window}
	case (b == GroupByNamespace || b == GroupByOwner) && t.Namespace != "":
		return Group{Key: GroupKey(detector, string(GroupByNamespace), t.Namespace), Label: "namespace " + t.Namespace, Namespace: t.Namespace, Window: window}
	}
	return Group{}
}
