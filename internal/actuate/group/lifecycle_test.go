package group

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

const (
	owner  = "acme"
	repo   = "gitops"
	window = 2 * time.Minute
)

var t0 = time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

// clock is the test's time, shared by the pipeline, the actuator and the budget.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// events records what the pipeline reports, once per id as the real recorder does, and the
// notices it sends to owners.
type events struct {
	mu       sync.Mutex
	ids      map[string]bool
	log      []string // "reason target: message"
	warnings []string // the reasons of Warning Events
	notices  []lifecycle.Notice
}

func (e *events) Record(context.Context, lifecycle.Change, time.Time) error { return nil }

func (e *events) Notify(_ context.Context, ref corev1.ObjectReference, typ, reason, msg, id string, _ time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ids[id] {
		return nil
	}
	e.ids[id] = true
	e.log = append(e.log, reason+" "+ref.Namespace+"/"+ref.Name+": "+msg)
	if typ == corev1.EventTypeWarning {
		e.warnings = append(e.warnings, reason)
	}
	return nil
}

// Send is the owners' notifier.
func (e *events) Send(_ context.Context, n lifecycle.Notice) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notices = append(e.notices, n)
	return nil
}

func (e *events) warned(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.warnings {
		if r == reason {
			n++
		}
	}
	return n
}

func (e *events) sent() []lifecycle.Notice {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]lifecycle.Notice(nil), e.notices...)
}

func (e *events) count(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, l := range e.log {
		if strings.HasPrefix(l, reason+" ") {
			n++
		}
	}
	return n
}

// world is one Kustos replica's PR mode over a real API server (the Leases) and the
// GitHub-compatible server with real Git: previews in team-a and team-b that expire.
type world struct {
	t      *testing.T
	s      *githubtest.Server
	gh     *github.Client
	clock  *clock
	store  *state.Store
	writer *pr.Writer
	hook   *hookedWriter
	act    *Actuator
	pl     *pipeline.Pipeline
	ev     *events

	mu   sync.Mutex
	kept map[string]bool // targets extended by their owner
	// cached and live are each target's Seen as the looks' cache and as the API server have it
	// (ns/name; unset: both ""), for Confirm.
	cached, live map[string]string
}

var nsCount int

func newWorld(t *testing.T) *world {
	t.Helper()
	s := githubtest.New(t, githubtest.Options{})
	s.SeedRepoFromDir(owner, repo, "main", "testdata/repo")
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(s.Token()), 0o600); err != nil {
		t.Fatal(err)
	}
	gh, err := github.NewClient(github.Config{APIURL: s.URL(), TokenFile: tok, Repository: owner + "/" + repo},
		github.WithMaxRetries(0), github.WithMutationInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	nsCount++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("group-%d-%d", os.Getpid()%10000, nsCount)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, s: s, gh: gh, clock: &clock{t: t0}, ev: &events{ids: map[string]bool{}}, kept: map[string]bool{},
		cached: map[string]string{}, live: map[string]string{}}
	w.store = &state.Store{Reader: k8s, Writer: k8s, Namespace: ns.Name, Identity: "replica-a"}
	w.writer = pr.NewWriter(gh, &pr.GitRepo{URL: s.GitURL(owner, repo), Branch: "main",
		Token: func(context.Context) (string, error) { return s.Token(), nil }},
		pr.Config{Cluster: "prod", Paths: []string{"clusters/prod/"}, RecheckAfter: time.Second, PendingAfter: time.Second})
	w.hook = &hookedWriter{Writer: w.writer}
	w.act = &Actuator{Writer: w.hook, Forge: gh, Leases: w.store, Now: w.clock.Now, Log: logr.Discard()}
	w.pl = w.pipeline(w.act, w.store)
	return w
}

func (w *world) pipeline(a *Actuator, store pipeline.Store) *pipeline.Pipeline {
	return &pipeline.Pipeline{
		Detector: "expiry", Store: store, Actuator: a, Proposals: a, Reporter: w.ev, Notifier: w.ev, Identity: "replica-a",
		Vocab:        lifecycle.Vocabulary{Proposed: "ExpiryProposed", Merged: "ExpiryMerged", Declined: "ExpiryDeclined"},
		PollInterval: time.Minute, Log: logr.Discard(),
	}
}

