package group

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// replica is one Kustos process in PR mode with --group-by=none: its own GitHub client (and
// ETag cache), Writer (and its caches), Actuator and pipeline, over the world's Leases and
// GitHub. A replica that takes over from a killed one starts with every cache empty.
type replica struct {
	gh     *github.Client
	writer *pr.Writer
	act    *Actuator
	pl     *pipeline.Pipeline
}

func (w *world) replica(identity string) *replica {
	w.t.Helper()
	tok := filepath.Join(w.t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(w.s.Token()), 0o600); err != nil {
		w.t.Fatal(err)
	}
	gh, err := github.NewClient(github.Config{APIURL: w.s.URL(), TokenFile: tok, Repository: owner + "/" + repo},
		github.WithMaxRetries(0), github.WithMutationInterval(0))
	if err != nil {
		w.t.Fatal(err)
	}
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: w.store.Namespace, Identity: identity}
	writer := pr.NewWriter(gh, &pr.GitRepo{URL: w.s.GitURL(owner, repo), Branch: "main",
		Token: func(context.Context) (string, error) { return w.s.Token(), nil }},
		pr.Config{Cluster: "prod", Paths: []string{"clusters/prod/"}, RecheckAfter: time.Second, PendingAfter: time.Second})
	act := &Actuator{Writer: writer, Forge: gh, Leases: store, Now: w.clock.Now, Log: logr.Discard()}
	pl := w.pipeline(act, store)
	pl.Identity = identity
	return &replica{gh: gh, writer: writer, act: act, pl: pl}
}

// soloRequest is world.request with the zero Group (--group-by=none): a pull request of the
// preview's own. As the expiry detector's, its withdrawal follows the removal proposed (the
// holder's, open or closed), and bag is the memory it asks to keep with it (an extension
// recorded).
func (w *world) soloRequest(ns string, n int, bag map[string]string) lifecycle.Request {
	req := w.request(ns, fmt.Sprintf("preview-%d", n), false)
	req.Group = lifecycle.Group{}
	decide := req.Decide
	req.Decide = func(v lifecycle.View) lifecycle.Decision {
		w.mu.Lock()
		kept := w.kept[fmt.Sprintf("%s/preview-%d", ns, n)]
		w.mu.Unlock()
		if kept && v.Proposed != nil {
			return lifecycle.Decision{Withdraw: "its owner extended it", Bag: bag}
		}
		return decide(v)
	}
	return req
}

