package pipeline

// The situations and steps of the state machine. plan is pure: Run gathers a situation
// (gather.go), asks plan, carries the step out (pipeline.go) and, when the step changed the
// Lease, looks again.

// pendingState is what the Lease says about a decision recorded but maybe not carried out.
type pendingState int

const (
	pendingNone pendingState = iota
	// pendingOurs: written by this replica (this process, or a crashed one with this identity).
	pendingOurs
	// pendingOtherAlive: written by another replica that is still renewing its liveness Lease;
	// it is probably carrying the decision out right now.
	pendingOtherAlive
	// pendingOtherGone: written by a replica that is gone (crashed, scaled down).
	pendingOtherGone
	// pendingUnreadable: the pending annotation cannot be decoded (a hand edit).
	pendingUnreadable
)

// proposalState is what the actuator said about the Key's proposal (PR mode).
type proposalState int

const (
	// proposalUnknown: not read (no holder, or not PR mode).
	proposalUnknown proposalState = iota
	proposalOpen
	proposalMerged
	proposalClosed
	// proposalGone: the holder names a proposal the forge no longer knows.
	proposalGone
)

// mergeability is the forge's view of an open proposal.
type mergeability int

const (
	mergeWaiting mergeability = iota // checks pending, blocked, computing
	mergeClean
	mergeDirty  // conflicts with the base
	mergeBehind // the base moved and branches must be up to date
)

// situation is everything plan looks at.
type situation struct {
	proposing bool // PR mode: Changes become proposals that are followed
	pending   pendingState
	// queued: our pending decision waits in Kustos's queue (no holder): nothing of it reached
	// the forge, and the detector was asked about it again.
	queued bool
	// closedSincePending: without a holder, a proposal from the Key's branch was closed after
	// the pending decision was recorded (a human closed it before the Lease named it).
	closedSincePending bool
	holder             bool
	proposal           proposalState
	// foreignHead: the open (or closed) proposal's head is not the commit Kustos wrote.
	foreignHead bool
	mergeable   mergeability
	// change: the detector's decision asks for a change; supersedes: it supersedes the open
	// proposal (holder) or the declined one (no holder); declined: a human declined a proposal
	// for this Key and nothing since superseded it.
	change     bool
	supersedes bool
	declined   bool
	autoMerge  bool
	// withdraw: the detector asks for no change and withdraws the holder's proposal (or the
	// queued decision).
	withdraw bool
	// holdMerge: the detector cannot confirm its Change now (Decision.HoldMerge): the open
	// proposal is not merged at this look.
	holdMerge bool
	// bagChanged: the detector asked to keep a different Bag.
	bagChanged bool
	// carried: a Change was carried out earlier in this Run; looking again only asks the
	// detector when to look next, it never carries out a second decision in the same Run.
	carried bool
}

// step is what Run does next.
type step int

const (
	stepWait          step = iota // another replica is carrying out the pending decision: look again soon
	stepDropPending               // report the unreadable pending decision, clear it, decide afresh
	stepTakePending               // record that this replica now carries out the pending decision
	stepReplay                    // carry out the pending decision (again; every actuator is idempotent)
	stepMerged                    // the proposal was merged: report, unlock, start the cooldown
	stepDeclined                  // a human closed the proposal: report, unlock, remember what was declined
	stepForgetHolder              // the holder's proposal is gone: unlock, keep the rest
	stepForeignHead               // someone else pushed to the proposal: report, never merge it, leave it to people
	stepUpdate                    // record the superseding Change as pending, then carry it out
	stepRebuild                   // the proposal conflicts with (or lags behind) its base: propose it again on the new base
	stepMerge                     // ask the forge to merge Kustos's head commit
	stepPoll                      // nothing to do now: look again at the poll interval
	stepCommit                    // record the detector's Change as pending, then carry it out
	stepIdle                      // nothing to do: look again when the detector asks
	stepWithdraw                  // close the proposal the detector no longer wants, then unlock
	stepKeepBag                   // write the detector's new Bag, then look again
	stepDropQueued                // drop the queued decision the detector no longer wants
	stepReplaceQueued             // record the Change superseding the queued decision as pending (cooldown kept), then carry it out
)

