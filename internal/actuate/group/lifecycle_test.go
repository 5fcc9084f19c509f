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

// events records what the pipeline reports, once per id as the real recorder does.
type events struct {
	mu  sync.Mutex
	ids map[string]bool
	log []string // "reason target: message"
}

func (e *events) Record(context.Context, lifecycle.Change, time.Time) error { return nil }

func (e *events) Notify(_ context.Context, ref corev1.ObjectReference, _, reason, msg, id string, _ time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ids[id] {
		return nil
	}
	e.ids[id] = true
	e.log = append(e.log, reason+" "+ref.Namespace+"/"+ref.Name+": "+msg)
	return nil
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
	act    *Actuator
	pl     *pipeline.Pipeline
	ev     *events

	mu   sync.Mutex
	kept map[string]bool // targets extended by their owner
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
	w := &world{t: t, s: s, gh: gh, clock: &clock{t: t0}, ev: &events{ids: map[string]bool{}}, kept: map[string]bool{}}
	w.store = &state.Store{Reader: k8s, Writer: k8s, Namespace: ns.Name, Identity: "replica-a"}
	w.writer = pr.NewWriter(gh, &pr.GitRepo{URL: s.GitURL(owner, repo), Branch: "main",
		Token: func(context.Context) (string, error) { return s.Token(), nil }},
		pr.Config{Cluster: "prod", Paths: []string{"clusters/prod/"}, RecheckAfter: time.Second, PendingAfter: time.Second})
	w.act = &Actuator{Writer: w.writer, Forge: gh, Leases: w.store, Now: w.clock.Now, Log: logr.Discard()}
	w.pl = w.pipeline(w.act, w.store)
	return w
}

func (w *world) pipeline(a *Actuator, store pipeline.Store) *pipeline.Pipeline {
	return &pipeline.Pipeline{
		Detector: "expiry", Store: store, Actuator: a, Proposals: a, Reporter: w.ev, Identity: "replica-a",
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
	return lifecycle.Request{Key: key, Target: t, Now: w.clock.Now(), AutoMerge: autoMerge, Group: groupOf(ns),
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
