package group

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// confirmWith gives the world's actuator and pipeline c, whose expiry targets read as w.live.
func (w *world) confirmWith(c *pipeline.Confirmations) {
	c.Register("expiry", func(_ context.Context, key lifecycle.Key) (string, bool, error) {
		p, _ := key.Parts()
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.live[p.Namespace+"/"+p.Name], true, nil
	})
	w.act.Confirm, w.pl.Confirm = c, c
}

func (w *world) newConfirmations() *pipeline.Confirmations {
	return &pipeline.Confirmations{Lease: w.store.Get, Log: testr.NewWithOptions(w.t, testr.Options{Verbosity: 1})}
}

// optOut opts preview n out on the API server; cacheToo says whether the looks' cache has it yet.
func (w *world) optOut(ns string, n int, cacheToo bool) {
	name := fmt.Sprintf("%s/preview-%d", ns, n)
	w.mu.Lock()
	w.live[name] = "opted-out"
	if cacheToo {
		w.cached[name] = "opted-out"
		w.kept[name] = true // what the look decides on the opt-out: withdraw
	}
	w.mu.Unlock()
}

// tryMerge looks at previews with auto-merge once GitHub says the pull request may be merged,
// past the status cache's TTL, and says whether it was merged.
func (w *world) tryMerge(ns string, numbers ...int) bool {
	w.t.Helper()
	number := w.prs()[0].Number
	w.mergeable(lifecycle.Key("test/merge"), number)
	w.clock.Add(11 * time.Second)
	w.lookWith(w.pl, true, ns, numbers...)
	return w.prs()[0].Merged
}

// TestMergeConfirmsEveryTarget: a group's pull request is merged from one member's look, on the
// other members' decisions, each made on its own look's cache. Before the merge, every target
// the merged commit changes is read again from the API server (Confirm): a member whose owner
// opted it out while this replica's cache was behind (after an API server restart its watch
// comes back only after a backoff), or whose Lease moved, keeps the merge waiting until its own
// look has decided on what the API server has.
func TestMergeConfirmsEveryTarget(t *testing.T) {
	rows := []struct {
		name string
		// confirm: the actuator confirms; act runs after the pull request of previews 1–3 opened.
		confirm bool
		act     func(w *world)
	}{
		{"every target as its look read it: merged", true, func(w *world) {
			if !w.tryMerge("team-a", 1) {
				w.t.Fatalf("not merged: %+v", w.prs()[0])
			}
			w.onlyPR("team-a", 1, 2, 3)
		}},
		{"a member opted out, this replica's cache behind: the merge waits; its look withdraws it; the rest merges", true, func(w *world) {
			w.optOut("team-a", 2, false)
			w.look("team-a", 2) // the stale cache: still due, agrees with the proposal
			if w.tryMerge("team-a", 1) || w.tryMerge("team-a", 3) {
				w.t.Fatalf("merged with preview-2 opted out on the API server: %+v", w.prs()[0])
			}
			w.optOut("team-a", 2, true) // the watch is back
			w.look("team-a", 2)
			w.onlyPR("team-a", 1, 3)
			if !w.tryMerge("team-a", 1, 3) {
				w.t.Fatalf("not merged once preview-2 was out: %+v", w.prs()[0])
			}
			if !w.onMain("team-a", 2) || w.onMain("team-a", 1) {
				w.t.Errorf("on main: preview-1 %v, preview-2 %v; want only preview-2 kept", w.onMain("team-a", 1), w.onMain("team-a", 2))
			}
		}},
		{"the same without confirmation: the stale looks merge the opted-out member (why Confirm is there)", false, func(w *world) {
			w.optOut("team-a", 2, false)
			w.look("team-a", 2)
			if !w.tryMerge("team-a", 1) {
				w.t.Fatalf("not merged: %+v", w.prs()[0])
			}
			if w.onMain("team-a", 2) {
				w.t.Errorf("preview-2 kept: this row no longer shows the stale merge")
			}
		}},
		{"a member's Lease moved since its look agreed (an extension another replica recorded): the merge waits for its look", true, func(w *world) {
			key2 := lifecycle.KeyFor("expiry", target("team-a", "preview-2"))
			rec, err := w.store.Get(context.Background(), key2)
			if err != nil {
				w.t.Fatal(err)
			}
			if _, err := w.store.SetBag(context.Background(), rec, map[string]string{"extended": "until tomorrow"}); err != nil {
				w.t.Fatal(err)
			}
			w.keep("team-a", 2)
			if w.tryMerge("team-a", 1) {
				w.t.Fatalf("merged past preview-2's moved Lease: %+v", w.prs()[0])
			}
			w.look("team-a", 2)
			w.onlyPR("team-a", 1, 3)
			if !w.tryMerge("team-a", 1) {
				w.t.Fatalf("not merged once preview-2 was out: %+v", w.prs()[0])
			}
		}},
		{"a new process: no look of it has agreed to the members yet; the merge waits for theirs", true, func(w *world) {
			w.confirmWith(w.newConfirmations())
			if w.tryMerge("team-a", 1) {
				w.t.Fatalf("merged before preview-2 and preview-3 were looked at: %+v", w.prs()[0])
			}
			w.look("team-a", 2, 3)
			if !w.tryMerge("team-a", 1) {
				w.t.Fatalf("not merged once every member agreed: %+v", w.prs()[0])
			}
			w.onlyPR("team-a", 1, 2, 3)
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			if row.confirm {
				w.confirmWith(w.newConfirmations())
			}
			w.look("team-a", 1, 2, 3)
			w.clock.Add(window)
			w.look("team-a", 1, 2, 3)
			w.onlyPR("team-a", 1, 2, 3)
			row.act(w)
		})
	}
}

