package group

import (
	"container/heap"
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// simClock is simulated time for the burst benchmark: the GitHub client's pacing sleeps on it
// (advancing it), and the test server counts its secondary limits by it, so hours of GitHub's
// limits pass in seconds while every request, Git object and Lease write is real.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advanceTo(c.Now().Add(d))
	return ctx.Err()
}

func (c *simClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// look is one target's next look in the simulation.
type look struct {
	at  time.Time
	idx int
}

type looks []look

func (l looks) Len() int           { return len(l) }
func (l looks) Less(i, j int) bool { return l[i].at.Before(l[j].at) }
func (l looks) Swap(i, j int)      { l[i], l[j] = l[j], l[i] }
func (l *looks) Push(x any)        { *l = append(*l, x.(look)) }
func (l *looks) Pop() any {
	old := *l
	x := old[len(old)-1]
	*l = old[:len(old)-1]
	return x
}

// burst is one run of the burst scenario.
type burst struct {
	grouped          bool
	maxOpen, perHour int
	limit            time.Duration // simulated time the run may take
}

type burstResult struct {
	prs, proposed, queued, secondary, requests int
	allProposedAfter                           time.Duration // simulated; 0 when not all were proposed
	wall                                       time.Duration
}

const (
	burstNamespaces = 10
	burstPerNS      = 50
)

// seedBurst writes 500 previews, one file each, in 10 namespaces' directories.
func seedBurst(b *testing.B) string {
	dir := b.TempDir()
	write := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	root := "resources:\n"
	for n := 0; n < burstNamespaces; n++ {
		ns := fmt.Sprintf("team-%02d", n)
		root += "  - " + ns + "\n"
		kust := "namespace: " + ns + "\nresources:\n"
		for i := 0; i < burstPerNS; i++ {
			name := fmt.Sprintf("preview-%02d", i)
			kust += "  - " + name + ".yaml\n"
			write("clusters/prod/"+ns+"/"+name+".yaml", "# preview "+name+", created by CI\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: "+name+
				"\n  annotations:\n    kustos.io/owner: ci@example.com\n    kustos.io/ttl: 3d\nspec:\n  replicas: 1\n")
		}
		write("clusters/prod/"+ns+"/kustomization.yaml", kust)
	}
	write("clusters/prod/kustomization.yaml", root)
	return dir
}

// runBurst proposes the removal of 500 previews that fall due in the same minute, through the
// real pipeline, PR actuator, state Leases and a GitHub-compatible server enforcing GitHub's
// secondary limits, until every removal is proposed or the simulated limit passes.
func runBurst(b *testing.B, repoDir string, o burst) burstResult {
	ctx := context.Background()
	clock := &simClock{t: t0}
	s := githubtest.New(b, githubtest.Options{Now: clock.Now})
	s.SeedRepoFromDir(owner, repo, "main", repoDir)
	tok := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(s.Token()), 0o600); err != nil {
		b.Fatal(err)
	}
	// Kustos's own client, as PR mode builds it: default pacing, on simulated time.
	gh, err := github.NewClient(github.Config{APIURL: s.URL(), TokenFile: tok, Repository: owner + "/" + repo}, github.WithClock(clock))
	if err != nil {
		b.Fatal(err)
	}
	nsCount++
	stateNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d-%d", os.Getpid()%10000, nsCount)}}
	if err := k8s.Create(ctx, stateNS); err != nil {
		b.Fatal(err)
	}
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: stateNS.Name, Identity: "bench"}
	w := pr.NewWriter(gh, &pr.GitRepo{URL: s.GitURL(owner, repo), Branch: "main",
		Token: func(context.Context) (string, error) { return s.Token(), nil }}, pr.Config{Cluster: "prod", Paths: []string{"clusters/prod/"}})
	a := &Actuator{Writer: w, Forge: gh, Leases: store, Now: clock.Now, Log: logr.Discard()}
	if o.maxOpen > 0 || o.perHour > 0 {
		a.Budget = &Budget{Counter: gh, HeadPrefix: w.BranchPrefix(), MaxOpen: o.maxOpen, MaxPerHour: o.perHour, Now: clock.Now}
	}
	ev := &events{ids: map[string]bool{}}
	pl := &pipeline.Pipeline{Detector: "expiry", Store: store, Actuator: a, Proposals: a, Reporter: ev, Identity: "bench",
		Vocab: lifecycle.Vocabulary{Proposed: "ExpiryProposed", Merged: "ExpiryMerged", Declined: "ExpiryDeclined"}, PollInterval: time.Minute, Log: logr.Discard()}

	type tgt struct {
		t      lifecycle.Target
		c      lifecycle.Change
		g      lifecycle.Group
		doneAt time.Time
	}
	var ts []*tgt
	q := &looks{}
	for n := 0; n < burstNamespaces; n++ {
		for i := 0; i < burstPerNS; i++ {
			t := target(fmt.Sprintf("team-%02d", n), fmt.Sprintf("preview-%02d", i))
			x := &tgt{t: t, c: lifecycle.Change{Key: lifecycle.KeyFor("expiry", t), Detector: "expiry", Target: t, Edit: lifecycle.Edit{Op: lifecycle.EditDelete},
				Reason: "ExpiryDue", Summary: t.String() + " expired; removing it"}}
			if o.grouped {
				x.g = lifecycle.GroupByNamespace.For("expiry", t, "ci@example.com", 2*time.Minute)
			}
			// Due in the same minute, in creation order.
			heap.Push(q, look{at: t0.Add(time.Duration(len(ts)) * time.Minute / (burstNamespaces * burstPerNS)), idx: len(ts)})
			ts = append(ts, x)
		}
	}
	start := time.Now()
	var res burstResult
	for q.Len() > 0 {
		l := heap.Pop(q).(look)
		if l.at.Sub(t0) > o.limit {
			break
		}
		clock.advanceTo(l.at)
		x := ts[l.idx]
		now := clock.Now()
		c := x.c
		out, err := pl.Run(ctx, lifecycle.Request{Key: c.Key, Target: x.t, Now: now, Group: x.g,
			Decide: func(v lifecycle.View) lifecycle.Decision {
				if v.ProposalOpen {
					return lifecycle.Decision{}
				}
				return lifecycle.Decision{Change: &c}
			}})
		rec, gerr := store.Get(ctx, c.Key)
		if gerr != nil {
			b.Fatal(gerr)
		}
		if rec.Holder != "" {
			x.doneAt = clock.Now()
			res.proposed++
			continue
		}
		next := out.RequeueAfter
		if err != nil || next <= 0 {
			next = 5 * time.Second // the controller's backoff
		}
		heap.Push(q, look{at: clock.Now().Add(next), idx: l.idx})
	}
	res.wall = time.Since(start)
	for _, x := range ts {
		if x.doneAt.After(t0.Add(res.allProposedAfter)) {
			res.allProposedAfter = x.doneAt.Sub(t0)
		}
	}
	if res.proposed < len(ts) {
		res.allProposedAfter = 0
	}
	res.queued = ev.count(pipeline.ReasonQueued)
	res.prs = len(s.PRs(owner, repo))
	res.secondary = s.SecondaryLimited()
	res.requests = len(s.Requests())
	return res
}