func target(ns, name string) lifecycle.Target {
	return lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name}
}

func groupOf(ns string) lifecycle.Group {
	return lifecycle.Group{Key: lifecycle.GroupKey("expiry", "namespace", ns), Label: "namespace " + ns, Namespace: ns, Window: window}
}

// request is one look at a preview: its removal is due unless its owner extended it (then an
// open proposal is withdrawn, a queued one dropped) or a human declined it.
func (w *world) request(ns, name string, autoMerge bool) lifecycle.Request {
	t := target(ns, name)
	key := lifecycle.KeyFor("expiry", t)
	c := lifecycle.Change{Key: key, Detector: "expiry", Target: t, Edit: lifecycle.Edit{Op: lifecycle.EditDelete},
		Reason: "ExpiryDue", Summary: t.String() + " expired; removing it",
		OptOut: &lifecycle.OptOut{Declined: "it stays.", Annotation: "kustos.io/expiry-ignore", Value: "true", Keep: "its owner extends it"}}
	w.mu.Lock()
	seen := w.cached[ns+"/"+name]
	w.mu.Unlock()
	return lifecycle.Request{Key: key, Target: t, Seen: seen, Now: w.clock.Now(), AutoMerge: autoMerge, Group: groupOf(ns),
		HeldNotice: &lifecycle.Notice{To: "owner@example.com", Owner: "owner", Target: t},
		Decide: func(v lifecycle.View) lifecycle.Decision {
			w.mu.Lock()
			kept := w.kept[ns+"/"+name]
			w.mu.Unlock()
			switch {
			case kept && v.ProposalOpen:
				return lifecycle.Decision{Withdraw: "its owner extended it"}
			case kept, v.Declined, v.ProposalOpen:
				return lifecycle.Decision{}
			}
			return lifecycle.Decision{Change: &c}
		}}
}

// look runs the pipeline once for each preview of ns named by number.
func (w *world) look(ns string, numbers ...int) {
	w.t.Helper()
	w.lookWith(w.pl, false, ns, numbers...)
}

func (w *world) lookWith(pl *pipeline.Pipeline, autoMerge bool, ns string, numbers ...int) {
	w.t.Helper()
	for _, n := range numbers {
		if _, err := pl.Run(context.Background(), w.request(ns, fmt.Sprintf("preview-%d", n), autoMerge)); err != nil {
			w.t.Fatalf("look at %s/preview-%d: %v", ns, n, err)
		}
	}
}

func (w *world) keep(ns string, n int) {
	w.mu.Lock()
	w.kept[fmt.Sprintf("%s/preview-%d", ns, n)] = true
	w.mu.Unlock()
}

func (w *world) lease(ns string, n int) state.Record {
	w.t.Helper()
	rec, err := w.store.Get(context.Background(), lifecycle.KeyFor("expiry", target(ns, fmt.Sprintf("preview-%d", n))))
	if err != nil {
		w.t.Fatal(err)
	}
	return rec
}

func (w *world) groupLease(ns string) state.GroupRecord {
	w.t.Helper()
	g, err := w.store.GetGroup(context.Background(), groupOf(ns).Key)
	if err != nil {
		w.t.Fatal(err)
	}
	return g
}

// prs returns the repository's pull requests.
func (w *world) prs() []githubtest.PullRequest { return w.s.PRs(owner, repo) }

// onlyPR asserts there is one pull request and that it lists exactly the previews named.
func (w *world) onlyPR(ns string, numbers ...int) githubtest.PullRequest {
	w.t.Helper()
	prs := w.prs()
	if len(prs) != 1 {
		w.t.Fatalf("%d pull requests, want 1: %+v", len(prs), prs)
	}
	p := prs[0]
	for i := 1; i <= 5; i++ {
		listed := strings.Contains(p.Body, fmt.Sprintf("`%s/preview-%d`", ns, i))
		want := false
		for _, n := range numbers {
			want = want || n == i
		}
		if listed != want {
			w.t.Errorf("preview-%d listed in #%d: %v, want %v\n%s", i, p.Number, listed, want, p.Body)
		}
		_, onBranch := w.s.FileAt(owner, repo, p.Head, fmt.Sprintf("clusters/prod/%s/preview-%d.yaml", ns, i))
		if p.State == "open" && onBranch == want {
			w.t.Errorf("preview-%d.yaml on the branch of #%d: %v, want it deleted: %v", i, p.Number, onBranch, want)
		}
	}
	return p
}