var stepNames = [...]string{"Wait", "DropPending", "TakePending", "Replay", "Merged", "Declined", "ForgetHolder",
	"ForeignHead", "Update", "Rebuild", "Merge", "Poll", "Commit", "Idle", "Withdraw", "KeepBag", "DropQueued", "ReplaceQueued"}

func (s step) String() string { return stepNames[s] }

// plan decides the next step. It needs the proposal state only when there is a holder, and
// the detector's decision only when no pending decision is left or ours is queued.
func plan(s situation) step {
	st := planLook(s)
	switch {
	case s.carried && (st == stepCommit || st == stepUpdate):
		return stepIdle
	case s.carried && st == stepRebuild:
		return stepPoll // a rebuild that could not be carried out is tried again at the next poll
	}
	return st
}

// planLook is plan for the first look of a Run.
func planLook(s situation) step {
	if s.bagChanged {
		// The detector's memory first (it was asked only when no decision of another replica
		// is pending); it is asked again on the newer Lease.
		return stepKeepBag
	}
	if s.pending != pendingNone {
		return planPending(s)
	}
	if s.proposing && s.holder {
		return planFollow(s)
	}
	if !s.change {
		return stepIdle
	}
	if s.proposing && s.declined && !s.supersedes {
		return stepIdle // a human declined this (or more): wait until the evidence has grown
	}
	return stepCommit
}

// planPending is plan while a decision is pending.
func planPending(s situation) step {
	switch s.pending {
	case pendingOtherAlive:
		return stepWait
	case pendingUnreadable:
		return stepDropPending
	case pendingOtherGone:
		return stepTakePending
	}
	if s.queued {
		switch {
		case s.withdraw:
			return stepDropQueued
		case s.change && s.supersedes:
			return stepReplaceQueued
		}
		return stepReplay // the actuator says whether it may go now
	}
	if !s.proposing {
		return stepReplay
	}
	// Learn the fate of what is proposed before replaying: a human who closed the PR in the
	// meantime must not get a second one.
	if s.holder {
		if st, decided := fate(s); decided {
			return st
		}
		return stepReplay
	}
	if s.closedSincePending {
		return stepDeclined
	}
	return stepReplay
}

// planFollow is plan for an open (or just closed) proposal without a pending decision.
func planFollow(s situation) step {
	if s.withdraw && (s.proposal == proposalOpen || s.proposal == proposalClosed) && !s.foreignHead {
		// Open: closed by Kustos, never merged. Closed with Kustos's own head: by Kustos
		// before a crash (or by a human who agrees): not a decline of what is still wanted.
		// Closed with a human's head: Kustos never closes that one, so people did (declined).
		return stepWithdraw
	}
	if st, decided := fate(s); decided {
		return st
	}
	if s.change && s.supersedes {
		return stepUpdate
	}
	switch {
	case s.mergeable == mergeDirty:
		return stepRebuild // whether or not auto-merge is on: people cannot merge it either
	case s.mergeable == mergeBehind && s.autoMerge:
		return stepRebuild
	case s.mergeable == mergeClean && s.autoMerge && !s.holdMerge:
		return stepMerge
	}
	return stepPoll
}

// fate is what the holder's proposal itself decides, before anything else: merged, closed, gone,
// or taken over by someone else's commit.
func fate(s situation) (step, bool) {
	switch s.proposal {
	case proposalMerged:
		return stepMerged, true
	case proposalClosed:
		return stepDeclined, true
	case proposalGone:
		return stepForgetHolder, true
	}
	if s.foreignHead {
		return stepForeignHead, true
	}
	return 0, false
}