var _ pipeline.Dequeuer = (*Actuator)(nil)

// TestDroppedQueuedMemberLeavesThePR: the soak's finding (its run 8). Previews 1–3 gather; when
// the window ends, preview-1's look proposes the group, with the pending Changes of all three
// (their own looks have not come yet). Preview-2's owner has opted it out meanwhile: its look
// drops its queued decision, and must take its Change out of the group's pull request too, or
// preview-1's auto-merge removes it. Before the fix, the drop cleared only preview-2's own Lease.
func TestDroppedQueuedMemberLeavesThePR(t *testing.T) {
	for _, confirm := range []bool{false, true} {
		t.Run(map[bool]string{false: "the looks alone", true: "with the confirmation of merges, as in PR mode"}[confirm], func(t *testing.T) {
			droppedQueuedMember(t, confirm)
		})
	}
}

func droppedQueuedMember(t *testing.T, confirm bool) {
	w := newWorld(t)
	if confirm {
		w.confirmWith(w.newConfirmations())
	}
	w.look("team-a", 1, 2, 3)
	w.clock.Add(window)
	w.look("team-a", 1) // proposes every member's pending Change
	w.onlyPR("team-a", 1, 2, 3)
	if r := w.lease("team-a", 2); r.Pending == "" || r.Holder != "" {
		t.Fatalf("preview-2's Lease %+v: want its decision still queued, no holder", r)
	}
	w.keep("team-a", 2)
	w.look("team-a", 2)
	p := w.onlyPR("team-a", 1, 3)
	if r := w.lease("team-a", 2); r.Pending != "" || r.Holder != "" {
		t.Errorf("preview-2's Lease %+v: want nothing pending, no holder", r)
	}
	if g := w.groupLease("team-a"); len(g.Members) != 2 {
		t.Errorf("group members %v, want preview-1 and preview-3", g.Members)
	}
	if n := w.ev.count(pipeline.ReasonWithdrawn); n != 1 {
		t.Errorf("%d ProposalWithdrawn Events, want 1 (the queued decision dropped): %v", n, w.ev.log)
	}
	if len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "preview-2") {
		t.Errorf("comments on #%d: %q, want one saying preview-2 was taken out", p.Number, p.Comments)
	}
	w.look("team-a", 3)
	if !w.tryMerge("team-a", 1, 3) {
		t.Fatalf("not merged: %+v", w.prs()[0])
	}
	if !w.onMain("team-a", 2) {
		t.Error("preview-2, opted out, was removed by the group's merge")
	}
}