// hookedWriter runs before ahead of each ProposeGroup: what happens on GitHub just before a
// push (a merge), or a push that fails.
type hookedWriter struct {
	Writer
	mu     sync.Mutex
	before func() error
}

func (h *hookedWriter) ProposeGroup(ctx context.Context, g lifecycle.Group, members []pr.Member, head string) (pr.GroupResult, error) {
	h.mu.Lock()
	before := h.before
	h.mu.Unlock()
	if before != nil {
		if err := before(); err != nil {
			return pr.GroupResult{}, err
		}
	}
	return h.Writer.ProposeGroup(ctx, g, members, head)
}

// onNextPropose sets what runs before the next ProposeGroup only.
func (w *world) onNextPropose(f func() error) {
	w.hook.mu.Lock()
	defer w.hook.mu.Unlock()
	w.hook.before = func() error {
		w.hook.mu.Lock()
		w.hook.before = nil
		w.hook.mu.Unlock()
		return f()
	}
}

// mergeable waits until GitHub says pull request number may be merged and returns its state as
// the pipeline reads it.
func (w *world) mergeable(key lifecycle.Key, number int) lifecycle.ProposalState {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := w.writer.StatusOf(context.Background(), key, number)
		if err != nil {
			w.t.Fatal(err)
		}
		if st.Mergeable != nil && *st.Mergeable && st.MergeableState == "clean" {
			return st
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("#%d not mergeable: %+v", number, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mergeNow merges pull request number as GitHub's auto-merge (or a human) would, outside Kustos.
func (w *world) mergeNow(number int) error {
	st := w.mergeable(lifecycle.Key("test/merge"), number)
	_, err := w.gh.MergePR(context.Background(), number, st.HeadSHA, true, "", "")
	return err
}

// onMain reports whether preview n's manifest is still on the base branch.
func (w *world) onMain(ns string, n int) bool {
	_, ok := w.s.FileAt(owner, repo, "main", fmt.Sprintf("clusters/prod/%s/preview-%d.yaml", ns, n))
	return ok
}

// mergedFirst checks that preview n, extended while its group's pull request was being merged,
// is reported as merged, not withdrawn: a Warning, a notice to its owner, the Lease unlocked as
// after a merge (the cooldown starts at the merge's look, at).
func (w *world) mergedFirst(ns string, n int, at time.Time) {
	w.t.Helper()
	if w.onMain(ns, n) {
		w.t.Fatalf("preview-%d.yaml is still on main: the merge did not take it", n)
	}
	if c := w.ev.warned(pipeline.ReasonMergedBeforeWithdrawal); c != 1 {
		w.t.Errorf("%d %s Warning Events, want 1", c, pipeline.ReasonMergedBeforeWithdrawal)
	}
	if c := w.ev.count(pipeline.ReasonWithdrawn); c != 0 {
		w.t.Errorf("%d %s Events for a member Git removed", c, pipeline.ReasonWithdrawn)
	}
	var notices []lifecycle.Notice
	for _, no := range w.ev.sent() {
		if no.Kind == pipeline.NoticeMergedBeforeWithdrawal {
			notices = append(notices, no)
		}
	}
	if len(notices) != 1 || notices[0].Target.Name != fmt.Sprintf("preview-%d", n) || notices[0].To != "owner@example.com" {
		w.t.Errorf("notices to the owner: %+v", notices)
	}
	if r := w.lease(ns, n); r.Holder != "" || !r.LastModified.Equal(at) || r.ClosedValues != "" {
		w.t.Errorf("preview-%d's Lease %+v, want unlocked as merged at %s", n, r, at)
	}
}

// TestGroupLifeCycle walks a group's proposal through every transition, each row from the state
// the rows before it leave, against real Leases and a real Git repository.
func TestGroupLifeCycle(t *testing.T) {
	type step struct {
		name string
		do   func(w *world)
	}
	gathered := []step{
		{"members gather during the window: nothing is proposed", func(w *world) {
			w.look("team-a", 1, 2, 3)
			if n := len(w.prs()); n != 0 {
				w.t.Fatalf("%d pull requests during the window", n)
			}
			if r := w.lease("team-a", 2); r.Pending == "" || !strings.HasPrefix(r.Queued, "gathering:") {
				w.t.Fatalf("a gathering member's Lease: pending %q, queued %q", r.Pending, r.Queued)
			}
			if g := w.groupLease("team-a"); len(g.Members) != 3 || g.Holder != "" {
				w.t.Fatalf("group lease during the window: %+v", g)
			}
			if n := w.ev.count(pipeline.ReasonQueued); n != 0 {
				w.t.Errorf("%d ProposalQueued Events for a window, which is by design", n)
			}
		}},
		{"the window ends: one pull request, one commit, every member locked on it", func(w *world) {
			w.clock.Add(window)
			w.look("team-a", 1, 2, 3)
			p := w.onlyPR("team-a", 1, 2, 3)
			for _, n := range []int{1, 2, 3} {
				if r := w.lease("team-a", n); r.Holder != state.HolderOf(p.Number) || r.Pending != "" || r.Queued != "" {
					w.t.Errorf("preview-%d's Lease: %+v", n, r)
				}
			}
			if g := w.groupLease("team-a"); g.Holder != state.HolderOf(p.Number) || g.Head != p.HeadSHA {
				w.t.Errorf("group lease %+v, want holder #%d head %s", g, p.Number, p.HeadSHA)
			}
			if n := w.s.CountRequests("POST", "/repos/{owner}/{repo}/git/commits"); n != 1 {
				w.t.Errorf("%d commits written, want 1", n)
			}
			if n := w.ev.count("ExpiryProposed"); n != 3 {
				w.t.Errorf("%d ExpiryProposed Events, want one per member", n)
			}
		}},
	}
	rows := []struct {
		name  string
		steps []step
	}{
		{"add: a member due later joins the open pull request", append(append([]step{}, gathered...), step{"preview-4 joins", func(w *world) {
			w.look("team-a", 4)
			p := w.onlyPR("team-a", 1, 2, 3, 4)
			if r := w.lease("team-a", 4); r.Holder != state.HolderOf(p.Number) {
				w.t.Errorf("preview-4 not locked on #%d: %+v", p.Number, r)
			}
			w.look("team-a", 1, 2, 3, 4) // the others follow the new head as Kustos's own
			if n := w.ev.count(pipeline.ReasonForeignCommit); n != 0 {
				w.t.Errorf("the new head was taken for a human's: %v", w.ev.log)
			}
		}})},
		{"remove: a member extended while the pull request is open is taken out", append(append([]step{}, gathered...), step{"preview-2 kept", func(w *world) {
			w.keep("team-a", 2)
			w.look("team-a", 2)
			p := w.onlyPR("team-a", 1, 3)
			if p.State != "open" || len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "team-a/preview-2` out of this pull request because its owner extended it") {
				w.t.Errorf("#%d %s, comments %q", p.Number, p.State, p.Comments)
			}
			if r := w.lease("team-a", 2); r.Holder != "" || r.ClosedValues != "" {
				w.t.Errorf("preview-2 after being taken out: %+v (a withdrawal is not a decline)", r)
			}
			if g := w.groupLease("team-a"); len(g.Members) != 2 {
				w.t.Errorf("group members %v", g.Keys())
			}
		}})},
		{"empty: the last member taken out closes the pull request", append(append([]step{}, gathered...), step{"all kept", func(w *world) {
			for _, n := range []int{1, 2, 3} {
				w.keep("team-a", n)
			}
			w.look("team-a", 1, 2, 3)
			prs := w.prs()
			if len(prs) != 1 || prs[0].State != "closed" || prs[0].Merged {
				w.t.Fatalf("pull requests %+v, want #1 closed", prs)
			}
			if g := w.groupLease("team-a"); g.Holder != "" || len(g.Members) != 0 {
				w.t.Errorf("group lease after the last member left: %+v", g)
			}
			if n := w.ev.count(pipeline.ReasonWithdrawn); n != 3 {
				w.t.Errorf("%d ProposalWithdrawn Events, want 3", n)
			}
		}})},
		{"close: a human closing the group's pull request declines every member", append(append([]step{}, gathered...), step{"closed by a human", func(w *world) {
			w.s.ClosePR(owner, repo, w.prs()[0].Number)
			w.clock.Add(time.Minute)
			w.look("team-a", 1, 2, 3)
			for _, n := range []int{1, 2, 3} {
				if r := w.lease("team-a", n); r.Holder != "" || r.ClosedValues == "" {
					w.t.Errorf("preview-%d after the close: %+v, want declined", n, r)
				}
			}
			if n := w.ev.count("ExpiryDeclined"); n != 3 {
				w.t.Errorf("%d ExpiryDeclined Events, want 3", n)
			}
			// A member due after the close starts a new pull request of its own group.
			w.look("team-a", 5)
			w.clock.Add(window)
			w.look("team-a", 5)
			if prs := w.prs(); len(prs) != 2 || prs[1].State != "open" || strings.Contains(prs[1].Body, "preview-1") {
				w.t.Errorf("after the close: %+v", prs)
			}
		}})},
		{"merge: auto-merge merges once and every member sees it", append(append([]step{}, gathered...), step{"merged", func(w *world) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				w.clock.Add(11 * time.Second)
				w.lookWith(w.pl, true, "team-a", 1, 2, 3)
				if p := w.prs()[0]; p.Merged || time.Now().After(deadline) {
					break
				}
			}
			p := w.prs()[0]
			if !p.Merged {
				w.t.Fatalf("#%d not merged: %+v", p.Number, p)
			}
			w.clock.Add(11 * time.Second)
			w.lookWith(w.pl, true, "team-a", 1, 2, 3)
			if n := w.ev.count("ExpiryMerged"); n != 3 {
				w.t.Errorf("%d ExpiryMerged Events, want 3: %v", n, w.ev.log)
			}
			if n := w.s.CountRequests("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"); n != 1 {
				w.t.Errorf("%d merge requests, want 1", n)
			}
			for i := 1; i <= 3; i++ {
				if _, ok := w.s.FileAt(owner, repo, "main", fmt.Sprintf("clusters/prod/team-a/preview-%d.yaml", i)); ok {
					w.t.Errorf("preview-%d.yaml still on main", i)
				}
			}
		}})},
		{"merge lands just before the withdrawal's push: reported as merged, not withdrawn", append(append([]step{}, gathered...), step{"merged, then preview-2 kept", func(w *world) {
			number := w.prs()[0].Number
			w.keep("team-a", 2)
			w.clock.Add(time.Minute)
			w.onNextPropose(func() error { return w.mergeNow(number) })
			w.look("team-a", 2)
			w.mergedFirst("team-a", 2, w.clock.Now())
			if p := w.prs()[0]; !p.Merged || len(p.Comments) != 0 {
				w.t.Errorf("#%d merged %v, comments %q", p.Number, p.Merged, p.Comments)
			}
			// The group is done with the merged pull request; the others find it merged.
			if g := w.groupLease("team-a"); g.Holder != "" || len(g.Members) != 0 {
				w.t.Errorf("group lease after the merge: %+v", g)
			}
			w.look("team-a", 1, 3)
			if c := w.ev.count("ExpiryMerged"); c != 3 {
				w.t.Errorf("%d ExpiryMerged Events, want 3", c)
			}
		}})},
		{"join racing merge in one process: the join and the merge take turns", append(append([]step{}, gathered...), step{"preview-1 merges while preview-4 joins", func(w *world) {
			w.raceJoinMerge()
		}})},
		{"withdraw racing merge in one process: the withdrawal and the merge take turns", append(append([]step{}, gathered...), step{"preview-1 merges while preview-2 is withdrawn", func(w *world) {
			w.raceWithdrawMerge(false)
		}})},
		{"withdraw racing merge on two replicas: whichever lands first is what is reported", append(append([]step{}, gathered...), step{"preview-1 merges while preview-2 is withdrawn", func(w *world) {
			w.raceWithdrawMerge(true)
		}})},
		{"crash before the withdrawal's push: a member joining meanwhile does not put it back, the retry withdraws it", append(append([]step{}, gathered...), step{"push fails, preview-4 joins, retry", func(w *world) {
			w.failedWithdrawal(false)
		}})},
		{"crash after the withdrawal's push: a member joining meanwhile does not put it back, the retry withdraws it", append(append([]step{}, gathered...), step{"record lost, preview-4 joins, retry", func(w *world) {
			w.failedWithdrawal(true)
		}})},
		{"crash after the withdrawal's push, the others merged before the retry: withdrawn, not merged", append(append([]step{}, gathered...), step{"record lost, merged, retry", func(w *world) {
			w.keep("team-a", 2)
			put := &failingPut{Leases: w.store}
			w.act.Leases = put
			w.onNextPropose(func() error { put.mu.Lock(); put.fail = 1; put.mu.Unlock(); return nil })
			if _, err := w.pl.Run(context.Background(), w.request("team-a", "preview-2", false)); err == nil {
				w.t.Fatal("the failed withdrawal did not surface")
			}
			w.act.Leases = w.store
			if err := w.mergeNow(w.prs()[0].Number); err != nil {
				w.t.Fatal(err)
			}
			w.clock.Add(time.Minute)
			w.look("team-a", 2)
			if !w.onMain("team-a", 2) || w.onMain("team-a", 1) {
				w.t.Fatalf("preview-2.yaml on main %v, preview-1.yaml %v: the merge was not of the head without preview-2", w.onMain("team-a", 2), w.onMain("team-a", 1))
			}
			if w.ev.count(pipeline.ReasonWithdrawn) != 1 || w.ev.count(pipeline.ReasonMergedBeforeWithdrawal) != 0 || len(w.ev.sent()) != 0 {
				w.t.Errorf("events %v, notices %+v", w.ev.log, w.ev.sent())
			}
			if r := w.lease("team-a", 2); r.Holder != "" || !r.LastModified.Equal(t0) {
				w.t.Errorf("preview-2's Lease %+v, want unlocked as withdrawn (its decision time kept)", r)
			}
		}})},
		{"crash between the push and the Lease: the replay finds the pull request", []step{
			gathered[0],
			{"the window ends and the first proposer crashes after the push", func(w *world) {
				w.clock.Add(window)
				crashed := false
				w.act.AfterPropose = func(lifecycle.Key, pr.Result) error {
					if crashed {
						return nil
					}
					crashed = true
					return errors.New("simulated crash")
				}
				if _, err := w.pl.Run(context.Background(), w.request("team-a", "preview-1", false)); err == nil {
					w.t.Fatal("the crash did not surface")
				}
				w.look("team-a", 1, 2, 3)
				w.onlyPR("team-a", 1, 2, 3)
				if n := w.s.CountRequests("POST", "/repos/{owner}/{repo}/git/commits"); n != 1 {
					w.t.Errorf("%d commits after the replay, want 1", n)
				}
				if r := w.lease("team-a", 1); r.Holder == "" {
					w.t.Errorf("preview-1 not locked after its replay: %+v", r)
				}
			}},
		}},
		{"two replicas at once: one pull request", []step{
			gathered[0],
			{"both look after the window", func(w *world) {
				w.clock.Add(window)
				other := &Actuator{Writer: pr.NewWriter(w.gh, &pr.GitRepo{URL: w.s.GitURL(owner, repo), Branch: "main",
					Token: func(context.Context) (string, error) { return w.s.Token(), nil }}, pr.Config{Cluster: "prod", Paths: []string{"clusters/prod/"}}),
					Forge: w.gh, Leases: w.store, Now: w.clock.Now, Log: logr.Discard()}
				b := w.pipeline(other, &state.Store{Reader: k8s, Writer: k8s, Namespace: w.store.Namespace, Identity: "replica-b"})
				b.Identity = "replica-b"
				var wg sync.WaitGroup
				for _, pl := range []*pipeline.Pipeline{w.pl, b} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 3; i++ {
							for _, n := range []int{1, 2, 3} {
								_, _ = pl.Run(context.Background(), w.request("team-a", fmt.Sprintf("preview-%d", n), false))
							}
						}
					}()
				}
				wg.Wait()
				w.look("team-a", 1, 2, 3)
				w.onlyPR("team-a", 1, 2, 3)
			}},
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			w.t = t
			for _, s := range row.steps {
				s.do(w)
				if t.Failed() {
					t.Fatalf("after %q; events:\n%s", s.name, strings.Join(w.ev.log, "\n"))
				}
			}
		})
	}
}

