package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Writer is the part of *pr.Writer the Actuator uses.
type Writer interface {
	Propose(ctx context.Context, c lifecycle.Change, opts lifecycle.ProposeOptions) (pr.Result, error)
	ProposeGroup(ctx context.Context, g lifecycle.Group, members []pr.Member, head string) (pr.GroupResult, error)
	StatusOf(ctx context.Context, key lifecycle.Key, number int) (lifecycle.ProposalState, error)
	MergeIfReady(ctx context.Context, key lifecycle.Key, st lifecycle.ProposalState, allowed bool) (bool, time.Duration, error)
	ClosedSince(ctx context.Context, c lifecycle.Change, since time.Time) (int, bool, error)
	OwnCommit(ctx context.Context, key lifecycle.Key, sha string) (bool, error)
	CommitGroup(ctx context.Context, sha string) (lifecycle.Key, bool, error)
	CommitTargets(ctx context.Context, sha string) ([]lifecycle.Key, error)
}

// Confirmer says, before a merge, which of keys (the targets the commit to be merged changes)
// the API server has otherwise than the look that last agreed to its change read it, if any
// (*pipeline.Confirmations).
type Confirmer interface {
	Unconfirmed(ctx context.Context, keys []lifecycle.Key) (lifecycle.Key, error)
}

var _ Writer = (*pr.Writer)(nil)

var (
	_ Forge   = (*github.Client)(nil)
	_ Counter = (*github.Client)(nil)
)

// Forge closes and comments on pull requests (*github.Client).
type Forge interface {
	// ClosePR comments, then closes; a pull request already closed or merged is left alone.
	ClosePR(ctx context.Context, number int, comment string) error
	CommentPR(ctx context.Context, number int, comment string) error
}

// Leases reads the members' Leases and reads and writes the groups' (*state.Store over the API
// server: a group's Lease is written by every member in turn, and a cache a moment behind would
// make each write a conflict).
type Leases interface {
	Get(ctx context.Context, key lifecycle.Key) (state.Record, error)
	GetGroup(ctx context.Context, key lifecycle.Key) (state.GroupRecord, error)
	PutGroup(ctx context.Context, g state.GroupRecord, namespace string) (state.GroupRecord, error)
}

var _ Leases = (*state.Store)(nil)

// Actuator proposes Changes as pull requests, alone or in groups, within a Budget.
type Actuator struct {
	Writer Writer
	Forge  Forge
	Leases Leases
	// Budget limits new pull requests; nil: no limit.
	Budget *Budget
	// AfterPropose, a test hook, runs after a successful proposal and before the pipeline sees
	// it; its error is the proposal's (a crash before the Lease names the pull request).
	AfterPropose func(key lifecycle.Key, res pr.Result) error
	// StatusTTL is how long a pull request's status read for one member serves the others
	// (default 10 s).
	StatusTTL time.Duration
	// Confirm, when set, confirms every target of a pull request before it is merged: a group's
	// pull request is merged from one member's look, on the others' looks' decisions, each
	// made on its replica's caches. Nil: merged as the looks decided.
	Confirm Confirmer
	Now     func() time.Time
	Log     logr.Logger

	mu     sync.Mutex
	locks  map[lifecycle.Key]*sync.Mutex
	status map[int]cachedStatus
	// forgotten counts, per pull request, the times its cached status was dropped: a read that
	// began before a drop (a merge Kustos just made) must not put its older answer back.
	forgotten map[int]uint64
}

type cachedStatus struct {
	st lifecycle.ProposalState
	at time.Time
}

// errGroupConflict: the group's Lease changed under a write (another replica); the member
// tries again in a moment.
type errGroupConflict struct {
	err   error
	retry time.Time
}

func (e *errGroupConflict) Error() string              { return e.err.Error() }
func (e *errGroupConflict) Unwrap() error              { return e.err }
func (e *errGroupConflict) RetryAt() (time.Time, bool) { return e.retry, true }

// conflict makes a write conflict on the group's Lease a retry in a second; any other error
// stays as it is (the controller's backoff).
func (a *Actuator) conflict(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return &errGroupConflict{err, a.now().Add(time.Second)}
	}
	return err
}

