package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/lru"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/state"
)

// Store is the Lease store as the pipeline uses it (*state.Store).
type Store interface {
	Get(ctx context.Context, key lifecycle.Key) (state.Record, error)
	MarkModified(ctx context.Context, rec state.Record, t time.Time, pending string) (state.Record, error)
	TakePending(ctx context.Context, rec state.Record) (state.Record, error)
	ClearPending(ctx context.Context, rec state.Record) (state.Record, error)
	Lock(ctx context.Context, rec state.Record, holder, proposed, head string) (state.Record, error)
	Unlock(ctx context.Context, rec state.Record, t time.Time, closed string) (state.Record, error)
	SetBag(ctx context.Context, rec state.Record, bag map[string]string) (state.Record, error)
	SetQueued(ctx context.Context, rec state.Record, why string) (state.Record, error)
	SetStep(ctx context.Context, rec state.Record, step, value string) (state.Record, error)
}

var _ Store = (*state.Store)(nil)

// Actuator carries out a Change: observe reports it, direct writes it to the cluster, pr
// proposes it. Apply must be idempotent for the same Change (a replay after a crash calls it
// again). Errors match lifecycle's kinds: ErrSource*, ErrInvalidChange, ErrProposalBlocked and
// ErrManagedByGitOps are findings no retry can fix; lifecycle.RetryAt says when a rate-limited
// call may be tried again; anything else is retried with backoff.
type Actuator interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

// Proposals follows the proposals an Actuator opened (PR mode; nil otherwise).
type Proposals interface {
	// Status reads the Key's proposal number (the Lease holder).
	Status(ctx context.Context, key lifecycle.Key, number int) (lifecycle.ProposalState, error)
	// ClosedSince reports a proposal for c's branch that was closed without merging after since.
	ClosedSince(ctx context.Context, c lifecycle.Change, since time.Time) (number int, closed bool, err error)
	// Merge merges the proposal st, pinned to st.HeadSHA. It returns merged=true when it is
	// merged (now or before), retryAfter when to ask again, and errors matching
	// lifecycle.ErrProposalDirty, ErrProposalClosed or ErrNoProposal.
	Merge(ctx context.Context, key lifecycle.Key, st lifecycle.ProposalState) (merged bool, retryAfter time.Duration, err error)
	// Withdraw takes key's Change out of the open proposal number, leaving comment: a proposal
	// of its own is closed; a group's proposal is updated without it, and closed when no other
	// target is left in it. A proposal already closed is left alone (so that a retry after a
	// crash does nothing). One merged with key's Change in it, before the withdrawal took
	// effect or since, returns an error matching lifecycle.ErrMergedBeforeWithdrawal: the
	// Change went ahead, which is not a withdrawal. One open with a head Kustos did not write
	// (a person pushed onto it) is not closed: an error matching lifecycle.ErrForeignCommit.
	Withdraw(ctx context.Context, key lifecycle.Key, number int, comment string, group lifecycle.Group) error
	// OwnCommit reports whether the commit sha is one Kustos wrote for key. The pipeline asks
	// when an open proposal's head is not the one its Lease records: after a crash between
	// pushing a commit and recording it, the head is Kustos's own and must not be disowned.
	OwnCommit(ctx context.Context, key lifecycle.Key, sha string) (bool, error)
}

// Dequeuer is implemented by Proposals that gather the Changes of a group into one proposal
// (the group actuator): the group proposes every member's pending Change, so a queued Change
// its detector drops may already be in the group's proposal, put there by another member's
// push, and must be taken out of it before the drop, or another member's merge carries it out.
type Dequeuer interface {
	// Dequeue takes key's Change out of group g's open proposal when its head carries it (as
	// Withdraw does) and returns that proposal's number; 0 and nil when none carries it.
	Dequeue(ctx context.Context, key lifecycle.Key, g lifecycle.Group, why string) (int, error)
}

// Notifier sends a Finding's Notice to the people it names (mail, webhook). An error leaves
// the detector's state unwritten, so the Notice is sent again at its next look.
type Notifier interface {
	Send(ctx context.Context, n lifecycle.Notice) error
}