// mergeDuringPropose runs act, and asks this process's actuator to merge the group's pull request
// for preview-1, pinned to the head it reads now, just as act's next ProposeGroup is about to
// push; that push waits up to 2 s for the merge (which, taking turns with it, waits for the push
// instead).
func (w *world) mergeDuringPropose(act func()) {
	w.t.Helper()
	key1 := lifecycle.KeyFor("expiry", target("team-a", "preview-1"))
	st := w.mergeable(key1, w.prs()[0].Number)
	started, merged := make(chan struct{}), make(chan struct{})
	w.onNextPropose(func() error {
		close(started)
		select {
		case <-merged:
		case <-time.After(2 * time.Second):
		}
		return nil
	})
	var mergeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-started
		_, _, mergeErr = w.act.Merge(context.Background(), key1, st)
		close(merged)
	}()
	act()
	<-done
	if mergeErr != nil {
		w.t.Fatalf("merge: %v", mergeErr)
	}
}

// raceJoinMerge merges the group's pull request for preview-1 while preview-4, due now, joins
// it: the merge is asked for just as the join is about to push. In one process the two take
// turns: the join, having found the pull request open, pushes first, and the merge, pinned to
// the head it read, merges nothing; a join pushed onto a pull request merged a moment before
// would never reach the base, while its Lease and Events said it had.
func (w *world) raceJoinMerge() {
	w.mergeDuringPropose(func() { w.look("team-a", 4) })
	p := w.onlyPR("team-a", 1, 2, 3, 4)
	if p.Merged || p.State != "open" {
		w.t.Errorf("#%d merged %v, state %s: the merge went between the join's check and its push", p.Number, p.Merged, p.State)
	}
	if r := w.lease("team-a", 4); r.Holder != state.HolderOf(p.Number) {
		w.t.Errorf("preview-4 not locked on #%d: %+v", p.Number, r)
	}
}