// BenchmarkBurst: 500 previews in 10 namespaces fall due in the same minute (one CI run's).
// Grouped by namespace (the default), against GitHub's secondary limits; and one pull request
// per target under the default budget, and without a budget, for comparison. Reported: pull
// requests opened, targets proposed, simulated minutes until every removal was proposed (0:
// not within the run's limit), secondary-limit answers met, REST calls per target, ProposalQueued
// Events. Time is simulated (hours of GitHub's limits pass in seconds); requests, Git objects
// and Lease writes are real.
func BenchmarkBurst(b *testing.B) {
	repoDir := seedBurst(b)
	for _, tc := range []struct {
		name string
		o    burst
	}{
		{"group-by=namespace", burst{grouped: true, maxOpen: 10, perHour: 20, limit: time.Hour}},
		{"group-by=none,budget=10open,20perhour", burst{maxOpen: 10, perHour: 20, limit: 10 * time.Minute}},
		{"group-by=none,no-budget", burst{limit: 12 * time.Hour}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var r burstResult
			for i := 0; i < b.N; i++ {
				r = runBurst(b, repoDir, tc.o)
			}
			b.ReportMetric(float64(r.prs), "prs")
			b.ReportMetric(float64(r.proposed), "proposed")
			b.ReportMetric(r.allProposedAfter.Minutes(), "sim-min-to-all")
			b.ReportMetric(float64(r.secondary), "secondary-answers")
			b.ReportMetric(float64(r.requests)/float64(burstNamespaces*burstPerNS), "rest-calls/target")
			b.ReportMetric(float64(r.queued), "queued-events")
			b.ReportMetric(r.wall.Seconds(), "wall-s")
		})
	}
}
