package pipeline

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Gathering: one look at a Key reads the Lease, whether the replica that wrote its pending
// decision is alive, the forge's view of its proposal and the detector's decision, and writes
// nothing. What it found is a look: the situation plan reads, and what the chosen step needs.

// look is what one look at a Key found.
type look struct {
	s situation
	// pending is the Lease's pending decision (nil: none, or unreadable).
	pending *lifecycle.Change
	// proposed is the Change the holder's proposal carries (zero: none, or unreadable).
	proposed lifecycle.Change
	// status is the holder's proposal as the forge showed it; read says it was read.
	status lifecycle.ProposalState
	read   bool
	// decided: the detector was asked, and decision is its answer (its Findings are reported
	// before any step).
	decided  bool
	decision Decision
	// superseding is what the detector's Change makes of the open or queued one it supersedes
	// (s.supersedes).
	superseding lifecycle.Change
}

// readError is a forge read that failed while gathering, and what it was for.
type readError struct {
	what string
	err  error
}

func (e *readError) Error() string { return e.what + ": " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// gather looks at the Key whose Lease is rec. carried says a Change was carried out earlier in
// this Run. When a read fails, gather returns what it found so far with the error (a forge's
// as a *readError).
func (p *Pipeline) gather(ctx context.Context, req Request, rec state.Record, carried bool) (look, error) {
	lk := look{s: situation{proposing: p.Proposals != nil, holder: rec.Holder != "", carried: carried}}
	var err error
	if lk.s.pending, lk.pending, err = p.pendingOf(ctx, req.Key, rec); err != nil {
		return lk, err
	}
	// Nothing of a queued decision reached the forge: the detector may still take it back (the
	// environment was extended or used while it waited) or ask for more.
	lk.s.queued = lk.s.pending == pendingOurs && rec.Queued != "" && !lk.s.holder
	if rec.Proposed != "" {
		_ = json.Unmarshal([]byte(rec.Proposed), &lk.proposed) // unreadable: proposes nothing, so any change supersedes it
	}
	if lk.s.proposing && lk.s.holder && (lk.s.pending == pendingOurs || lk.s.pending == pendingNone) {
		if err := p.readProposal(ctx, rec, &lk); err != nil {
			return lk, err
		}
	}
	if lk.s.proposing && !lk.s.holder && lk.s.pending == pendingOurs && rec.Queued == "" {
		// A queued decision is not looked for on the forge at every look (hundreds of them
		// would spend GitHub's limits on nothing): the actuator looks once, when it may go.
		_, closed, err := p.Proposals.ClosedSince(ctx, *lk.pending, rec.PendingSince)
		if err != nil {
			return lk, &readError{"looking for a closed proposal", err}
		}
		lk.s.closedSincePending = closed
	}
	switch {
	case lk.s.queued:
		lk.decideQueued(req, rec)
	case lk.s.pending == pendingNone:
		lk.decide(req, rec)
	}
	return lk, nil
}

// pendingOf reads the Lease's pending decision and, when another replica wrote it, whether
// that replica is still alive.
func (p *Pipeline) pendingOf(ctx context.Context, key lifecycle.Key, rec state.Record) (pendingState, *lifecycle.Change, error) {
	if rec.Pending == "" {
		return pendingNone, nil, nil
	}
	// Unreadable (a hand edit) is a state plan handles, not an error.
	c, readable := rec.PendingChange()
	if !readable || c.Key != key {
		return pendingUnreadable, nil, nil
	}
	if rec.PendingBy == "" || rec.PendingBy == p.Identity {
		return pendingOurs, &c, nil
	}
	if p.Alive == nil {
		return pendingOtherGone, &c, nil
	}
	alive, err := p.Alive(ctx, rec.PendingBy)
	if err != nil {
		return pendingOtherGone, &c, err
	}
	if alive {
		return pendingOtherAlive, &c, nil
	}
	return pendingOtherGone, &c, nil
}

// readProposal reads the holder's proposal from the forge into lk.
func (p *Pipeline) readProposal(ctx context.Context, rec state.Record, lk *look) error {
	n, ok := state.HolderNumber(rec.Holder)
	if !ok {
		lk.s.proposal = proposalGone
		return nil
	}
	st, err := p.Proposals.Status(ctx, rec.Key, n)
	if err != nil {
		return &readError{"reading the proposal", err}
	}
	lk.status, lk.read = st, true
	lk.s.proposal = proposalOf(st.State)
	followed := st.State == lifecycle.ProposalOpen || st.State == lifecycle.ProposalClosedByHuman
	if followed && rec.Head != "" && st.HeadSHA != "" && st.HeadSHA != rec.Head {
		// Not the head the Lease records: a human's commit, or Kustos's own pushed just
		// before a crash (or a lost Lease write) kept the Lease from recording it. Closed, too:
		// Kustos closes only a proposal whose head is its own, so a closed one with a human's
		// head was closed by people, which a withdrawal must not claim as its own.
		own, err := p.Proposals.OwnCommit(ctx, rec.Key, st.HeadSHA)
		if err != nil {
			return &readError{"reading the proposal's head commit", err}
		}
		lk.s.foreignHead = !own
	}
	lk.s.mergeable = mergeabilityOf(st)
	return nil
}

// decideQueued asks the detector about a queued decision as if its proposal were open (it is,
// in Kustos's queue): a withdrawal drops it, a Change that supersedes it replaces it, anything
// else keeps it waiting.
func (lk *look) decideQueued(req Request, rec state.Record) {
	pending := *lk.pending
	lk.heed(rec, req.Decide(View{LastModified: rec.LastModified, ProposalOpen: true, Declined: rec.ClosedValues != "", Bag: rec.Bag, Proposed: &pending}))
	if c := lk.decision.Change; c != nil {
		lk.superseding, lk.s.supersedes = supersede(req, *c, *lk.pending)
	}
}

// decide asks the detector what it wants now that no decision is pending, and whether that
// supersedes the open proposal (holder) or the declined one (no holder).
func (lk *look) decide(req Request, rec state.Record) {
	s := &lk.s
	s.autoMerge = req.AutoMerge
	open := s.proposing && s.holder && s.proposal == proposalOpen
	v := View{LastModified: rec.LastModified, ProposalOpen: open, Declined: !s.holder && rec.ClosedValues != "", Bag: rec.Bag}
	if open {
		v.ProposalNumber, _ = state.HolderNumber(rec.Holder)
		v.LeftToPeople = s.foreignHead
	}
	if s.holder && lk.proposed.Key != "" {
		proposed := lk.proposed
		v.Proposed = &proposed
	}
	lk.heed(rec, req.Decide(v))
	c := lk.decision.Change
	switch {
	case c == nil:
	case s.holder:
		lk.superseding, s.supersedes = supersede(req, *c, lk.proposed)
	case rec.ClosedValues != "":
		s.declined = true
		var closed lifecycle.Change
		if json.Unmarshal([]byte(rec.ClosedValues), &closed) != nil {
			s.supersedes = true
		} else {
			_, s.supersedes = supersede(req, *c, closed)
		}
	}
}

// heed takes the detector's decision d into the look: what it asks for and whether its Bag
// changed.
func (lk *look) heed(rec state.Record, d Decision) {
	lk.decided, lk.decision = true, d
	lk.s.change = d.Change != nil
	lk.s.withdraw = d.Change == nil && d.Withdraw != ""
	lk.s.holdMerge = d.HoldMerge != ""
	lk.s.bagChanged = d.Bag != nil && !maps.Equal(d.Bag, rec.Bag)
}

// supersede applies the detector's rule; a detector without one (the Cleaner's: one decision
// per object version) never supersedes an open or declined proposal.
func supersede(req Request, newer, old lifecycle.Change) (lifecycle.Change, bool) {
	if req.Supersedes == nil {
		return old, false
	}
	return req.Supersedes(newer, old)
}
