package lifecycle

import "time"

// The vocabulary between a detector's controller and the change pipeline (internal/pipeline):
// a detector hands the pipeline a Request and gets a Result, and never sees a Lease, a pull
// request or an Event.

// Request is one look at one Key, built by the detector's controller from its snapshot.
type Request struct {
	Key Key
	// Target is where Events about the Key go (its UID, when known, links them).
	Target Target
	UID    string
	// Seen is what the look read of the target, in a form the detector's reader of the API
	// server writes the same way (detectkit.Seen): before a merge, a target the API server has
	// otherwise was decided on a cache that was behind, and the merge waits. Empty: the
	// target is not confirmed, only its Lease.
	Seen string
	Now  time.Time
	// Decide is the detector's pure decision over what the pipeline remembers.
	Decide func(View) Decision
	// Supersedes says whether newer asks for more than old (an open or a declined proposal) and
	// returns what to propose instead of old: for quotas, every field at the larger value.
	Supersedes func(newer, old Change) (Change, bool)
	// Options are per-target inputs of a proposal (the namespace's git path).
	Options ProposeOptions
	// AutoMerge: the proposal may be merged by Kustos (the flag, and no opt-out on the target).
	AutoMerge bool
	// Group, when set, is the proposal the Key's Changes share with other targets' (PR mode);
	// the zero Group gives the Key a proposal of its own.
	Group Group
	// HeldNotice, when set, is the message to the target's owner when a Change is held because
	// what must come before it failed (a backup, a submission: QueuedError.Failed). The
	// detector fills in whom it goes to (To, Owner) and Target; the pipeline sets ID, Kind,
	// Subject, Text and At from the failure. Nil: the Warning Event only. It also addresses the
	// notice that a Change the detector withdrew went ahead, its proposal merged first.
	HeldNotice *Notice
}

// View is what the pipeline remembers of a Key, as a detector sees it.
type View struct {
	// LastModified is the last decision, merge or decline: the start of the cooldown.
	LastModified time.Time
	// ProposalOpen: a proposal is open; updating it is not held back by a cooldown.
	ProposalOpen bool
	// ProposalNumber is the open proposal's number (PR mode; 0 without one, or while the
	// Change waits to be proposed): a group's, when the Key's Change is in one.
	ProposalNumber int
	// Declined: a human closed the last proposal for this Key without merging it, and no
	// proposal has been merged since (PR mode).
	Declined bool
	// Bag is the detector's own state (counts, timestamps).
	Bag map[string]string
	// Proposed is the Change the held proposal carries (PR mode; nil without one), for a
	// detector that withdraws some kinds of proposal and not others.
	Proposed *Change
	// LeftToPeople: the open proposal has a commit Kustos did not write (someone pushed onto
	// it), so Kustos neither updates, merges nor closes it; no Change can be proposed for the
	// Key while it stays open.
	LeftToPeople bool
}

// Decision is a detector's answer for one Key.
type Decision struct {
	// Change is what should change; nil when nothing should.
	Change *Change
	// Findings are reported once each (Warning Events).
	Findings []Finding
	// RequeueAfter is when the detector must look again even if nothing changes; 0: only on change.
	RequeueAfter time.Duration
	// Bag, when not nil, replaces the detector's state in the Lease.
	Bag map[string]string
	// Withdraw, when not empty and Change is nil, says why the open proposal is no longer
	// wanted (the idle environment was used again): Kustos closes it with this as its
	// comment instead of following it to a merge. It completes "Kustos closes this pull
	// request because …".
	Withdraw string
	// HoldMerge, when not empty, says why the open proposal must not be merged at this look
	// (Kustos's auto-merge): the detector cannot tell now whether its Change is still wanted
	// (the evidence it stands on is not available). The proposal stays open and is looked at
	// again; a merge by people is theirs.
	HoldMerge string
}

// Result is what Run did, for the controller (requeue, metrics).
type Result struct {
	RequeueAfter time.Duration
	// Committed is the Change recorded as a new decision in this run (nil if none).
	Committed *Change
	// Merged is the Change whose proposal was merged in this run.
	Merged *Change
}

// Watches is what a detector reads through the manager's informer caches. The manager caches
// the union of every detector's Watches, trimmed to what they ask for.
type Watches struct {
	// EventFields are the field selector (field → value, e.g. reason=FailedCreate) of the Events
	// the detector reads; nil: the detector reads no Events. Detectors whose selectors differ
	// share an informer over the fields they have in common.
	EventFields map[string]string
	// MetadataAnnotationPrefixes are the annotations the detector reads on the objects Kustos
	// watches as metadata only (Namespaces, the expiry detector's workloads); the cached
	// copies keep only annotations with one of these prefixes.
	MetadataAnnotationPrefixes []string
	// MetadataLabels are the label keys the detector reads on those objects; the cached copies
	// keep only these labels.
	MetadataLabels []string
	// SecretLabels, when set, is the label selector of the Secrets the detector watches (as
	// metadata): helm's release records, owner=helm. Nil: the detector reads no Secrets.
	SecretLabels map[string]string
	// ObjectFields are the kinds the detector reads as whole (unstructured) objects from the
	// manager's cache, each with the paths of the fields it reads besides apiVersion, kind and
	// metadata (spec.replicas); the cached copies keep only those. A kind absent here is cached
	// whole; a detector that reads arbitrary fields (a Cleaner's conditions) reads from a cache
	// of its own.
	ObjectFields map[ObjectKind][][]string
	// WholeMetadata are kinds whose metadata the detector reads with every label and annotation
	// (a Cleaner's selector and conditions) from the manager's cache: the cached metadata of
	// these kinds is not trimmed to MetadataAnnotationPrefixes and MetadataLabels, so that one
	// informer serves this detector and those that read fewer.
	WholeMetadata []ObjectKind
}

// ObjectKind names a kind read as whole objects: group, version and kind.
type ObjectKind struct {
	Group, Version, Kind string
}

// Vocabulary names the Events the pipeline writes about one detector's Changes.
type Vocabulary struct {
	// Proposed, Merged and Declined are Event reasons of a proposal (e.g. QuotaResizeProposed).
	Proposed, Merged, Declined string
	// Applied is the Event reason of a Change carried out at once by the direct actuator.
	Applied string
	// MergedNote ends the merged Event's message (what happens next); DeclinedNote ends the
	// declined one (what Kustos does now that a human said no).
	MergedNote, DeclinedNote string
}