func (a *Actuator) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// lock serialises the work on one group in this process (one writer of its Lease at a time;
// another replica's writes are caught by the Lease's resourceVersion).
func (a *Actuator) lock(key lifecycle.Key) func() {
	a.mu.Lock()
	if a.locks == nil {
		a.locks = map[lifecycle.Key]*sync.Mutex{}
	}
	l := a.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		a.locks[key] = l
	}
	a.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// prLock names the lock of pull request number: a withdrawal from it and a merge of it take it,
// so that in this process a merge never lands between a withdrawal's look and its push.
func prLock(number int) lifecycle.Key { return lifecycle.Key(fmt.Sprintf("#%d", number)) }

// Apply proposes c: on its own (the zero Group), or as a member of opts.Group.
func (a *Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if !opts.Group.IsZero() {
		return a.applyGrouped(ctx, c, opts)
	}
	if !opts.Open {
		ok, until, why, err := a.Budget.Admit(ctx, Ask{Key: c.Key, Urgency: lifecycle.UrgencyOf(c), Since: decidedAt})
		if err != nil {
			return lifecycle.Outcome{}, err
		}
		if !ok {
			return lifecycle.Outcome{}, &lifecycle.QueuedError{Reason: lifecycle.QueuedBudget, Message: why, Until: until}
		}
		// Its room is held until the pull request is open and the forge's count can see it.
		defer a.Budget.Settled(c.Key)
	}
	if opts.Queued {
		// It waited: a proposal of it opened before a crash may have been closed by a human
		// meanwhile, and must not be followed by a second one.
		if n, closed, err := a.Writer.ClosedSince(ctx, c, decidedAt); err != nil {
			return lifecycle.Outcome{}, err
		} else if closed {
			return lifecycle.Outcome{}, fmt.Errorf("%w: #%d", lifecycle.ErrProposalClosed, n)
		}
	}
	res, err := a.Writer.Propose(ctx, c, opts)
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	return a.outcome(c.Key, res)
}

func (a *Actuator) outcome(key lifecycle.Key, res pr.Result) (lifecycle.Outcome, error) {
	if a.AfterPropose != nil {
		if err := a.AfterPropose(key, res); err != nil {
			return lifecycle.Outcome{}, err
		}
	}
	a.forget(res.Number)
	return lifecycle.Outcome{Proposal: &lifecycle.Proposal{
		AlreadyInBase: res.AlreadyInBase, Number: res.Number, URL: res.URL, HeadSHA: res.HeadSHA,
		Created: res.Created, Committed: res.Committed, Edited: res.Edited,
	}}, nil
}