// personsGroupPR opens the group pull request of previews 1 and 2 of team-a, has a person push
// onto it, and moves the clock past the status cache.
func personsGroupPR(t *testing.T) (*world, githubtest.PullRequest) {
	t.Helper()
	w := newWorld(t)
	w.look("team-a", 1, 2)
	w.clock.Add(window)
	w.look("team-a", 1, 2)
	p := w.onlyPR("team-a", 1, 2)
	w.s.PushBaseCommit(owner, repo, p.Head, "a person's fix", map[string]string{"NOTES.md": "mine\n"})
	w.clock.Add(11 * time.Second)
	return w, p
}

// TestForeignGroupHeadSparesClusterOnlyMembers: the smoke's finding (CI, 20261129). A person
// pushed onto a Cleaner's group pull request; a removal that Git holds nothing of (a target
// only in the cluster, here preview-9, which has no manifest) then joined, and its join was
// refused with the person's head (ForeignCommit): its decision was dropped and the target never
// deleted. It needs no pull request: it goes on as any member Git has nothing of does (already
// in the base, which the actuator in front deletes directly), and the person's pull request is
// left to them.
func TestForeignGroupHeadSparesClusterOnlyMembers(t *testing.T) {
	w, p := personsGroupPR(t)
	if _, err := w.pl.Run(context.Background(), w.request("team-a", "preview-9", false)); err != nil {
		t.Fatal(err)
	}
	if rec := w.lease("team-a", 9); rec.Pending != "" || rec.Holder != "" {
		t.Errorf("preview-9's Lease %+v: want its Change carried (nothing of it in Git), not pending or held", rec)
	}
	if n := w.ev.warned(pipeline.ReasonForeignCommit); n != 0 {
		t.Errorf("%d ForeignCommit Warnings for a Change that needs no pull request", n)
	}
	if q, _ := w.s.PR(owner, repo, p.Number); q.State != "open" || q.Head != p.Head {
		t.Errorf("the person's pull request #%d: %s on %s, want left open to them", p.Number, q.State, q.Head)
	}
}

// TestForeignGroupHeadIsFollowed: the same pull request, taken over by a person, and a removal
// Git holds (preview-3) joining after the push. Its join is refused, but its Change is not
// dropped: it waits on the person's pull request, left to people (one ForeignCommit Warning,
// nothing merged or pushed by Kustos), and the person's close is its decline — what a Cleaner
// reports as CleanupBlocked. Before, the Change was dropped and the close told nobody.
func TestForeignGroupHeadIsFollowed(t *testing.T) {
	w, p := personsGroupPR(t)
	w.lookWith(w.pl, true, "team-a", 3)
	if r := w.lease("team-a", 3); r.Holder != state.HolderOf(p.Number) || r.Head != lifecycle.HeadOfPeople {
		t.Fatalf("preview-3's Lease %+v: want it waiting on #%d with no head of Kustos's", r, p.Number)
	}
	w.clock.Add(11 * time.Second)
	w.lookWith(w.pl, true, "team-a", 1, 2, 3)
	if q, _ := w.s.PR(owner, repo, p.Number); q.State != "open" || q.Merged {
		t.Fatalf("#%d %s (merged %v): Kustos acted on a pull request left to people", p.Number, q.State, q.Merged)
	}
	if n := w.ev.warned(pipeline.ReasonForeignCommit); n == 0 {
		t.Errorf("no ForeignCommit Warning: %v", w.ev.log)
	}
	w.s.ClosePR(owner, repo, p.Number)
	w.clock.Add(11 * time.Second)
	w.look("team-a", 3)
	if r := w.lease("team-a", 3); r.Holder != "" || r.ClosedValues == "" {
		t.Errorf("preview-3's Lease %+v: want the person's close recorded as its decline", r)
	}
}
