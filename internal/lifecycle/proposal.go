package lifecycle

import (
	"context"
	"time"
)

// ProposeOptions are per-target inputs of a proposal that do not belong to the Change.
type ProposeOptions struct {
	// GitPath is the namespace's resizer.io/git-path: a file or directory that replaces
	// discovery under the configured paths.
	GitPath string
	// Head is the head commit the Key's Lease records as Kustos's own on its open proposal
	// (empty: none). A proposal's head that is neither this commit nor one Kustos marked as its
	// own is a human's, and is never overwritten.
	Head string
	// Open: the Key's Lease names an open proposal (an update or a rebuild, not a first
	// proposal). Queued: the Change waited to be proposed (the actuator looks for a proposal
	// of it a human closed meanwhile, which the pipeline does not while it waits).
	Open, Queued bool
	// Group is the Request's Group: the proposal the Change joins (zero: its own).
	Group Group
	// Progress is the Key's record of the steps that come before the Change is carried out
	// (internal/actuate/gate); nil where nothing records them.
	Progress Progress
}

// Progress is what the Key's Lease records of the steps that must be done before its pending
// Change is carried out (a backup, an exam submission). The pipeline hands it to the actuator
// so that a step's progress is written on the same record, and resourceVersion, as the
// pipeline's own writes: a crash neither repeats a step nor skips it, and a replica that
// wrote the Lease meanwhile makes SetStep fail instead of both acting.
type Progress interface {
	// Step is step's recorded progress ("" when none).
	Step(name string) string
	// SetStep records value as step's progress ("" forgets it). An error means nothing was
	// recorded; the caller must stop and let the Change be looked at again.
	SetStep(ctx context.Context, name, value string) error
}

// HeadOfPeople is the head recorded for a Change that waits on a pull request a person took
// over (a group's, which a person pushed onto before the Change could join): no commit of
// Kustos's, so the proposal's head never matches it, and the pipeline leaves the pull request
// to people while it follows its fate.
const HeadOfPeople = "-"

// Proposal says what proposing a Change (in PR mode: a pull request) found and did.
type Proposal struct {
	// AlreadyInBase: the base already holds every proposed value (typically a merged proposal
	// waiting for the GitOps tool to sync). Nothing was done; the Change counts as done.
	AlreadyInBase bool
	// Number and URL identify the one proposal of the key.
	Number int
	URL    string
	// HeadSHA is the head commit of the proposal's branch after this call: Kustos's own commit,
	// the only one it will ever merge.
	HeadSHA string
	// Created: this call opened the proposal. Committed: it wrote a new commit. Edited: it
	// updated the title or description.
	Created, Committed, Edited bool
}

// ProposalStatus is where a key's proposal stands.
type ProposalStatus string

const (
	// ProposalNone: no proposal is known for the key (none open, none tracked).
	ProposalNone ProposalStatus = "None"
	// ProposalOpen: the proposal is open.
	ProposalOpen ProposalStatus = "Open"
	// ProposalMerged: the proposal was merged; the change waits for the GitOps tool to sync.
	ProposalMerged ProposalStatus = "Merged"
	// ProposalClosedByHuman: the proposal was closed without merging. Kustos closes a proposal
	// only when its target's namespace is gone (and then forgets the key), so this was a person;
	// the cooldown starts and the declined values are remembered.
	ProposalClosedByHuman ProposalStatus = "ClosedByHuman"
)

// ProposalState is what reading a key's proposal found. A detector looks at State and Number
// and hands the whole value back to the actuator (e.g. to merge).
type ProposalState struct {
	State  ProposalStatus
	Number int
	URL    string
	Title  string
	// Mergeable is nil while the forge computes it.
	Mergeable *bool
	// MergeableState is the forge's mergeable state (GitHub: clean, blocked, unstable, behind,
	// dirty, draft, unknown, has_hooks).
	MergeableState string
	HeadSHA        string
	// OpenedAt is when the proposal was opened (zero when the forge did not say); the pipeline
	// reports the age of the oldest open one, so that a PR nobody reviews shows.
	OpenedAt time.Time
	// Unchanged: the forge answered "not modified" (no rate limit spent, nothing new).
	Unchanged bool
}
