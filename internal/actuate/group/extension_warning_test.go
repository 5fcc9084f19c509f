package group

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// TestExtensionWarnsBeforeNewDeadline runs the expiry detector's own schedule over the real
// pipeline, actuator and GitHub-compatible server: a preview is warned about and its removal
// proposed, then its owner extends it through a link. Whether the new deadline is being written
// back on the removal's branch, or cannot be because a person pushed onto that pull request
// (left to people), the owner is warned again before the new deadline.
func TestExtensionWarnsBeforeNewDeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pushed bool
	}{
		{"the write-back replaces the removal", false},
		{"a person pushed onto the removal: left to people, no write-back", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t)
			a := w.replica("replica-a")
			tg := target("team-a", "preview-1")
			key := lifecycle.KeyFor(expiry.DetectorName, tg)
			deadline := t0.Add(2 * time.Hour)
			settings := expiry.Settings{WarningBefore: time.Hour, NotificationInterval: time.Minute, CarriesOut: true}
			policy := expiry.Policy{Owner: "ana", OwnerAddress: "ana@example.com", Deadline: deadline, From: "annotation kustos.io/expires-at"}
			look := func(at time.Time) {
				t.Helper()
				w.clock.Add(at.Sub(w.clock.Now()))
				req := expiry.KeptRequest(key, tg, "uid-1", at, settings, nil, logr.Discard(),
					func(expiry.State) (expiry.Policy, expiry.Kept) { return policy, expiry.Kept{} })
				if _, err := a.pl.Run(ctx, req); err != nil {
					t.Fatalf("look at %s: %v", at.Format(time.TimeOnly), err)
				}
			}
			warnings := func() int { return w.ev.count(expiry.ReasonExpiryWarning) }

			look(deadline.Add(-time.Hour + time.Second)) // the warning
			if warnings() != 1 {
				t.Fatalf("%d warnings before the deadline, want 1: %q", warnings(), w.ev.log)
			}
			look(deadline.Add(time.Second)) // the removal
			prs := w.prs()
			if len(prs) != 1 || prs[0].State != "open" {
				t.Fatalf("pull requests %+v, want the removal open", prs)
			}
			if tc.pushed {
				w.s.PushBaseCommit(owner, repo, prs[0].Head, "a reviewer's note", map[string]string{"notes/review.md": "Reviewed by a human.\n"})
				look(deadline.Add(2 * time.Second))
				if c := w.ev.warned(pipeline.ReasonForeignCommit); c != 1 {
					t.Fatalf("%d %s Warnings, want 1: %q", c, pipeline.ReasonForeignCommit, w.ev.log)
				}
			}

			// The owner's extension through a link, as the extension server records it.
			extendedAt, until := deadline.Add(3*time.Second), deadline.Add(24*time.Hour)
			rec := w.lease("team-a", 1)
			st, _ := expiry.ParseState(rec.Bag)
			st.ExtendedUntil, st.ExtendedAt = until, extendedAt
			if _, err := w.store.SetBag(ctx, rec, st.Bag()); err != nil {
				t.Fatal(err)
			}
			look(extendedAt.Add(time.Second))
			look(until.Add(-time.Hour + time.Second)) // the new deadline's warning is due
			look(until.Add(-time.Hour + 2*time.Second))

			if warnings() != 2 {
				t.Errorf("%d warnings, want a second one before the new deadline %s: %q", warnings(), until, w.ev.log)
			}
			p, _ := w.s.PR(owner, repo, prs[0].Number)
			if p.State != "open" || w.ev.count(pipeline.ReasonWithdrawn) != 0 || len(w.prs()) != 1 {
				t.Errorf("#%d %s, %d pull requests, events %q; want the one pull request open", p.Number, p.State, len(w.prs()), w.ev.log)
			}
			if _, onBranch := w.s.FileAt(owner, repo, p.Head, "clusters/prod/team-a/preview-1.yaml"); onBranch == tc.pushed {
				t.Errorf("the preview's manifest on #%d's branch: %v; want the write-back (kept) only without the person's push", p.Number, onBranch)
			}
		})
	}
}