// Reporter tells people: Events (deduplicated by id) and log lines (observe.Recorder).
type Reporter interface {
	// Record reports a Change in observer form (a Warning Event per field and a JSON log line).
	Record(ctx context.Context, c lifecycle.Change, decidedAt time.Time) error
	// Notify writes one Event about ref, once per id.
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// Event reasons the pipeline writes for every detector.
const (
	ReasonSourceNotFound    = "SourceNotFound"
	ReasonSourceAmbiguous   = "SourceAmbiguous"
	ReasonSourceNotEditable = "SourceNotEditable"
	ReasonSourceConflict    = "SourceConflict"
	ReasonProposeFailed     = "ProposeFailed"
	// ReasonManagedByGitOps: the direct actuator refused an object a GitOps tool manages.
	ReasonManagedByGitOps = "ManagedByGitOps"
	// ReasonDeleteNotAllowed: the direct actuator refused a deletion of a kind the detector was
	// not allowed to delete (--allow, --allow-delete); the object stays, and so does the Warning until
	// someone deletes it, opts the kind in, or the detector no longer wants it gone.
	ReasonDeleteNotAllowed = "DeleteNotAllowed"
	// ReasonPauseNotAllowed: the direct actuator refused a pause (scale to zero, or the pause
	// field) of a kind the detector was not allowed to pause (--allow); the object keeps
	// running, and the Warning stays until someone pauses it, opts the kind in, or the detector
	// no longer wants it paused.
	ReasonPauseNotAllowed = "PauseNotAllowed"
	// ReasonOutsideNamespace: carrying the change out would act outside the target's namespace
	// (a helm release whose manifest or hooks reach further); nothing is done. The detectors'
	// own ReleaseOutsideNamespace reason, for a refusal an actuator met first.
	ReasonOutsideNamespace = "ReleaseOutsideNamespace"
	// ReasonForeignCommit: someone else pushed to a Kustos branch; Kustos leaves that PR to people.
	ReasonForeignCommit = "ForeignCommit"
	// ReasonInvalidState: the state Lease holds something Kustos cannot use (a hand edit, a
	// legacy Lease that fits several targets).
	ReasonInvalidState = "InvalidState"
	// ReasonWithdrawn: Kustos closed its own proposal because the detector no longer wants
	// the change (Decision.Withdraw).
	ReasonWithdrawn = "ProposalWithdrawn"
	// ReasonMergedBeforeWithdrawal: the detector withdrew the Change (an owner extended the
	// environment, it was used again) but its proposal had been merged first: the Change is in
	// Git and goes ahead. A Warning, and a notice to the owner (Request.HeldNotice names whom).
	ReasonMergedBeforeWithdrawal = "MergedBeforeWithdrawal"
	// ReasonQueued: the Change waits for room in the pull-request budget (or for the next
	// proposal of its full group); it is proposed when room frees, the most urgent first.
	ReasonQueued = "ProposalQueued"
	// ReasonRemovalHeld: what must come before a removal or pause (a backup, an exam
	// submission) failed; the Change is held, not carried out, and tried again later.
	ReasonRemovalHeld = "RemovalHeld"
)

// NoticeHeld is the Kind of the notice to an owner whose environment's removal is held
// (Request.HeldNotice).
const NoticeHeld = "removal.held"

// NoticeMergedBeforeWithdrawal is the Kind of the notice to an owner whose target's Change went
// ahead because its proposal was merged before Kustos could withdraw it.
const NoticeMergedBeforeWithdrawal = "proposal.merged-before-withdrawal"

// Pipeline runs one detector's Changes. It is safe for concurrent use across Keys; calls for
// one Key must not overlap (controller-runtime's work queue guarantees that).
type Pipeline struct {
	Detector string
	Vocab    Vocabulary
	Store    Store
	// LiveRecord reads the Key's Lease from the API server, not a cache (nil: Store is read
	// as it is). A merge is decided on it: a keep or an extension another replica, or the
	// extension server, wrote a moment ago may not be in Store's cache yet (after an API
	// server restart, the cache's watch comes back only after a backoff).
	LiveRecord func(ctx context.Context, key lifecycle.Key) (state.Record, error)
	// Confirm, when set (PR mode), remembers what each look that agreed with its Key's proposal
	// decided on; the actuator confirms it against the API server before a merge.
	Confirm  *Confirmations
	Actuator Actuator
	// Proposals is set in PR mode: Changes become proposals that are followed until merged or
	// closed.
	Proposals Proposals
	// Reporter writes Events and log lines; it is also the observer-form fallback when no
	// proposal can carry a Change (its manifest is not in Git).
	Reporter Reporter
	// Notifier sends the Notices of Findings (nil: Events only).
	Notifier Notifier
	// SentNotices, when set, remembers the IDs of Notices sent by this process: a Notice whose
	// state write failed (a conflict with another writer of the Lease) and is decided again is
	// not sent twice. A crash still may re-send one, with the same ID.
	SentNotices *lru.Cache
	// Alive tells whether another replica is still running (its liveness Lease); nil: never.
	Alive func(ctx context.Context, identity string) (bool, error)
	// Identity is this replica's (the Store's) identity.
	Identity string
	// PollInterval is how often an open proposal is looked at.
	PollInterval time.Duration
	// WaitInterval is how soon a Key whose pending decision another live replica carries out is
	// looked at again (default 5 s).
	WaitInterval time.Duration
	Log          logr.Logger
}

// conflictRetry is how soon a Key is looked at again after its Lease changed under us: long
// enough for the cache to see the newer Lease, short enough to be unnoticeable.
const conflictRetry = 200 * time.Millisecond

// maxSteps bounds the steps of one Run (each step that changes the Lease looks again).
const maxSteps = 8

// Run looks at one Key and carries out what plan says, step after step, until a step waits.
// How the look ended feeds the health metrics (kustos_changes_failing and its kin).
func (p *Pipeline) Run(ctx context.Context, req Request) (Result, error) {
	out, err := p.run(ctx, req)
	tracked.looked(p.trackKey(req.Key), req.Now, err != nil)
	return out, err
}

func (p *Pipeline) trackKey(key lifecycle.Key) trackKey {
	return trackKey{detector: p.Detector, key: key}
}

func (p *Pipeline) run(ctx context.Context, req Request) (Result, error) {
	log := p.Log.WithValues("key", string(req.Key))
	rec, err := p.Store.Get(ctx, req.Key)
	if err != nil {
		if rerr := p.reportState(ctx, req, rec, err); rerr != nil {
			return Result{}, rerr
		}
		if !errors.Is(err, state.ErrUnclaimedLease) && rec.Version == "" && !rec.Exists() {
			return Result{}, err
		}
	}
	var out Result
	carried := false
	for i := 0; i < maxSteps; i++ {
		r := &run{p: p, req: req, log: log, rec: rec, out: &out}
		e, err := r.step(ctx, carried)
		if err != nil || e == endStop {
			return out, err
		}
		carried = carried || e == endCarried
		rec = r.rec
	}
	return out, fmt.Errorf("pipeline: %s: no stable state after %d steps", req.Key, maxSteps)
}

// end is how a step ended.
type end int

const (
	// endStop: the step waits for the world (or failed); Run returns.
	endStop end = iota
	// endLook: the step changed the Lease; Run looks again.
	endLook
	// endCarried: the step carried the decision out (or dropped it) and changed the Lease; Run
	// looks again only to learn when to look next.
	endCarried
)

// run is one step's working set: the Lease as the step leaves it (rec), and what the look found.
type run struct {
	p   *Pipeline
	req Request
	log logr.Logger
	rec state.Record
	out *Result
	look
}

// step looks at the Key (gather), plans and carries out one step.
func (r *run) step(ctx context.Context, carried bool) (end, error) {
	lk, err := r.p.gather(ctx, r.req, r.rec, carried)
	r.track(lk)
	if err != nil {
		if re := (*readError)(nil); errors.As(err, &re) {
			return r.forgeError(re.what, re.err)
		}
		return endStop, err
	}
	r.look = lk
	if lk.decided {
		if err := r.reportFindings(ctx, lk.decision.Findings); err != nil {
			return endStop, err
		}
	}
	st := plan(lk.s)
	r.log.V(1).Info("pipeline step", "step", st.String())
	switch {
	case lk.s.holdMerge:
		// The detector cannot confirm its Change now (Decision.HoldMerge): no merge, not even
		// another group member's, may stand on an earlier look of this Key.
		r.p.Confirm.forget(r.req.Key)
	case st == stepPoll || st == stepMerge:
		// The look agrees with the open proposal (before the merge, which confirms it).
		r.p.Confirm.agree(r.req.Key, r.req.Seen, r.rec.Version)
	}
	e, err := r.execute(ctx, st)
	switch {
	case err != nil, lk.s.holdMerge:
	case r.rec.Holder == "":
		r.p.Confirm.forget(r.req.Key)
	case (st == stepCommit || st == stepUpdate || st == stepReplay) && lk.decided && lk.decision.Withdraw == "":
		// What this look decided (its Change, or a queued one it still wants) is now in the
		// proposal.
		r.p.Confirm.agree(r.req.Key, r.req.Seen, r.rec.Version)
	}
	return e, err
}

// track records what the look saw of the Key's proposal, for the health metrics (what was
// read before a read failed, too).
func (r *run) track(lk look) {
	p := r.p
	if lk.read {
		if st := lk.status; st.State == lifecycle.ProposalOpen {
			tracked.proposalOpen(p.trackKey(r.rec.Key), st.Number, st.OpenedAt, r.req.Now, p.pollInterval())
		} else {
			tracked.proposalGone(p.trackKey(r.rec.Key))
		}
	}
	if !lk.s.holder {
		tracked.proposalGone(p.trackKey(r.req.Key))
	}
}

// execute carries out the step plan chose.
func (r *run) execute(ctx context.Context, st step) (end, error) {
	p, rec, now := r.p, r.rec, r.req.Now
	switch st {
	case stepKeepBag:
		return r.keepBag(ctx)
	case stepWait:
		r.log.V(1).Info("another replica is carrying out the pending decision; waiting", "replica", rec.PendingBy,
			"since", rec.PendingSince)
		r.out.RequeueAfter = p.waitInterval()
		return endStop, nil
	case stepDropPending:
		return r.dropPending(ctx)
	case stepTakePending:
		r.log.Info("replaying a pending decision left by a replica that is gone", "replica", rec.PendingBy, "since", rec.PendingSince)
		var err error
		r.rec, err = p.Store.TakePending(ctx, rec)
		return r.next(err)
	case stepDropQueued:
		return r.dropQueued(ctx)
	case stepReplaceQueued:
		return r.commit(ctx, r.superseding, rec.LastModified)
	case stepReplay:
		return r.apply(ctx, *r.pending)
	case stepMerged:
		return r.merged(ctx)
	case stepDeclined:
		return r.declined(ctx)
	case stepForgetHolder:
		r.log.Info("the proposal of the lease holder is gone; unlocking", "holder", rec.Holder)
		var err error
		r.rec, err = p.Store.Unlock(ctx, rec, rec.LastModified, rec.ClosedValues)
		return r.next(err)
	case stepForeignHead:
		return r.foreignHead(ctx)
	case stepUpdate:
		return r.commit(ctx, r.superseding, now)
	case stepRebuild:
		r.log.Info("rebuilding the proposal on its new base", "number", r.status.Number, "mergeableState", r.status.MergeableState)
		return r.commit(ctx, r.proposed, rec.LastModified)
	case stepMerge:
		return r.merge(ctx)
	case stepWithdraw:
		return r.withdraw(ctx)
	case stepPoll:
		if r.s.holdMerge && r.s.autoMerge && r.s.mergeable == mergeClean {
			r.log.Info("merge held by the detector", "why", r.decision.HoldMerge)
		}
		r.out.RequeueAfter = minPositive(p.pollInterval(), r.decision.RequeueAfter)
		return endStop, nil
	case stepCommit:
		return r.commit(ctx, *r.decision.Change, now)
	case stepIdle:
		r.out.RequeueAfter = r.decision.RequeueAfter
		return endStop, nil
	}
	return endStop, fmt.Errorf("pipeline: unknown step %v", st)
}

// keepBag writes the detector's new Bag; Run looks again on the newer Lease.
func (r *run) keepBag(ctx context.Context) (end, error) {
	var err error
	if r.rec, err = r.p.Store.SetBag(ctx, r.rec, r.decision.Bag); err != nil {
		if errors.Is(err, state.ErrBag) {
			return endStop, fmt.Errorf("detector %s: %w", r.p.Detector, err)
		}
		return r.conflictOr(err)
	}
	return endLook, nil
}

// dropPending reports the pending decision Kustos cannot read, clears it and decides afresh.
func (r *run) dropPending(ctx context.Context) (end, error) {
	p, rec := r.p, r.rec
	metrics.InvalidInput.WithLabelValues(p.Detector, "state_lease").Inc()
	msg := fmt.Sprintf("state lease %s holds a pending decision Kustos cannot read; it is dropped and the target decided afresh", rec.LeaseName())
	r.log.Error(errors.New("unreadable pending decision"), msg)
	if err := r.notifyWarning(ctx, ReasonInvalidState, msg, "pending|"+rec.LeaseName()+"|"+rec.Version); err != nil {
		return endStop, err
	}
	var err error
	r.rec, err = p.Store.ClearPending(ctx, rec)
	return r.next(err)
}

// dropQueued drops the queued decision the detector withdrew: one Event, and the pending
// decision cleared.
func (r *run) dropQueued(ctx context.Context) (end, error) {
	p, rec, d := r.p, r.rec, r.decision
	if dq, ok := p.Proposals.(Dequeuer); ok && !r.req.Group.IsZero() {
		// First out of the group's proposal, if another member's push put it there: the pending
		// decision stays until then, so a failure here is tried again at the next look.
		n, err := dq.Dequeue(ctx, rec.Key, r.req.Group, d.Withdraw)
		switch {
		case errors.Is(err, lifecycle.ErrMergedBeforeWithdrawal):
			r.log.Info("the group's proposal carrying the queued change was merged before it could be taken out", "number", n, "why", d.Withdraw)
			if err := r.mergedBeforeWithdrawal(ctx, n); err != nil {
				return endStop, err
			}
			r.rec, err = p.Store.Unlock(ctx, rec, r.req.Now, "")
			return r.next(err)
		case errors.Is(err, lifecycle.ErrForeignCommit):
			// A person pushed onto the group's proposal: it is theirs now, and its Change with it.
			r.log.Info("the queued change is in a proposal left to people; dropped from Kustos's queue only", "number", n)
		case err != nil:
			return r.forgeError("taking the queued change out of its group's proposal", err)
		}
	}
	msg := fmt.Sprintf("The queued proposal %s is dropped: %s", describe(*r.pending), d.Withdraw)
	if err := r.notify(ctx, corev1.EventTypeNormal, ReasonWithdrawn, msg, "dequeued|"+string(rec.Key)+"|"+rec.PendingSince.UTC().Format(time.RFC3339Nano)); err != nil {
		return endStop, err
	}
	tracked.notQueued(p.trackKey(rec.Key))
	r.log.Info("queued proposal dropped", "why", d.Withdraw)
	var err error
	r.rec, err = p.Store.ClearPending(ctx, rec)
	return r.carriedOut(err)
}

// commit records c as the pending decision (the commit point: a conflict means someone else
// decided first, and nothing is carried out), then carries it out. lastModified is the
// decision time recorded (a rebuild keeps the cooldown where it was).
func (r *run) commit(ctx context.Context, c lifecycle.Change, lastModified time.Time) (end, error) {
	pending, err := json.Marshal(c)
	if err != nil {
		return endStop, fmt.Errorf("encoding decision: %w", err)
	}
	if r.rec, err = r.p.Store.MarkModified(ctx, r.rec, lastModified, string(pending)); err != nil {
		return r.conflictOr(err)
	}
	if r.out.Committed == nil && lastModified.Equal(r.req.Now) {
		r.out.Committed = &c
	}
	return r.apply(ctx, c)
}

// apply carries out the pending decision c and records what came of it.
func (r *run) apply(ctx context.Context, c lifecycle.Change) (end, error) {
	p := r.p
	decidedAt := r.rec.LastModified
	opts := r.req.Options
	opts.Head = r.rec.Head
	opts.Open = r.rec.Holder != ""
	opts.Queued = r.rec.Queued != ""
	opts.Group = r.req.Group
	progress := &progress{r: r}
	opts.Progress = progress
	out, err := p.Actuator.Apply(ctx, c, decidedAt, opts)
	if progress.err != nil {
		// A step's progress could not be recorded: nothing after it was done. A conflict is
		// someone else's write (look again soon); anything else goes with backoff.
		return r.conflictOr(progress.err)
	}
	var queued *lifecycle.QueuedError
	if errors.As(err, &queued) {
		return r.queued(ctx, c, queued)
	}
	tracked.notQueued(p.trackKey(c.Key))
	if errors.Is(err, lifecycle.ErrProposalClosed) {
		// A human closed the proposal of this decision while it waited (it reached the forge
		// before a crash, then queued): declined, never proposed again.
		return r.declined(ctx)
	}
	if err != nil {
		if reason, ok := findingReason(err); ok {
			return r.cannotCarry(ctx, c, decidedAt, reason, err)
		}
		return r.forgeError("carrying out the change", err)
	}
	if out.Proposal == nil {
		// Carried out at once (observe, direct).
		if out.Applied && p.Vocab.Applied != "" {
			msg := fmt.Sprintf("Applied %s", describe(c))
			if err := r.notify(ctx, corev1.EventTypeNormal, p.Vocab.Applied, msg, "applied|"+string(c.Key)+"|"+decidedAt.UTC().Format(time.RFC3339Nano)); err != nil {
				return endStop, err
			}
		}
		// Done: look once more, so that the detector says when to look again (its cooldown).
		r.rec, err = p.Store.ClearPending(ctx, r.rec)
		return r.carriedOut(err)
	}
	return r.proposedAs(ctx, c, *out.Proposal)
}

// cannotCarry handles a Change no actuator can carry (reason says why): say why, show it in
// observer form, and forget the pending decision; the detector goes on (the cooldown started
// with the decision).
func (r *run) cannotCarry(ctx context.Context, c lifecycle.Change, decidedAt time.Time, reason string, cause error) (end, error) {
	p := r.p
	r.log.Info("change cannot be carried out", "reason", reason, "error", cause.Error())
	switch reason {
	case ReasonDeleteNotAllowed:
		// A detector wants something gone that the operator did not let it delete:
		// visible on a dashboard, not only in Events.
		metrics.InvalidInput.WithLabelValues(p.Detector, "delete_not_allowed").Inc()
	case ReasonPauseNotAllowed:
		metrics.InvalidInput.WithLabelValues(p.Detector, "pause_not_allowed").Inc()
	case ReasonOutsideNamespace:
		metrics.InvalidInput.WithLabelValues(p.Detector, "helm_release").Inc()
	}
	if werr := r.notifyWarning(ctx, reason, cause.Error(), reason+"|"+string(c.Key)+"|"+cause.Error()); werr != nil {
		return endStop, werr
	}
	if rerr := p.Reporter.Record(ctx, c, decidedAt); rerr != nil {
		return endStop, rerr
	}
	// Done for now: the next decision comes when the detector asks (its cooldown started
	// with this decision), never in this Run, which would report the same finding again.
	var err error
	r.rec, err = p.Store.ClearPending(ctx, r.rec)
	return r.carriedOut(err)
}

// proposedAs records the proposal res that carries c: an Event, then the lock.
func (r *run) proposedAs(ctx context.Context, c lifecycle.Change, res lifecycle.Proposal) (end, error) {
	p := r.p
	if res.AlreadyInBase {
		// A merged PR waiting for Argo CD or Flux: the change is done.
		r.log.Info("the base branch already holds the change; waiting for the GitOps tool to sync")
		var err error
		r.rec, err = p.Store.ClearPending(ctx, r.rec)
		return r.carriedOut(err)
	}
	proposed, err := json.Marshal(c)
	if err != nil {
		return endStop, fmt.Errorf("encoding proposal: %w", err)
	}
	// The Event first (its name is deterministic, so a replay writes it once), then the lock.
	msg := fmt.Sprintf("Pull request #%d proposes %s: %s", res.Number, describe(c), res.URL)
	if err := r.notify(ctx, corev1.EventTypeNormal, p.Vocab.Proposed, msg,
		fmt.Sprintf("proposed|%s|%d|%s", c.Key, res.Number, describe(c))); err != nil {
		if namespaceGone(err) {
			return r.orphaned(ctx, res.Number, err)
		}
		return endStop, err
	}
	if r.rec, err = p.Store.Lock(ctx, r.rec, state.HolderOf(res.Number), string(proposed), res.HeadSHA); err != nil {
		if apierrors.IsNotFound(err) {
			return r.orphaned(ctx, res.Number, err)
		}
		return r.conflictOr(err)
	}
	tracked.proposalOpen(p.trackKey(c.Key), res.Number, time.Time{}, r.req.Now, p.pollInterval())
	switch {
	case res.Created:
		metrics.PRs.WithLabelValues(p.Detector, "opened").Inc()
	case res.Committed || res.Edited:
		metrics.PRs.WithLabelValues(p.Detector, "updated").Inc()
	}
	r.log.Info("pull request proposed", "number", res.Number, "url", res.URL, "created", res.Created, "committed", res.Committed)
	r.out.RequeueAfter = p.pollInterval()
	return endStop, nil
}

// queued keeps the pending decision waiting for room (the budget) or for its group's window:
// one ProposalQueued Event per decision and reason (a group's gathering is by design and says
// nothing), the reason in the Lease for `kustos status`, and a look again when it may go.
func (r *run) queued(ctx context.Context, c lifecycle.Change, q *lifecycle.QueuedError) (end, error) {
	p := r.p
	tracked.proposalQueued(p.trackKey(c.Key), r.req.Now)
	r.log.V(1).Info("proposal waits", "reason", q.Reason, "message", q.Message, "until", q.Until)
	why := q.Reason + ": " + q.Message
	switch {
	case q.Failed && r.rec.Queued == why:
		// Reported at an earlier look: the Lease records this failure as the reason it waits.
	case q.Failed:
		if err := r.held(ctx, c, q); err != nil {
			return endStop, err
		}
	case q.Reason != lifecycle.QueuedGathering:
		msg := fmt.Sprintf("The proposal %s waits: %s", describe(c), q.Message)
		if q.Reason == lifecycle.QueuedBackup || q.Reason == lifecycle.QueuedSubmission {
			// Not a proposal's turn: what must come before the Change (a removal gate) runs.
			msg = fmt.Sprintf("%s waits for its %s: %s", upperFirst(describe(c)), q.Reason, q.Message)
		}
		id := fmt.Sprintf("queued|%s|%s|%s", c.Key, q.Reason, r.rec.PendingSince.UTC().Format(time.RFC3339Nano))
		if err := r.notify(ctx, corev1.EventTypeNormal, ReasonQueued, msg, id); err != nil {
			return endStop, err
		}
	}
	// The reason in the Lease, for `kustos status` and for the next look (requeue).
	if r.rec.Queued != why {
		var err error
		if r.rec, err = p.Store.SetQueued(ctx, r.rec, why); err != nil {
			return r.conflictOr(err)
		}
	}
	d := q.Until.Sub(r.req.Now)
	if d < time.Second {
		d = time.Second
	}
	r.out.RequeueAfter = minPositive(d, r.decision.RequeueAfter)
	return endStop, nil
}

// progress is the Key's record of the steps before its Change, as the actuator sees it
// (lifecycle.Progress): writes go through the step's record, keeping its version chain.
type progress struct {
	r   *run
	err error
}

var _ lifecycle.Progress = (*progress)(nil)

func (p *progress) Step(name string) string { return p.r.rec.Steps[name] }

func (p *progress) SetStep(ctx context.Context, name, value string) error {
	rec, err := p.r.p.Store.SetStep(ctx, p.r.rec, name, value)
	if err != nil {
		p.err = err
		return err
	}
	p.r.rec = rec
	return nil
}

// held reports a Change held because what must come before it failed (a removal gate's
// backup or submission): one Warning Event and one notice to the owner per failed attempt.
func (r *run) held(ctx context.Context, c lifecycle.Change, q *lifecycle.QueuedError) error {
	msg := fmt.Sprintf("Kustos holds %s: %s; it tries again after %s", describe(c), q.Message, q.Until.UTC().Format(time.RFC3339))
	id := fmt.Sprintf("held|%s|%s|%s", c.Key, q.Reason, q.Attempt)
	r.log.Info("change held: what must come before it failed", "reason", q.Reason, "attempt", q.Attempt, "message", q.Message, "until", q.Until)
	if err := r.notifyWarning(ctx, ReasonRemovalHeld, msg, id); err != nil {
		return err
	}
	// An error is returned: the look is tried again with backoff and the Event is not written
	// twice.
	return r.tellOwner(ctx, "removal-held|"+id, NoticeHeld, msg, c.Target, func(lifecycle.Target) string {
		return fmt.Sprintf("%s %s was not removed yet: its %s failed", c.Target.Kind, c.Target.Name, q.Reason)
	})
}

// tellOwner sends the owner the Request names (HeldNotice) a notice of kind about target, once
// per id in this process; nothing when the Request names no owner or there is no Notifier.
// subject is given the notice's target (the Request's, or target when it names none).
func (r *run) tellOwner(ctx context.Context, id, kind, text string, target lifecycle.Target, subject func(lifecycle.Target) string) error {
	p := r.p
	if r.req.HeldNotice == nil || p.Notifier == nil {
		return nil
	}
	n := *r.req.HeldNotice
	n.ID, n.Kind, n.Text, n.At = id, kind, text, r.req.Now
	if n.Target.Name == "" {
		n.Target = target
	}
	n.Subject = subject(n.Target)
	if p.SentNotices != nil {
		if _, sent := p.SentNotices.Get(n.ID); sent {
			return nil
		}
	}
	if err := p.Notifier.Send(ctx, n); err != nil {
		return fmt.Errorf("sending %s about %s: %w", n.Kind, n.Target, err)
	}
	if p.SentNotices != nil {
		p.SentNotices.Add(n.ID, struct{}{})
	}
	return nil
}

// merged unlocks the Lease after the proposal was merged (by Kustos or a human); last-modified
// starts the cooldown and the memory of a declined proposal is forgotten.
func (r *run) merged(ctx context.Context) (end, error) {
	if r.rec.Steps[stepWithdrawal] == withdrawalOf(r.rec) {
		// A withdrawal of this proposal was under way (a crash, or a failure, came between it
		// and its end): whether the merge took the Change, or came after the withdrawal took
		// it out of a group's proposal, is what the withdrawal, asked again, finds.
		n, _ := state.HolderNumber(r.rec.Holder)
		return r.finishWithdrawal(ctx, n, r.decision.Withdraw)
	}
	return r.unlockMerged(ctx)
}

// unlockMerged reports the merge and unlocks the Lease as merged.
func (r *run) unlockMerged(ctx context.Context) (end, error) {
	p, rec := r.p, r.rec
	n, _ := state.HolderNumber(rec.Holder)
	msg := fmt.Sprintf("Pull request #%d was merged", n)
	if p.Vocab.MergedNote != "" {
		msg += "; " + p.Vocab.MergedNote
	}
	if err := r.notify(ctx, corev1.EventTypeNormal, p.Vocab.Merged, msg, fmt.Sprintf("merged|%s|%d", rec.Key, n)); err != nil {
		return endStop, err
	}
	var err error
	if r.rec, err = p.Store.Unlock(ctx, rec, r.req.Now, ""); err != nil {
		return r.conflictOr(err)
	}
	metrics.PRs.WithLabelValues(p.Detector, "merged").Inc()
	r.log.Info("pull request merged", "number", n)
	if r.proposed.Key != "" {
		c := r.proposed
		r.out.Merged = &c
	}
	// Ask the detector again: what follows a merge is its to say (a cooldown until the next
	// look, a message to the owner that the environment goes).
	return endLook, nil
}

// mergedBeforeWithdrawal reports that proposal number was merged while Kustos withdrew its
// Change: a Warning Event and, when the Request names the owner, a notice, each once.
func (r *run) mergedBeforeWithdrawal(ctx context.Context, number int) error {
	what := r.req.Target.String()
	if r.proposed.Key != "" {
		what = describe(r.proposed)
	}
	msg := fmt.Sprintf("Pull request #%d was merged before Kustos could withdraw it: %s goes ahead", number, what)
	if why := strings.TrimSuffix(r.decision.Withdraw, "."); why != "" {
		msg = fmt.Sprintf("Pull request #%d was merged before Kustos could withdraw it (%s): %s goes ahead", number, why, what)
	}
	id := fmt.Sprintf("merged-before-withdrawal|%s|%d", r.rec.Key, number)
	r.log.Info("change merged before its withdrawal", "number", number, "why", r.decision.Withdraw)
	if err := r.notifyWarning(ctx, ReasonMergedBeforeWithdrawal, msg, id); err != nil {
		return err
	}
	// An error is returned: the merge is not recorded, and the next look, finding it merged
	// while the detector still withdraws, sends it again (the Event is not written twice).
	return r.tellOwner(ctx, id, NoticeMergedBeforeWithdrawal, msg, r.req.Target, func(t lifecycle.Target) string {
		return fmt.Sprintf("%s %s: the change went ahead, its pull request was merged before Kustos could withdraw it", t.Kind, t.Name)
	})
}

// declined unlocks the Lease after a human closed the proposal and remembers the largest
// Change it carried (the pending one, when an update was under way).
func (r *run) declined(ctx context.Context) (end, error) {
	p, rec := r.p, r.rec
	n, ok := state.HolderNumber(rec.Holder)
	if !ok && r.pending != nil {
		n, _, _ = p.Proposals.ClosedSince(ctx, *r.pending, rec.PendingSince)
	}
	if err := r.notify(ctx, corev1.EventTypeNormal, p.Vocab.Declined,
		declinedMessage(n, p.Vocab.DeclinedNote),
		fmt.Sprintf("declined|%s|%d", rec.Key, n)); err != nil {
		return endStop, err
	}
	closed := rec.Proposed
	if rec.Pending != "" && r.pending != nil {
		closed = rec.Pending
	}
	if closed == "" {
		closed = "{}"
	}
	var err error
	if r.rec, err = p.Store.Unlock(ctx, rec, r.req.Now, closed); err != nil {
		return r.conflictOr(err)
	}
	metrics.PRs.WithLabelValues(p.Detector, "declined").Inc()
	r.log.Info("pull request closed by a human", "number", n)
	return endLook, nil // the detector decides again, knowing it was declined (View.Declined)
}

// declinedMessage is the Declined Event's message: the closed pull request and what happens
// now, as the detector's vocabulary says it.
func declinedMessage(number int, note string) string {
	msg := fmt.Sprintf("Pull request #%d was closed without merging", number)
	if note != "" {
		msg += "; " + note
	}
	return msg
}

// stepWithdrawal is the Lease's Steps entry of a withdrawal under way: withdrawalOf the record,
// written before the forge is asked, so that a look that finds the proposal merged (the
// withdrawal's own answer, or the next look after a crash) knows the merge came first.
const stepWithdrawal = "withdrawal"

// withdrawalOf names what a withdrawal takes back: the proposal held and the decision it carries
// (a later decision, even in the same group's proposal, is not the one withdrawn).
func withdrawalOf(rec state.Record) string {
	return rec.Holder + "@" + rec.LastModified.UTC().Format(time.RFC3339Nano)
}

// withdraw closes the holder's proposal, which the detector no longer wants, with a comment
// saying why, then unlocks without remembering it as declined (nobody declined it: the change
// lost its reason) and without forgetting an earlier human decline (Lock keeps it on purpose). Closing first: a crash before the unlock finds the proposal closed, which
// plan sends here again while the detector still withdraws (closing again does nothing), so
// the Event and the unlock happen once and no human is said to have declined it. The Lease
// records the withdrawal before the forge is asked: a look that then finds the proposal merged
// asks the withdrawal again whether the merge took the Change (merged) or came after it was
// taken out (withdrawn).
func (r *run) withdraw(ctx context.Context) (end, error) {
	p, rec := r.p, r.rec
	n, _ := state.HolderNumber(rec.Holder)
	why := r.decision.Withdraw
	if rec.Steps[stepWithdrawal] != withdrawalOf(rec) {
		var err error
		if rec, err = p.Store.SetStep(ctx, rec, stepWithdrawal, withdrawalOf(rec)); err != nil {
			return r.conflictOr(err)
		}
		r.rec = rec
	}
	return r.finishWithdrawal(ctx, n, why)
}

// finishWithdrawal asks the forge to withdraw the holder's Change from proposal n (again, after
// a crash: it is idempotent) and records what came of it: withdrawn, or merged first.
func (r *run) finishWithdrawal(ctx context.Context, n int, why string) (end, error) {
	p, rec := r.p, r.rec
	if err := p.Proposals.Withdraw(ctx, rec.Key, n, why, r.req.Group); errors.Is(err, lifecycle.ErrMergedBeforeWithdrawal) {
		// Merged first (the forge's auto-merge, another replica): not withdrawn. Reported as it
		// is, and the Lease records a merge.
		r.log.Info("the proposal was merged before it could be withdrawn", "number", n, "why", why)
		if err := r.mergedBeforeWithdrawal(ctx, n); err != nil {
			return endStop, err
		}
		return r.unlockMerged(ctx)
	} else if errors.Is(err, lifecycle.ErrForeignCommit) {
		// A person pushed onto it since the look read it (or the look read it from a cache):
		// it is not closed, and the next look, reading it afresh, reports the push and leaves
		// it to people.
		r.log.Info("the proposal was not withdrawn: its head is a commit Kustos did not write", "number", n, "error", err.Error())
		r.out.RequeueAfter = p.pollInterval()
		return endStop, nil
	} else if err != nil {
		return r.forgeError("closing the proposal", err)
	}
	if err := r.notify(ctx, corev1.EventTypeNormal, ReasonWithdrawn,
		fmt.Sprintf("Pull request #%d was closed by Kustos: %s", n, why), fmt.Sprintf("withdrawn|%s|%d", rec.Key, n)); err != nil {
		return endStop, err
	}
	var err error
	if r.rec, err = p.Store.Unlock(ctx, rec, rec.LastModified, rec.ClosedValues); err != nil {
		return r.conflictOr(err)
	}
	metrics.PRs.WithLabelValues(p.Detector, "withdrawn").Inc()
	r.log.Info("pull request withdrawn", "number", n, "why", why)
	return endLook, nil
}

// foreignHead reports, once per head, that someone else pushed to the proposal's branch. Kustos
// no longer merges, updates or rebuilds it; people decide. A pending update is dropped.
func (r *run) foreignHead(ctx context.Context) (end, error) {
	st := r.status
	msg := fmt.Sprintf("Pull request #%d has a commit Kustos did not write (head %s, Kustos wrote %s); Kustos will neither merge nor update it and leaves it to people",
		st.Number, short(st.HeadSHA), short(r.rec.Head))
	if err := r.notifyWarning(ctx, ReasonForeignCommit, msg, "foreign|"+string(r.rec.Key)+"|"+st.HeadSHA); err != nil {
		return endStop, err
	}
	if r.rec.Pending != "" {
		var err error
		if r.rec, err = r.p.Store.ClearPending(ctx, r.rec); err != nil {
			return r.conflictOr(err)
		}
	}
	r.out.RequeueAfter = r.p.pollInterval()
	return endStop, nil
}

// merge asks the forge to merge Kustos's head commit.
func (r *run) merge(ctx context.Context) (end, error) {
	p := r.p
	if p.LiveRecord != nil {
		live, err := p.LiveRecord(ctx, r.rec.Key)
		if err != nil {
			return endStop, fmt.Errorf("reading the lease before a merge: %w", err)
		}
		if live.Version != r.rec.Version {
			// The look decided on a Lease behind the API server's: decide again on this one
			// (an owner's keep or extension there withdraws instead) before merging anything.
			r.log.V(1).Info("the lease moved since it was read; looking again before the merge", "read", r.rec.Version, "live", live.Version)
			r.rec = live
			return endLook, nil
		}
	}
	merged, retry, err := p.Proposals.Merge(ctx, r.rec.Key, r.status)
	switch {
	case errors.Is(err, lifecycle.ErrProposalClosed):
		return r.declined(ctx)
	case errors.Is(err, lifecycle.ErrNoProposal):
		r.rec, err = p.Store.Unlock(ctx, r.rec, r.rec.LastModified, r.rec.ClosedValues)
		return r.next(err)
	case errors.Is(err, lifecycle.ErrProposalDirty):
		return r.commit(ctx, r.proposed, r.rec.LastModified)
	case err != nil:
		return r.forgeError("merging the proposal", err)
	case merged:
		return r.merged(ctx)
	}
	r.out.RequeueAfter = minPositive(minPositive(p.pollInterval(), retry), r.decision.RequeueAfter)
	return endStop, nil
}

// orphaned closes the proposal number just opened for a target whose namespace went while it
// was being opened: the Event about it was refused (the namespace is gone or terminating), or
// the Lease that would name it was deleted by the sweep of that namespace. No Lease would ever
// name the proposal, so nothing else would close it.
func (r *run) orphaned(ctx context.Context, number int, cause error) (end, error) {
	r.log.Info("the target's namespace went while its pull request was opened; closing it", "number", number, "cause", cause.Error())
	// Merged first, or a person pushed onto it (left to people): nothing more to do.
	if err := r.p.Proposals.Withdraw(ctx, r.req.Key, number, "the namespace of its target no longer exists", r.req.Group); err != nil &&
		!errors.Is(err, lifecycle.ErrMergedBeforeWithdrawal) && !errors.Is(err, lifecycle.ErrForeignCommit) {
		return r.forgeError("closing the pull request of a namespace gone", err)
	}
	return endStop, nil
}

// namespaceGone: the API server refused a write in the target's namespace because the
// namespace is gone or being deleted.
func namespaceGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// next ends a step that wrote the Lease: on success Run looks again; a conflict retries soon.
func (r *run) next(err error) (end, error) {
	if err != nil {
		return r.conflictOr(err)
	}
	return endLook, nil
}

// carriedOut ends a step that carried the decision out (or dropped it) and cleared it from the
// Lease: on success Run looks again, only to learn when to look next; a conflict retries soon.
func (r *run) carriedOut(err error) (end, error) {
	if err != nil {
		return r.conflictOr(err)
	}
	return endCarried, nil
}

// conflictOr turns a Lease write conflict into a quick retry (someone else wrote first; decide
// again on the newer Lease) and passes other errors on.
func (r *run) conflictOr(err error) (end, error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		r.out.RequeueAfter = conflictRetry
		return endStop, nil
	}
	return endStop, err
}