// TestForeignHeadNotWithdrawn replays the soak's finding on the real actuator: a person pushes
// a commit onto the branch of Kustos's removal PR, the leader reports the foreign head, its
// owner extends the preview (the detector withdraws the removal), the leader is killed, and the
// next leader's first look (keeping the detector's memory first) must leave the PR to people:
// never closed by Kustos, and never said to be.
func TestForeignHeadNotWithdrawn(t *testing.T) {
	const (
		leftOpen   = "left open"
		closedByIt = "closed by the person"
		failedOnce = "after a withdrawal whose close failed"
		cachedOnce = "read just before the push"
	)
	for _, tc := range []struct {
		name string
		// then is what the person does after the push: leave the PR open, or close it (the soak's
		// human closes a PR it pushed to 45 s later). failedOnce: the owner's extension came
		// first and Kustos's close of the PR was refused before the person pushed. cachedOnce:
		// a look read the PR (the status cache keeps it StatusTTL) just before the push, and the
		// extension comes before any look reads it again.
		then string
	}{
		{"a PR a person pushed onto stays open, left to people, on the next leader too", leftOpen},
		{"a PR a person pushed onto and then closed is declined by that person, not withdrawn by Kustos", closedByIt},
		{"a withdrawal refused by GitHub, then a person's push: its retry leaves the PR to people", failedOnce},
		{"a person's push right after a look, then the owner's extension: the withdrawal leaves the PR to people", cachedOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t)
			a := w.replica("replica-a")
			look := func(r *replica, bag map[string]string) error {
				t.Helper()
				w.clock.Add(time.Second)
				_, err := r.pl.Run(ctx, w.soloRequest("team-a", 1, bag))
				return err
			}
			extended := map[string]string{"extended-until": "later"}
			if err := look(a, nil); err != nil {
				t.Fatal(err)
			}
			prs := w.prs()
			if len(prs) != 1 || prs[0].State != "open" {
				t.Fatalf("pull requests %+v, want one open", prs)
			}
			p := prs[0]
			if tc.then == failedOnce {
				w.keep("team-a", 1)
				w.s.Inject(githubtest.FaultSpec{Method: "PATCH", PathPattern: "/repos/{owner}/{repo}/pulls/{pull_number}", Status: 502})
				if err := look(a, extended); err == nil {
					t.Fatal("the withdrawal's close was refused, yet the look succeeded")
				}
			}
			if tc.then == cachedOnce {
				// Twice: GitHub's first answer after a change computes mergeability, and only a
				// computed one is cached.
				for range 2 {
					if err := look(a, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			human := w.s.PushBaseCommit(owner, repo, p.Head, "a reviewer's note", map[string]string{"notes/review.md": "Reviewed by a human.\n"})
			if tc.then == cachedOnce {
				w.keep("team-a", 1)
			}
			if err := look(a, extended); err != nil {
				t.Fatal(err)
			}
			if tc.then == cachedOnce {
				// The withdrawal found the person's head and did not close; this look reports it.
				if err := look(a, extended); err != nil {
					t.Fatal(err)
				}
			}
			if c := w.ev.warned(pipeline.ReasonForeignCommit); c != 1 {
				t.Fatalf("%d %s Warnings after the push, want 1: %q", c, pipeline.ReasonForeignCommit, w.ev.log)
			}
			w.keep("team-a", 1)
			if err := look(a, extended); err != nil {
				t.Fatal(err)
			}
			if tc.then == closedByIt {
				w.s.ClosePR(owner, repo, p.Number)
			}
			// Replica a is killed; b takes the lease and looks at once, keeping the detector's
			// memory first.
			b := w.replica("replica-b")
			if err := look(b, map[string]string{"extended-until": "later", "seen": "b"}); err != nil {
				t.Fatal(err)
			}

			got, _ := w.s.PR(owner, repo, p.Number)
			// The close refused before the push left its comment (ClosePR comments first).
			closing := 0
			if tc.then == failedOnce {
				closing = 1
			}
			if got.HeadSHA != human || w.ev.count(pipeline.ReasonWithdrawn) != 0 || closingComments(got.Comments) != closing {
				t.Errorf("#%d %s head %s (the person's %s), comments %q, %d %s Events; want it left to people\n%q",
					p.Number, got.State, got.HeadSHA, human, got.Comments, w.ev.count(pipeline.ReasonWithdrawn), pipeline.ReasonWithdrawn, w.ev.log)
			}
			r := w.lease("team-a", 1)
			switch tc.then {
			case closedByIt:
				if got.State != "closed" || r.Holder != "" || r.ClosedValues == "" || w.ev.count("ExpiryDeclined") != 1 {
					t.Errorf("#%d %s, Lease %+v, events %q; want it unlocked as declined by the person", p.Number, got.State, r, w.ev.log)
				}
			default:
				if got.State != "open" || r.Holder != state.HolderOf(p.Number) {
					t.Errorf("#%d %s, Lease %+v; want it open and still held", p.Number, got.State, r)
				}
			}
		})
	}
}

// closingComments counts the comments Kustos leaves when it closes a pull request.
func closingComments(comments []string) int {
	n := 0
	for _, c := range comments {
		if strings.HasPrefix(c, "Kustos closes this pull request") {
			n++
		}
	}
	return n
}

// TestReleaseLeavesPersonsPR: the namespace of a target is gone and its Lease is swept, but a
// person pushed onto the pull request its Lease holds: Release leaves it open to people (no
// comment, not closed), and the sweep goes on. Kustos's own is closed as before.
func TestReleaseLeavesPersonsPR(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	m := &Mode{Writer: w.writer, GitHub: w.gh}
	for _, tc := range []struct {
		name    string
		pushed  bool
		wantOpn bool
	}{
		{"Kustos's own head: closed", false, false},
		{"a person's commit on it: left open to people", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *w.soloRequest("team-a", map[bool]int{false: 1, true: 2}[tc.pushed], nil).Decide(lifecycle.View{}).Change
			res, err := w.writer.Propose(ctx, c, pr.ProposeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.pushed {
				w.s.PushBaseCommit(owner, repo, res.Branch, "a reviewer's note", map[string]string{"notes/review.md": "Reviewed by a human.\n"})
			}
			if err := m.Release(ctx, state.Record{Key: c.Key, Holder: state.HolderOf(res.Number), Head: res.HeadSHA}); err != nil {
				t.Fatalf("Release: %v", err)
			}
			p, _ := w.s.PR(owner, repo, res.Number)
			if open := p.State == "open"; open != tc.wantOpn || tc.wantOpn && closingComments(p.Comments) != 0 {
				t.Errorf("#%d %s, comments %q; want open %v", res.Number, p.State, p.Comments, tc.wantOpn)
			}
		})
	}
}