// applyGrouped joins c to its group and, once the group may propose, proposes every member.
func (a *Actuator) applyGrouped(ctx context.Context, c lifecycle.Change, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	g := opts.Group
	defer a.lock(g.Key)()
	now := a.now()
	rec, err := a.Leases.GetGroup(ctx, g.Key)
	if err != nil {
		if !errors.Is(err, state.ErrGroupLease) || !rec.Exists() {
			return lifecycle.Outcome{}, err
		}
		// A hand edit: its members join again as they come.
		a.Log.Error(err, "group lease cannot be read; its members join again", "group", string(g.Key))
	}
	hash := state.ChangeHash(c)
	m, member := rec.Members[c.Key]
	// A replay of a member whose Change is in the head of the open pull request: nothing to do.
	if rec.Holder != "" && member && m.In && !m.Leaving && m.Hash == hash && !opts.Open {
		if n, ok := state.HolderNumber(rec.Holder); ok {
			return lifecycle.Outcome{Proposal: &lifecycle.Proposal{Number: n, URL: rec.URL, HeadSHA: rec.Head}}, nil
		}
	}
	dirty := false
	if rec.Holder != "" {
		// A member joining (or changing in) the open pull request and a merge of it take turns
		// in this process, as a withdrawal and a merge do: a merge between the look below and
		// the push would merge the pull request without this member, whose push then lands on
		// a merged branch while its Lease says it is proposed (and, at the next look, merged).
		// The merge, pinned to the head it read, finds the new head and merges nothing.
		if n, ok := state.HolderNumber(rec.Holder); ok {
			defer a.lock(prLock(n))()
		}
		open, err := a.stillOpen(ctx, g.Key, rec)
		if err != nil {
			return lifecycle.Outcome{}, err
		}
		if !open {
			// Merged or closed: its members are done with it (their own Leases say how); the
			// group starts a new pull request with whoever waits.
			for k, mm := range rec.Members {
				if mm.In {
					delete(rec.Members, k)
				}
			}
			rec.Holder, rec.Head, rec.URL, rec.Gathering = "", "", "", time.Time{}
			m, member = rec.Members[c.Key]
			dirty = true
		}
	}
	if !member || m.Hash != hash || m.GitPath != opts.GitPath || m.Leaving {
		if !member && len(rec.Members) >= state.MaxGroupMembers {
			return lifecycle.Outcome{}, &lifecycle.QueuedError{Reason: lifecycle.QueuedGroupFull,
				Message: fmt.Sprintf("the pull request of %s carries %d targets, as many as one may; the next one takes it", g.Label, state.MaxGroupMembers),
				Until:   now.Add(a.statusTTL() * 6)}
		}
		joined := now
		if member {
			joined = m.Joined
		}
		rec.Members[c.Key] = state.GroupMember{Hash: hash, GitPath: opts.GitPath, Joined: joined, Urgency: lifecycle.UrgencyOf(c)}
		dirty = true
	}
	if rec.Holder == "" {
		if rec.Gathering.IsZero() {
			rec.Gathering, dirty = now, true
		}
		if q := a.mayOpen(ctx, g, rec, now); q != nil {
			if dirty {
				if _, err := a.Leases.PutGroup(ctx, rec, g.Namespace); err != nil {
					return lifecycle.Outcome{}, a.conflict(err)
				}
			}
			return lifecycle.Outcome{}, q
		}
		// The budget gave the group room: held until its pull request is open (see Apply).
		defer a.Budget.Settled(g.Key)
	}
	members, err := a.members(ctx, &rec, &pr.Member{Change: c, GitPath: opts.GitPath}, false)
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	res, err := a.Writer.ProposeGroup(ctx, g, members, rec.Head)
	if err != nil {
		if dirty {
			_, _ = a.Leases.PutGroup(ctx, rec, g.Namespace) // keep who joined; the proposal is tried again
		}
		if errors.Is(err, lifecycle.ErrForeignCommit) && res.Members[c.Key].AlreadyInBase {
			// A person took the group's pull request over, but this Change needs none: Git
			// holds nothing of it (a target only in the cluster, or a manifest gone already).
			// It goes on as any proposal's member Git has nothing of does.
			return lifecycle.Outcome{Proposal: &lifecycle.Proposal{AlreadyInBase: true}}, nil
		}
		if fh := (*pr.ForeignHeadError)(nil); errors.As(err, &fh) && res.Members[c.Key].Err == nil {
			// The group's pull request is the only one its Changes can be proposed in, and a
			// person took it over: the Change follows its fate, left to people (its recorded head
			// is HeadOfPeople, which no commit matches, so Kustos merges, updates and closes
			// nothing of it), instead of being dropped: merged, it is done; closed, declined.
			a.Log.Info("the group's pull request has a person's commit; the change waits on it, left to people", "number", fh.Number, "key", string(c.Key))
			return lifecycle.Outcome{Proposal: &lifecycle.Proposal{Number: fh.Number, URL: fh.URL, HeadSHA: lifecycle.HeadOfPeople}}, nil
		}
		return lifecycle.Outcome{}, err
	}
	a.record(&rec, res, members)
	if _, err := a.Leases.PutGroup(ctx, rec, g.Namespace); err != nil {
		// The pull request holds the members; the next member's look records it.
		return lifecycle.Outcome{}, a.conflict(err)
	}
	mine := res.Members[c.Key]
	switch {
	case mine.Err != nil:
		return lifecycle.Outcome{}, fmt.Errorf("pr: %s: %w", c.Key, mine.Err)
	case mine.AlreadyInBase || res.Number == 0:
		return lifecycle.Outcome{Proposal: &lifecycle.Proposal{AlreadyInBase: true}}, nil
	}
	return a.outcome(c.Key, res.Result)
}