// forgeError keeps the pending decision and asks to be called again: when the rate limit
// resets, or with the controller's backoff.
func (r *run) forgeError(what string, err error) (end, error) {
	if at, ok := lifecycle.RetryAt(err); ok {
		d := at.Sub(r.req.Now)
		if d < time.Second {
			d = time.Second
		}
		// A rate limit, or a write conflict on a group's Lease: the error says which.
		r.log.Info(what+" failed; trying again later", "error", err.Error(), "retryAfter", d.String())
		r.out.RequeueAfter = d
		return endStop, nil
	}
	return endStop, fmt.Errorf("%s: %w", what, err)
}

func (r *run) reportFindings(ctx context.Context, fs []lifecycle.Finding) error {
	for _, f := range fs {
		ref := r.ref()
		if f.Regarding != nil {
			ref = objectRef(*f.Regarding, f.UID)
		}
		if err := r.p.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, f.Reason, f.Message, f.ID, r.req.Now); err != nil {
			return err
		}
		if f.Notice != nil && r.p.Notifier != nil {
			if r.p.SentNotices != nil {
				if _, sent := r.p.SentNotices.Get(f.Notice.ID); sent {
					continue
				}
			}
			if err := r.p.Notifier.Send(ctx, *f.Notice); err != nil {
				// The detector's state is not written: the next look sends it again.
				return fmt.Errorf("sending %s about %s: %w", f.Notice.Kind, f.Notice.Target, err)
			}
			if r.p.SentNotices != nil {
				r.p.SentNotices.Add(f.Notice.ID, struct{}{})
			}
		}
	}
	return nil
}