// raceWithdrawMerge merges the group's pull request for preview-1 while preview-2, extended, is
// being taken out of it: the merge is asked for just as the withdrawal is about to push. In one
// process the two take turns (the merge, pinned to the head it read, then finds a new head); on
// two replicas the merge lands first and the withdrawal must say so.
func (w *world) raceWithdrawMerge(replicas bool) {
	withdrawer := w.pl
	if replicas {
		hook := &hookedWriter{Writer: w.writer}
		other := &Actuator{Writer: hook, Forge: w.gh, Leases: w.store, Now: w.clock.Now, Log: logr.Discard()}
		withdrawer = w.pipeline(other, &state.Store{Reader: k8s, Writer: k8s, Namespace: w.store.Namespace, Identity: "replica-b"})
		withdrawer.Identity = "replica-b"
		w.hook = hook
	}
	w.mergeDuringPropose(func() {
		w.keep("team-a", 2)
		w.clock.Add(time.Minute)
		w.lookWith(withdrawer, false, "team-a", 2)
	})
	if replicas {
		w.mergedFirst("team-a", 2, w.clock.Now())
		return
	}
	// One process: the withdrawal went first; the merge found the head moved and merged nothing.
	p := w.onlyPR("team-a", 1, 3)
	if p.Merged || p.State != "open" || !w.onMain("team-a", 2) {
		w.t.Errorf("#%d merged %v state %s, preview-2.yaml on main %v", p.Number, p.Merged, p.State, w.onMain("team-a", 2))
	}
	if c := w.ev.count(pipeline.ReasonWithdrawn); c != 1 {
		w.t.Errorf("%d ProposalWithdrawn Events, want 1", c)
	}
	if c := w.ev.count(pipeline.ReasonMergedBeforeWithdrawal); c != 0 {
		w.t.Errorf("%d MergedBeforeWithdrawal Events for a withdrawal that went first", c)
	}
}

