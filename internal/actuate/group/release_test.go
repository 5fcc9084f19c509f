package group

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestReleasePendingPR: the namespace of a target is gone. Release closes the pull request its
// Lease holds, and also the one a replica opened for a pending decision and crashed before the
// Lease could name it (no holder, the decision still pending): nothing else would ever close
// it. A pending decision with no pull request, and a Lease with neither, close nothing.
func TestReleasePendingPR(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	m := &Mode{Writer: w.writer, GitHub: w.gh}
	change := func(name string) lifecycle.Change {
		return *w.request("team-a", name, false).Decide(lifecycle.View{}).Change
	}
	pending := func(c lifecycle.Change) state.Record {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return state.Record{Key: c.Key, Pending: string(b)}
	}
	crashed := change("preview-1") // opened, then the replica died before the Lease named it
	res, err := w.writer.Propose(ctx, crashed, pr.ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := change("preview-2")
	res2, err := w.writer.Propose(ctx, held, pr.ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rec    state.Record
		closed int
	}{
		{"pending decision, its PR open", pending(crashed), res.Number},
		{"holder", state.Record{Key: held.Key, Holder: state.HolderOf(res2.Number)}, res2.Number},
		{"pending decision, no PR", pending(change("preview-3")), 0},
		{"nothing pending, no holder", state.Record{Key: change("preview-4").Key}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.Release(ctx, tc.rec); err != nil {
				t.Fatal(err)
			}
			if tc.closed == 0 {
				return
			}
			if p, ok := w.s.PR(owner, repo, tc.closed); !ok || p.State != "closed" || p.Merged {
				t.Errorf("PR #%d: %+v, want closed unmerged", tc.closed, p)
			}
		})
	}
	for _, p := range w.s.PRs(owner, repo) {
		if p.State == "closed" && p.Number != res.Number && p.Number != res2.Number {
			t.Errorf("PR #%d closed, which no released Lease proposed", p.Number)
		}
	}
}

// TestReleaseNamespaceGroupPR: a namespace group's pull request that no Lease names (its replica
// crashed before recording it, or the namespace's sweep deleted the group's Lease while it was
// being opened) is closed once the namespace is gone; another namespace's group keeps its own.
func TestReleaseNamespaceGroupPR(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	m := &Mode{Writer: w.writer, GitHub: w.gh, ByNamespace: []string{"expiry", "inactivity"}}
	open := func(ns string) int {
		t.Helper()
		c := *w.request(ns, "preview-1", false).Decide(lifecycle.View{}).Change
		res, err := w.writer.ProposeGroup(ctx, groupOf(ns), []pr.Member{{Change: c}}, "")
		if err != nil || res.Number == 0 {
			t.Fatalf("opening the group PR of %s: %+v, %v", ns, res, err)
		}
		return res.Number
	}
	gone, stays := open("team-a"), open("team-b")
	// A Cleaner's group too, one per Cleaner: found by its branch (the soak saw one left open).
	openCleaner := func(ns, name string) int {
		t.Helper()
		c := *w.request(ns, "preview-2", false).Decide(lifecycle.View{}).Change
		c.Detector, c.Key = lifecycle.CleanerGroupDetector, lifecycle.KeyFor(lifecycle.CleanerGroupDetector, c.Target)
		g := lifecycle.Group{Key: lifecycle.CleanerGroupKey(ns, name), Label: "Cleaner " + ns + "/" + name, Namespace: ns, Window: window}
		res, err := w.writer.ProposeGroup(ctx, g, []pr.Member{{Change: c}}, "")
		if err != nil || res.Number == 0 {
			t.Fatalf("opening the pull request of Cleaner %s/%s: %+v, %v", ns, name, res, err)
		}
		return res.Number
	}
	cleanerGone, cleanerStays := openCleaner("team-a", "c-1"), openCleaner("team-b", "c-1")
	if err := m.ReleaseNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{gone, cleanerGone} {
		if p, _ := w.s.PR(owner, repo, n); p.State != "closed" || p.Merged {
			t.Errorf("PR #%d of the gone namespace: %s (merged %v), want closed unmerged", n, p.State, p.Merged)
		}
	}
	if p, _ := w.s.PR(owner, repo, cleanerStays); p.State != "open" {
		t.Errorf("PR #%d of another namespace's Cleaner: %s, want open", cleanerStays, p.State)
	}
	if p, _ := w.s.PR(owner, repo, stays); p.State != "open" {
		t.Errorf("PR #%d of another namespace: %s, want open", stays, p.State)
	}
	// Again, and for a namespace without a group PR: nothing to close, no error.
	if err := m.ReleaseNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	if err := m.ReleaseNamespace(ctx, "team-c"); err != nil {
		t.Fatal(err)
	}
	// team-b goes too, but a person pushed onto its PR: it is theirs, left open.
	p, _ := w.s.PR(owner, repo, stays)
	w.s.PushBaseCommit(owner, repo, p.Head, "a person's fix", map[string]string{"NOTES.md": "mine\n"})
	if err := m.ReleaseNamespace(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	if p, _ := w.s.PR(owner, repo, stays); p.State != "open" {
		t.Errorf("PR #%d, which a person pushed onto: %s, want left open to people", stays, p.State)
	}
}