func (r *run) notify(ctx context.Context, eventType, reason, message, id string) error {
	return r.p.Reporter.Notify(ctx, r.ref(), eventType, reason, message, id, r.req.Now)
}

func (r *run) notifyWarning(ctx context.Context, reason, message, id string) error {
	return r.notify(ctx, corev1.EventTypeWarning, reason, message, id)
}

func (r *run) ref() corev1.ObjectReference { return objectRef(r.req.Target, r.req.UID) }

// reportState reports a state Lease the pipeline cannot use as it is.
func (p *Pipeline) reportState(ctx context.Context, req Request, rec state.Record, err error) error {
	metrics.InvalidInput.WithLabelValues(p.Detector, "state_lease").Inc()
	p.Log.Error(err, "state lease cannot be used as it is", "key", string(req.Key))
	r := &run{p: p, req: req, rec: rec, out: &Result{}}
	return r.notifyWarning(ctx, ReasonInvalidState, err.Error(), "state|"+string(req.Key)+"|"+err.Error())
}

func objectRef(t lifecycle.Target, uid string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: t.APIVersion(), Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, UID: types.UID(uid)}
}

func (p *Pipeline) pollInterval() time.Duration {
	if p.PollInterval <= 0 {
		return time.Minute
	}
	return p.PollInterval
}