// mayOpen says why a group without a pull request may not open one yet (nil: it may): it is
// gathering members, or the budget has no room.
func (a *Actuator) mayOpen(ctx context.Context, g lifecycle.Group, rec state.GroupRecord, now time.Time) error {
	waiting := 0
	urgency := lifecycle.UrgencyOther
	for _, m := range rec.Members {
		if !m.In {
			waiting++
			urgency = min(urgency, m.Urgency)
		}
	}
	end := rec.Gathering.Add(g.Window)
	if now.Before(end) && (g.Expect <= 0 || waiting < g.Expect) {
		return &lifecycle.QueuedError{Reason: lifecycle.QueuedGathering,
			Message: fmt.Sprintf("gathering the targets of %s until %s (%d so far)", g.Label, end.UTC().Format(time.RFC3339), waiting), Until: end}
	}
	ok, until, why, err := a.Budget.Admit(ctx, Ask{Key: g.Key, Urgency: urgency, Since: rec.Gathering})
	if err != nil {
		return err
	}
	if !ok {
		return &lifecycle.QueuedError{Reason: lifecycle.QueuedBudget, Message: why, Until: until}
	}
	return nil
}

// members reads each member's Change from its own Lease: its pending decision (the newest),
// else the Change its Lease holds in the group's pull request. A member whose Lease holds
// neither left (its decision was taken back, carried out, or swept) and is dropped. self, when
// set, is the member asking now, with its Change as it asks; onlyIn keeps the members in the
// pull request's head.
func (a *Actuator) members(ctx context.Context, rec *state.GroupRecord, self *pr.Member, onlyIn bool) ([]pr.Member, error) {
	out := []pr.Member{}
	for _, k := range rec.Keys() {
		if self != nil && k == self.Change.Key {
			out = append(out, *self)
			continue
		}
		if onlyIn && !rec.Members[k].In || rec.Members[k].Leaving {
			// Not in the head, or being taken out of it: a push for another member leaves a
			// withdrawn Change out even while its withdrawal waits to be tried again.
			continue
		}
		mr, err := a.Leases.Get(ctx, k)
		if err != nil && !mr.Exists() {
			return nil, err
		}
		raw := mr.Pending
		if raw == "" && rec.Holder != "" && mr.Holder == rec.Holder {
			raw = mr.Proposed
		}
		var mc lifecycle.Change
		if raw == "" || json.Unmarshal([]byte(raw), &mc) != nil || mc.Key != k {
			delete(rec.Members, k)
			continue
		}
		out = append(out, pr.Member{Change: mc, GitPath: rec.Members[k].GitPath})
	}
	return out, nil
}

// record writes what proposing the group did into its record: who is in the head, who is not
// (their own looks get their error or their "already done"), the pull request and its head.
func (a *Actuator) record(rec *state.GroupRecord, res pr.GroupResult, members []pr.Member) {
	for _, m := range members {
		k := m.Change.Key
		r := res.Members[k]
		if !r.Included {
			delete(rec.Members, k)
			continue
		}
		e := rec.Members[k]
		e.Hash, e.In = state.ChangeHash(m.Change), true
		rec.Members[k] = e
	}
	if res.Number != 0 {
		rec.Holder, rec.Head, rec.URL = state.HolderOf(res.Number), res.HeadSHA, res.URL
		rec.Gathering = time.Time{}
	}
}

// stillOpen reports whether the group's pull request is open.
func (a *Actuator) stillOpen(ctx context.Context, key lifecycle.Key, rec state.GroupRecord) (bool, error) {
	n, ok := state.HolderNumber(rec.Holder)
	if !ok {
		return false, nil
	}
	// Read afresh, not from the status cache: a member is about to be committed to this pull
	// request's branch, and one merged a moment ago must not get it (it would never reach the
	// base).
	a.forget(n)
	st, err := a.Status(ctx, key, n)
	if err != nil {
		return false, err
	}
	return st.State == lifecycle.ProposalOpen, nil
}

