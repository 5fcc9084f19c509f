package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var errCrash = errors.New("crash")

// forge is one GitHub in memory: one proposal per key, idempotent Apply (the PR writer's
// contract), human actions, and programmable failures.
type forge struct {
	mu        sync.Mutex
	next      int
	prs       map[lifecycle.Key]*fakePR
	applies   []string
	failApply error
	// afterApply, when set, runs after the proposal is made and before Apply returns.
	afterApply func()
	merges     int
	inBase     bool
	// withdrawn are the comments Kustos closed its PRs with.
	withdrawn []string
	// failWithdraw fails the next Withdraw after the PR was closed (a crash before the
	// answer came back).
	failWithdraw error
	// mergeFirst: the next Withdraw finds the PR merged before it took effect (the forge's
	// auto-merge, another replica).
	mergeFirst bool
	// full, when set, is the budget's answer to a Change that needs a new proposal.
	full *lifecycle.QueuedError
	// stale: Status answers the head from before the last push (the actuator's status cache,
	// read just before it).
	stale bool
}

type fakePR struct {
	number    int
	state     lifecycle.ProposalStatus
	head      string
	before    string // the head before the last push
	commits   int
	mergeable string
	change    lifecycle.Change
	closedAt  time.Time
}

func newForge() *forge { return &forge{prs: map[lifecycle.Key]*fakePR{}} }

func (f *forge) Apply(_ context.Context, c lifecycle.Change, _ time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	f.mu.Lock()
	if err := f.failApply; err != nil {
		f.mu.Unlock()
		return lifecycle.Outcome{}, err
	}
	f.applies = append(f.applies, describe(c))
	if f.inBase {
		f.mu.Unlock()
		return lifecycle.Outcome{Proposal: &lifecycle.Proposal{AlreadyInBase: true}}, nil
	}
	p := f.prs[c.Key]
	if p != nil && p.state == lifecycle.ProposalOpen && p.head != opts.Head && !ownSHA(p.head) {
		// The PR writer's contract: a head Kustos did not write is never force-pushed over.
		f.mu.Unlock()
		return lifecycle.Outcome{}, lifecycle.NewError("head "+p.head+" is not Kustos's", lifecycle.ErrForeignCommit)
	}
	res := lifecycle.Proposal{}
	// The budget is asked before anything is written for a decision not yet locked on a
	// proposal, as the group actuator does (even when a crash left its PR open).
	if !opts.Open && f.full != nil {
		q := *f.full
		f.mu.Unlock()
		return lifecycle.Outcome{}, &q
	}
	if opts.Queued && p != nil && p.state == lifecycle.ProposalClosedByHuman {
		// It waited, and a human closed its proposal meanwhile (the group actuator's look).
		f.mu.Unlock()
		return lifecycle.Outcome{}, fmt.Errorf("%w: #%d", lifecycle.ErrProposalClosed, p.number)
	}
	if p == nil || p.state != lifecycle.ProposalOpen {
		f.next++
		p = &fakePR{number: f.next, state: lifecycle.ProposalOpen, mergeable: "clean"}
		f.prs[c.Key] = p
		res.Created = true
	}
	if p.commits == 0 || describe(p.change) != describe(c) || p.mergeable == "dirty" || p.mergeable == "behind" {
		p.commits++
		p.head = fmt.Sprintf("sha-%d-%d", p.number, p.commits)
		p.change = c
		p.mergeable = "clean"
		res.Committed = true
	}
	res.Number, res.HeadSHA, res.URL = p.number, p.head, fmt.Sprintf("https://github.test/pull/%d", p.number)
	after := f.afterApply
	f.mu.Unlock()
	if after != nil {
		after()
	}
	return lifecycle.Outcome{Proposal: &res}, nil
}

// OwnCommit knows Kustos's commits by their name (sha-<pr>-<n>; a human's are human-<n>), as
// the PR writer knows them by their trailers.
func (f *forge) OwnCommit(_ context.Context, _ lifecycle.Key, sha string) (bool, error) {
	return ownSHA(sha), nil
}

func ownSHA(sha string) bool { return strings.HasPrefix(sha, "sha-") }

func (f *forge) Status(_ context.Context, key lifecycle.Key, number int) (lifecycle.ProposalState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	if p == nil || p.number != number {
		return lifecycle.ProposalState{State: lifecycle.ProposalNone}, nil
	}
	st := lifecycle.ProposalState{State: p.state, Number: p.number, HeadSHA: p.head, MergeableState: p.mergeable}
	if f.stale && p.before != "" {
		st.HeadSHA = p.before
	}
	ok := p.mergeable != "dirty"
	st.Mergeable = &ok
	return st, nil
}