// failedWithdrawal takes preview-2 out of the group's pull request with a ProposeGroup that
// fails, before its push or after it (the record of the push lost); preview-4 then joins, and
// the withdrawal is tried again.
func (w *world) failedWithdrawal(afterPush bool) {
	w.keep("team-a", 2)
	put := &failingPut{Leases: w.store}
	w.act.Leases = put
	w.onNextPropose(func() error {
		if !afterPush {
			return errors.New("simulated crash before the push")
		}
		// The push happens; the group's Lease does not learn of it.
		put.mu.Lock()
		put.fail = 1
		put.mu.Unlock()
		return nil
	})
	if _, err := w.pl.Run(context.Background(), w.request("team-a", "preview-2", false)); err == nil {
		w.t.Fatal("the failed withdrawal did not surface")
	}
	w.act.Leases = w.store
	if r := w.lease("team-a", 2); r.Holder == "" {
		w.t.Fatalf("preview-2 unlocked by a withdrawal that failed: %+v", r)
	}
	if m, ok := w.groupLease("team-a").Members[lifecycle.KeyFor("expiry", target("team-a", "preview-2"))]; !ok || !m.Leaving {
		w.t.Errorf("preview-2 in the group record: %v %+v, want it kept as leaving (the pull request may still hold it; it must not be proposed again)", ok, m)
	}
	// A member joining meanwhile must not put preview-2 back into the pull request.
	w.look("team-a", 4)
	w.onlyPR("team-a", 1, 3, 4)
	// The retry withdraws it.
	w.clock.Add(time.Minute)
	w.look("team-a", 2)
	p := w.onlyPR("team-a", 1, 3, 4)
	if r := w.lease("team-a", 2); r.Holder != "" || r.ClosedValues != "" {
		w.t.Errorf("preview-2 after the retry: %+v", r)
	}
	if c := w.ev.count(pipeline.ReasonWithdrawn); c != 1 {
		w.t.Errorf("%d ProposalWithdrawn Events, want 1", c)
	}
	if g := w.groupLease("team-a"); len(g.Members) != 3 || g.Head != p.HeadSHA {
		w.t.Errorf("group lease after the retry: members %v, head %s (pull request's %s)", g.Keys(), g.Head, p.HeadSHA)
	}
}