func (p *Pipeline) waitInterval() time.Duration {
	if p.WaitInterval <= 0 {
		return 5 * time.Second
	}
	return p.WaitInterval
}

func proposalOf(s lifecycle.ProposalStatus) proposalState {
	switch s {
	case lifecycle.ProposalOpen:
		return proposalOpen
	case lifecycle.ProposalMerged:
		return proposalMerged
	case lifecycle.ProposalClosedByHuman:
		return proposalClosed
	}
	return proposalGone
}

func mergeabilityOf(st lifecycle.ProposalState) mergeability {
	switch {
	case st.MergeableState == "dirty" || (st.Mergeable != nil && !*st.Mergeable):
		return mergeDirty
	case st.Mergeable == nil:
		return mergeWaiting
	case st.MergeableState == "behind":
		return mergeBehind
	case st.MergeableState == "clean":
		return mergeClean
	}
	return mergeWaiting
}

// findingReason says which Warning an Actuator error is, when no retry could fix it.
func findingReason(err error) (string, bool) {
	switch {
	case errors.Is(err, lifecycle.ErrSourceNotFound):
		return ReasonSourceNotFound, true
	case errors.Is(err, lifecycle.ErrSourceAmbiguous):
		return ReasonSourceAmbiguous, true
	case errors.Is(err, lifecycle.ErrSourceNotEditable):
		return ReasonSourceNotEditable, true
	case errors.Is(err, lifecycle.ErrSourceConflict):
		return ReasonSourceConflict, true
	case errors.Is(err, lifecycle.ErrManagedByGitOps):
		return ReasonManagedByGitOps, true
	case errors.Is(err, lifecycle.ErrDeleteNotAllowed):
		return ReasonDeleteNotAllowed, true
	case errors.Is(err, lifecycle.ErrPauseNotAllowed):
		return ReasonPauseNotAllowed, true
	case errors.Is(err, lifecycle.ErrOutsideNamespace):
		return ReasonOutsideNamespace, true
	case errors.Is(err, lifecycle.ErrForeignCommit):
		return ReasonForeignCommit, true
	case errors.Is(err, lifecycle.ErrProposalBlocked), errors.Is(err, lifecycle.ErrInvalidChange):
		return ReasonProposeFailed, true
	}
	return "", false
}