// Status reads pull request number, once per StatusTTL for all the members that ask (every
// time while GitHub computes its mergeability).
func (a *Actuator) Status(ctx context.Context, key lifecycle.Key, number int) (lifecycle.ProposalState, error) {
	now := a.now()
	a.mu.Lock()
	c, ok := a.status[number]
	a.mu.Unlock()
	if ok && now.Sub(c.at) < a.statusTTL() {
		return c.st, nil
	}
	a.mu.Lock()
	epoch := a.forgotten[number]
	a.mu.Unlock()
	st, err := a.Writer.StatusOf(ctx, key, number)
	if err != nil {
		return st, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.forgotten[number] != epoch {
		// Kustos changed the pull request (merged it) while this read was under way: the
		// answer may be from before; the next member reads it again.
		return st, nil
	}
	if st.State == lifecycle.ProposalOpen && st.Mergeable == nil {
		// GitHub is computing mergeability (after any move of the head or the base, so after
		// every merge into the base): the next read learns the answer and must reach GitHub,
		// or each open pull request waits a TTL after every merge.
		return st, nil
	}
	if a.status == nil {
		a.status = map[int]cachedStatus{}
	}
	if len(a.status) > 4096 {
		clear(a.status)
	}
	a.status[number] = cachedStatus{st: st, at: now}
	return st, nil
}

func (a *Actuator) statusTTL() time.Duration {
	if a.StatusTTL <= 0 {
		return 10 * time.Second
	}
	return a.StatusTTL
}

// forget drops the cached status of a pull request Kustos just changed.
func (a *Actuator) forget(number int) {
	a.mu.Lock()
	delete(a.status, number)
	if a.forgotten == nil {
		a.forgotten = map[int]uint64{}
	}
	if len(a.forgotten) > 4096 {
		// Bounded; a forgotten count lost only lets a read under way at this moment be cached.
		clear(a.forgotten)
	}
	a.forgotten[number]++
	a.mu.Unlock()
}

// ClosedSince reports a proposal of c's own branch closed since (a crash between opening it
// and recording it).
func (a *Actuator) ClosedSince(ctx context.Context, c lifecycle.Change, since time.Time) (int, bool, error) {
	return a.Writer.ClosedSince(ctx, c, since)
}

// confirmRetry is how soon a merge that waits for a target's look is tried again.
const confirmRetry = 2 * time.Second

// Merge merges the pull request st, pinned to its head. It waits for a withdrawal from, or a
// member joining, the same pull request in this process (which pushes a new head, so that the
// merge, pinned to the head it read, merges nothing); another replica's merge, or the forge's, Withdraw finds afterwards.
// With Confirm, it first confirms every target the head commit changes, and waits (merged false,
// a retry soon) while one is unconfirmed.
func (a *Actuator) Merge(ctx context.Context, key lifecycle.Key, st lifecycle.ProposalState) (bool, time.Duration, error) {
	defer a.lock(prLock(st.Number))()
	if a.Confirm != nil && st.State == lifecycle.ProposalOpen {
		keys, err := a.Writer.CommitTargets(ctx, st.HeadSHA)
		if err != nil {
			return false, 0, err
		}
		if len(keys) == 0 {
			keys = []lifecycle.Key{key} // a head whose trailers name none: at least the look's own
		}
		stale, err := a.Confirm.Unconfirmed(ctx, keys)
		if err != nil {
			return false, 0, fmt.Errorf("confirming the targets of pull request #%d before merging it: %w", st.Number, err)
		}
		if stale != "" {
			a.Log.Info("merge waits until the target's look has decided on what the API server has", "number", st.Number, "target", string(stale))
			return false, confirmRetry, nil
		}
	}
	merged, retry, err := a.Writer.MergeIfReady(ctx, key, st, true)
	if merged && st.State == lifecycle.ProposalOpen {
		// This call merged it (a group's other members find it merged): its room is free.
		a.forget(st.Number)
		a.Budget.Released()
	}
	return merged, retry, err
}

// OwnCommit reports whether sha is a commit Kustos wrote for key (alone or in a group), or one it
// wrote for key's group without key while key is being taken out of it: a withdrawal that
// pushed, then failed before its Lease learnt of it, is tried again on that head, which must
// not be taken for a human's.
func (a *Actuator) OwnCommit(ctx context.Context, key lifecycle.Key, sha string) (bool, error) {
	own, err := a.Writer.OwnCommit(ctx, key, sha)
	if err != nil || own {
		return own, err
	}
	g, ok, err := a.Writer.CommitGroup(ctx, sha)
	if err != nil || !ok {
		return false, err
	}
	rec, err := a.Leases.GetGroup(ctx, g)
	if err != nil && !errors.Is(err, state.ErrGroupLease) {
		return false, err
	}
	return rec.Members[key].Leaving, nil
}

// Withdraw takes key's Change out of pull request number: a pull request of its own is closed;
// a group's is proposed again without it, and closed when it was the last one in. The pull
// request is then read afresh: one merged with key's Change in it (by the forge's auto-merge,
// another replica, a human, before the push or the close) is not a withdrawal, and Withdraw
// says so with lifecycle.ErrMergedBeforeWithdrawal.
func (a *Actuator) Withdraw(ctx context.Context, key lifecycle.Key, number int, why string, g lifecycle.Group) error {
	comment := "Kustos closes this pull request because " + why
	if g.IsZero() {
		defer a.lock(prLock(number))()
		if err := a.ownHead(ctx, key, g, number); err != nil {
			return err
		}
		if err := a.close(ctx, number, comment); err != nil {
			return err
		}
		return a.landed(ctx, key, g, number)
	}
	defer a.lock(g.Key)()
	defer a.lock(prLock(number))()
	rec, err := a.Leases.GetGroup(ctx, g.Key)
	if err != nil {
		return err
	}
	if rec.Holder != state.HolderOf(number) {
		// The group moved on to another pull request (or none): number is done, and closing
		// it could take other members with it. Done how is what the pull request says.
		return a.landed(ctx, key, g, number)
	}
	if m, ok := rec.Members[key]; ok && !m.Leaving {
		// Recorded before the push: no other member's push (here, or on another replica) puts
		// key back, and if the push fails the record still says key is on its way out.
		m.Leaving = true
		rec.Members[key] = m
		if rec, err = a.Leases.PutGroup(ctx, rec, g.Namespace); err != nil {
			return a.conflict(err)
		}
	}
	in := 0
	for k, m := range rec.Members {
		if m.In && !m.Leaving && k != key {
			in++
		}
	}
	var (
		res     pr.GroupResult
		members []pr.Member
	)
	if in > 0 {
		// Propose the others again, without key's Change (nor any other leaving).
		if members, err = a.members(ctx, &rec, nil, true); err != nil {
			return err
		}
		if res, err = a.Writer.ProposeGroup(ctx, g, members, rec.Head); err != nil {
			return err // the record says key is leaving: the retry takes it out
		}
	}
	if in == 0 || res.Number == 0 {
		// Nothing left to propose (the others are done): close it.
		if err := a.ownHead(ctx, key, g, number); err != nil {
			return err
		}
		if err := a.close(ctx, number, comment); err != nil {
			return err
		}
	}
	if err := a.landed(ctx, key, g, number); err != nil {
		if !errors.Is(err, lifecycle.ErrMergedBeforeWithdrawal) {
			return err
		}
		// The group is done with the merged pull request: whoever was in it is merged (their
		// own looks find it so); whoever waits starts the next one.
		for k, m := range rec.Members {
			if m.In {
				delete(rec.Members, k)
			}
		}
		rec.Holder, rec.Head, rec.URL, rec.Gathering = "", "", "", time.Time{}
		if len(rec.Members) > 0 {
			rec.Gathering = a.now()
		}
		if _, perr := a.Leases.PutGroup(ctx, rec, g.Namespace); perr != nil {
			return a.conflict(perr)
		}
		return err
	}
	if in > 0 {
		a.record(&rec, res, members)
	}
	delete(rec.Members, key)
	if in == 0 || res.Number == 0 {
		rec.Holder, rec.Head, rec.URL = "", "", ""
		if len(rec.Members) > 0 && rec.Gathering.IsZero() {
			rec.Gathering = a.now()
		}
	}
	if _, err := a.Leases.PutGroup(ctx, rec, g.Namespace); err != nil {
		return a.conflict(err)
	}
	a.forget(number)
	if in > 0 && res.Number != 0 {
		return a.Forge.CommentPR(ctx, number, fmt.Sprintf("Kustos took `%s` out of this pull request because %s.", describeKey(key), strings.TrimSuffix(why, ".")))
	}
	return nil
}

// Dequeue takes key out of its group's open pull request when the head carries key's Change:
// the group proposes each member's pending Change, so one whose own look has just dropped it
// (its target was opted out while it waited) may be in the head another member pushed. It is
// taken out as Withdraw does, and the pull request's number returned; a key that is only
// gathering, or not in the group, is left to the next proposal, which reads its Lease.
func (a *Actuator) Dequeue(ctx context.Context, key lifecycle.Key, g lifecycle.Group, why string) (int, error) {
	if g.IsZero() {
		return 0, nil
	}
	rec, err := a.Leases.GetGroup(ctx, g.Key)
	if err != nil {
		return 0, err
	}
	n, open := state.HolderNumber(rec.Holder)
	if m, ok := rec.Members[key]; !ok || !m.In || !open {
		return 0, nil
	}
	return n, a.Withdraw(ctx, key, n, why, g)
}

// ownHead reads pull request number afresh and refuses, with an error matching
// lifecycle.ErrForeignCommit, to let it be closed while it is open with a head Kustos did not
// write (for key, or for its group g): a person pushed onto it, and it is left to people. The
// look that decided the withdrawal may have read the pull request from the status cache, up to
// a StatusTTL before that push; the cache is dropped, so that the next look sees the push.
func (a *Actuator) ownHead(ctx context.Context, key lifecycle.Key, g lifecycle.Group, number int) error {
	a.forget(number)
	st, err := a.Writer.StatusOf(ctx, key, number)
	if err != nil || st.State != lifecycle.ProposalOpen {
		return err
	}
	own, err := a.Writer.OwnCommit(ctx, key, st.HeadSHA)
	if err == nil && !own && !g.IsZero() {
		own, err = a.Writer.OwnCommit(ctx, g.Key, st.HeadSHA)
	}
	if err != nil {
		return err
	}
	if !own {
		return fmt.Errorf("%w: pull request #%d has head %s; Kustos does not close it and leaves it to people",
			pr.ErrForeignHead, number, st.HeadSHA)
	}
	return nil
}

// landed reads pull request number afresh, after a withdrawal of key's Change from it pushed
// or closed, and returns lifecycle.ErrMergedBeforeWithdrawal when it was merged with key's
// Change in it: a pull request of key's own, or a group's whose merged head is not a commit
// Kustos wrote for the group without key (one Kustos did not write may hold anything). A
// group's pull request merged after the push that took key out merged the others only.
func (a *Actuator) landed(ctx context.Context, key lifecycle.Key, g lifecycle.Group, number int) error {
	a.forget(number)
	st, err := a.Writer.StatusOf(ctx, key, number)
	if err != nil {
		return err
	}
	if st.State != lifecycle.ProposalMerged {
		return nil
	}
	merged := fmt.Errorf("%w: pull request #%d", lifecycle.ErrMergedBeforeWithdrawal, number)
	if g.IsZero() {
		return merged
	}
	withKey, err := a.Writer.OwnCommit(ctx, key, st.HeadSHA)
	if err != nil {
		return err
	}
	if withKey {
		return merged
	}
	withoutKey, err := a.Writer.OwnCommit(ctx, g.Key, st.HeadSHA)
	if err != nil {
		return err
	}
	if !withoutKey {
		return merged
	}
	return nil
}

func (a *Actuator) close(ctx context.Context, number int, comment string) error {
	if err := a.Forge.ClosePR(ctx, number, comment); err != nil {
		return err
	}
	a.forget(number)
	a.Budget.Released()
	return nil
}

// describeKey names a member's target from its Key: "Deployment team-a/web".
func describeKey(k lifecycle.Key) string {
	p, ok := k.Parts()
	if !ok {
		return string(k)
	}
	kind := p.KindGroup
	if kind == "" {
		kind = p.Detector
	}
	if p.Namespace == "" {
		return kind + " " + p.Name
	}
	return kind + " " + p.Namespace + "/" + p.Name
}