func (f *forge) ClosedSince(_ context.Context, c lifecycle.Change, since time.Time) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[c.Key]
	if p != nil && p.state == lifecycle.ProposalClosedByHuman && !p.closedAt.Before(since) {
		return p.number, true, nil
	}
	return 0, false, nil
}

func (f *forge) Merge(_ context.Context, key lifecycle.Key, st lifecycle.ProposalState) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	if p == nil || p.head != st.HeadSHA {
		return false, time.Second, nil
	}
	p.state = lifecycle.ProposalMerged
	f.merges++
	return true, 0, nil
}

func (f *forge) Withdraw(_ context.Context, key lifecycle.Key, number int, comment string, _ lifecycle.Group) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	if f.mergeFirst && p != nil && p.number == number {
		f.mergeFirst = false
		p.state = lifecycle.ProposalMerged
	}
	if p != nil && p.number == number && p.state == lifecycle.ProposalMerged {
		return fmt.Errorf("%w: #%d", lifecycle.ErrMergedBeforeWithdrawal, number) // with the key's Change in it
	}
	if p == nil || p.number != number || p.state != lifecycle.ProposalOpen {
		return nil // closed already: left alone, like the GitHub client's ClosePR
	}
	if !ownSHA(p.head) {
		// As the actuator, which reads the head afresh: a person pushed onto it.
		return lifecycle.NewError(fmt.Sprintf("#%d has head %s", number, p.head), lifecycle.ErrForeignCommit)
	}
	p.state = lifecycle.ProposalClosedByHuman // what GitHub then reports: closed, not merged
	f.withdrawn = append(f.withdrawn, comment)
	if err := f.failWithdraw; err != nil {
		f.failWithdraw = nil
		return err
	}
	return nil
}

// human acts on the key's PR.
func (f *forge) human(key lifecycle.Key, act string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	switch act {
	case "close":
		p.state, p.closedAt = lifecycle.ProposalClosedByHuman, at
	case "merge":
		p.state = lifecycle.ProposalMerged
	case "push":
		p.commits++
		p.before, p.head = p.head, fmt.Sprintf("human-%d", p.commits)
	case "dirty", "behind", "blocked":
		p.mergeable = act
	}
}

func (f *forge) openPRs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.prs {
		if p.state == lifecycle.ProposalOpen {
			n++
		}
	}
	return n
}

// events records what the Reporter was asked to write, deduplicated by id like Events by name.
type events struct {
	mu      sync.Mutex
	ids     map[string]bool
	reasons []string
	records int
	// failReason, when set, fails the next Event with that reason (the API server refused it),
	// with failErr (nil: errCrash).
	failReason string
	failErr    error
}

func newEvents() *events { return &events{ids: map[string]bool{}} }

func (e *events) Record(_ context.Context, c lifecycle.Change, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := string(c.Key) + "|" + at.String()
	if !e.ids[id] {
		e.ids[id] = true
		e.records++
		e.reasons = append(e.reasons, c.Reason)
	}
	return nil
}

func (e *events) Notify(_ context.Context, _ corev1.ObjectReference, _, reason, _, id string, _ time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failReason != "" && e.failReason == reason {
		e.failReason = ""
		if err := e.failErr; err != nil {
			e.failErr = nil
			return err
		}
		return errCrash
	}
	if !e.ids[id] {
		e.ids[id] = true
		e.reasons = append(e.reasons, reason)
	}
	return nil
}

func (e *events) count(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.reasons {
		if r == reason {
			n++
		}
	}
	return n
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.reasons, ",")
}

// cpu is a quota-like change of one field; larger values supersede smaller ones.
func cpu(key lifecycle.Key, v int) *lifecycle.Change {
	return &lifecycle.Change{Key: key, Detector: "test", Reason: "Recommended",
		Target: lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-a", Name: "compute"},
		Edit:   lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: []lifecycle.FieldChange{{Path: []string{"spec", "hard", "cpu"}, To: strconv.Itoa(v)}}}}
}

func cpuOf(c lifecycle.Change) int {
	if len(c.Edit.Fields) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(c.Edit.Fields[0].To)
	return n
}

func supersedes(newer, old lifecycle.Change) (lifecycle.Change, bool) {
	if cpuOf(newer) > cpuOf(old) {
		return newer, true
	}
	return old, false
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