// describe is a Change in a few words: "requests.cpu → 12, requests.memory → 24Gi".
func describe(c lifecycle.Change) string {
	switch c.Edit.Op {
	case lifecycle.EditScaleToZero:
		return "scaling " + c.Target.String() + " to zero"
	case lifecycle.EditDelete:
		return "deleting " + c.Target.String()
	case lifecycle.EditSendCloudEvent:
		if e := c.Edit.CloudEvent; e != nil {
			return "sending CloudEvent " + e.ID + " to " + e.SinkForDisplay()
		}
		return "sending a CloudEvent"
	case lifecycle.EditSetAnnotations:
		keys := make([]string, 0, len(c.Edit.Annotations))
		for k, v := range c.Edit.Annotations {
			keys = append(keys, k+" → "+v)
		}
		sort.Strings(keys)
		return strings.Join(keys, ", ")
	}
	parts := make([]string, 0, len(c.Edit.Fields))
	for _, f := range c.Edit.Fields {
		name := strings.Join(f.Path, ".")
		if len(f.Path) > 0 {
			name = f.Path[len(f.Path)-1]
		}
		parts = append(parts, name+" → "+f.To)
	}
	return strings.Join(parts, ", ")
}

func minPositive(a, b time.Duration) time.Duration {
	if b > 0 && (a <= 0 || b < a) {
		return b
	}
	return a
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "(none)"
	}
	return sha
}

// The request vocabulary lives in lifecycle, so detectors need not import the pipeline.
type (
	Vocabulary = lifecycle.Vocabulary
	Request    = lifecycle.Request
	View       = lifecycle.View
	Decision   = lifecycle.Decision
	Result     = lifecycle.Result
)

// upperFirst starts s with a capital letter (describe's words begin a sentence).
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