// failingPut fails the next fail writes of a group's Lease (a crash before the write).
type failingPut struct {
	Leases
	mu   sync.Mutex
	fail int
}

func (f *failingPut) PutGroup(ctx context.Context, g state.GroupRecord, namespace string) (state.GroupRecord, error) {
	f.mu.Lock()
	fail := f.fail > 0
	if fail {
		f.fail--
	}
	f.mu.Unlock()
	if fail {
		return g, errors.New("simulated crash before the group's Lease is written")
	}
	return f.Leases.PutGroup(ctx, g, namespace)
}

// TestWithdrawOwnPullRequest: a target's own pull request is closed by a withdrawal, and one
// merged just before the close is reported as merged (lifecycle.ErrMergedBeforeWithdrawal),
// never as withdrawn.
func TestWithdrawOwnPullRequest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mergedFirst bool
	}{
		{"open: closed with a comment", false},
		{"merged just before the close: reported as merged", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.t = t
			// The request's Change, proposed with the zero Group: a pull request of its own.
			c := w.request("team-a", "preview-1", false).Decide(lifecycle.View{}).Change
			out, err := w.act.Apply(context.Background(), *c, t0, lifecycle.ProposeOptions{})
			if err != nil || out.Proposal == nil || out.Proposal.Number == 0 {
				t.Fatalf("propose: %+v, %v", out, err)
			}
			n := out.Proposal.Number
			if tc.mergedFirst {
				if err := w.mergeNow(n); err != nil {
					t.Fatal(err)
				}
			}
			err = w.act.Withdraw(context.Background(), c.Key, n, "its owner extended it", lifecycle.Group{})
			p, _ := w.s.PR(owner, repo, n)
			if tc.mergedFirst {
				if !errors.Is(err, lifecycle.ErrMergedBeforeWithdrawal) || !p.Merged || len(p.Comments) != 0 {
					t.Errorf("Withdraw: %v; #%d merged %v, comments %q", err, n, p.Merged, p.Comments)
				}
				return
			}
			if err != nil || p.State != "closed" || p.Merged || len(p.Comments) != 1 {
				t.Errorf("Withdraw: %v; #%d %s merged %v, comments %q", err, n, p.State, p.Merged, p.Comments)
			}
		})
	}
}
