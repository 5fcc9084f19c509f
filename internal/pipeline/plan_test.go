package pipeline

import "testing"

// TestPlan is the state machine as a table: every (Lease state × proposal state × decision)
// that leads somewhere different, and the step it leads to.
func TestPlan(t *testing.T) {
	pr := func(s situation) situation { s.proposing = true; return s }
	held := func(s situation) situation { s.proposing, s.holder = true, true; return s }
	cases := []struct {
		name string
		s    situation
		want step
	}{
		// Pending decisions, in every mode.
		{"observe: pending of another live replica waits", situation{pending: pendingOtherAlive}, stepWait},
		{"pr: pending of another live replica waits, even with a holder", held(situation{pending: pendingOtherAlive, proposal: proposalClosed}), stepWait},
		{"observe: pending of a replica that is gone is taken over", situation{pending: pendingOtherGone}, stepTakePending},
		{"pr: pending of a replica that is gone is taken over", pr(situation{pending: pendingOtherGone}), stepTakePending},
		{"unreadable pending is dropped", situation{pending: pendingUnreadable, change: true}, stepDropPending},
		{"pr: unreadable pending is dropped", held(situation{pending: pendingUnreadable, proposal: proposalOpen}), stepDropPending},
		{"observe: our pending is replayed", situation{pending: pendingOurs}, stepReplay},
		{"pr: our pending without holder is replayed", pr(situation{pending: pendingOurs}), stepReplay},
		{"pr: our pending, the branch's PR closed since (crash before lock, then a human close)", pr(situation{pending: pendingOurs, closedSincePending: true}), stepDeclined},
		{"pr: our pending update, holder open → replayed", held(situation{pending: pendingOurs, proposal: proposalOpen}), stepReplay},
		{"pr: our pending update, holder closed meanwhile (close during replay)", held(situation{pending: pendingOurs, proposal: proposalClosed}), stepDeclined},
		{"pr: our pending update, holder merged meanwhile", held(situation{pending: pendingOurs, proposal: proposalMerged}), stepMerged},
		{"pr: our pending update, holder gone", held(situation{pending: pendingOurs, proposal: proposalGone}), stepForgetHolder},
		{"pr: our pending update, foreign push on the branch", held(situation{pending: pendingOurs, proposal: proposalOpen, foreignHead: true}), stepForeignHead},

		// Following an open proposal.
		{"merged by a human or by us", held(situation{proposal: proposalMerged}), stepMerged},
		{"closed by a human", held(situation{proposal: proposalClosed}), stepDeclined},
		{"holder names a PR GitHub does not know", held(situation{proposal: proposalGone}), stepForgetHolder},
		{"foreign push is never merged, even clean with auto-merge", held(situation{proposal: proposalOpen, foreignHead: true, mergeable: mergeClean, autoMerge: true}), stepForeignHead},
		{"foreign push is not updated by a larger change", held(situation{proposal: proposalOpen, foreignHead: true, change: true, supersedes: true}), stepForeignHead},
		{"larger change updates the PR", held(situation{proposal: proposalOpen, change: true, supersedes: true, mergeable: mergeClean, autoMerge: true}), stepUpdate},
		{"same change does not update; clean + auto-merge merges", held(situation{proposal: proposalOpen, change: true, mergeable: mergeClean, autoMerge: true}), stepMerge},
		{"clean + auto-merge, the detector holds the merge (its evidence is unknown now): polled", held(situation{proposal: proposalOpen, mergeable: mergeClean, autoMerge: true, holdMerge: true}), stepPoll},
		{"the detector holds the merge, but wants it withdrawn: withdrawn", held(situation{proposal: proposalOpen, mergeable: mergeClean, autoMerge: true, holdMerge: true, withdraw: true}), stepWithdraw},
		{"clean without auto-merge waits for people", held(situation{proposal: proposalOpen, mergeable: mergeClean}), stepPoll},
		{"dirty is rebuilt with auto-merge", held(situation{proposal: proposalOpen, mergeable: mergeDirty, autoMerge: true}), stepRebuild},
		{"dirty is rebuilt without auto-merge", held(situation{proposal: proposalOpen, mergeable: mergeDirty}), stepRebuild},
		{"behind is updated with auto-merge", held(situation{proposal: proposalOpen, mergeable: mergeBehind, autoMerge: true}), stepRebuild},
		{"behind without auto-merge is left to people", held(situation{proposal: proposalOpen, mergeable: mergeBehind}), stepPoll},
		{"checks pending", held(situation{proposal: proposalOpen, mergeable: mergeWaiting, autoMerge: true}), stepPoll},
		{"withdrawn: closed by Kustos", held(situation{proposal: proposalOpen, withdraw: true}), stepWithdraw},
		{"withdrawn: never merged, even clean with auto-merge", held(situation{proposal: proposalOpen, withdraw: true, mergeable: mergeClean, autoMerge: true}), stepWithdraw},
		{"withdrawn, found closed (Kustos closed it, then crashed): unlocked as withdrawn, not declined", held(situation{proposal: proposalClosed, withdraw: true}), stepWithdraw},
		{"withdrawn, found closed with someone else's head (Kustos never closes that one): declined by people", held(situation{proposal: proposalClosed, withdraw: true, foreignHead: true}), stepDeclined},
		{"withdrawn, but merged meanwhile: merged", held(situation{proposal: proposalMerged, withdraw: true}), stepMerged},
		{"withdrawn, but the holder's PR is gone", held(situation{proposal: proposalGone, withdraw: true}), stepForgetHolder},
		{"withdrawn, but someone else pushed to it: left to people", held(situation{proposal: proposalOpen, withdraw: true, foreignHead: true}), stepForeignHead},
		{"withdrawn without a proposal: nothing", pr(situation{withdraw: true}), stepIdle},
		{"withdrawn while our pending decision is replayed first", held(situation{pending: pendingOurs, proposal: proposalOpen, withdraw: true}), stepReplay},

		// Deciding without a proposal.
		{"observe: no change", situation{}, stepIdle},
		{"observe: change", situation{change: true}, stepCommit},
		{"observe: a declined memory does not matter", situation{change: true, declined: true}, stepCommit},
		{"pr: change", pr(situation{change: true}), stepCommit},
		{"pr: declined and not superseded: suppressed", pr(situation{change: true, declined: true}), stepIdle},
		{"pr: declined but superseded: proposed", pr(situation{change: true, declined: true, supersedes: true}), stepCommit},
		{"pr: no change", pr(situation{}), stepIdle},

		// The detector's Bag is written before anything else it asked for.
		{"observe: changed bag is kept before the change", situation{change: true, bagChanged: true}, stepKeepBag},
		{"pr: changed bag is kept before following the proposal", held(situation{proposal: proposalMerged, bagChanged: true}), stepKeepBag},
		{"queued: changed bag is kept before the withdrawal", pr(situation{pending: pendingOurs, queued: true, withdraw: true, bagChanged: true}), stepKeepBag},

		// A decision queued in Kustos (nothing of it reached the forge), in every mode.
		{"queued: withdrawn → dropped", pr(situation{pending: pendingOurs, queued: true, withdraw: true}), stepDropQueued},
		{"observe: queued (removal gate) withdrawn → dropped", situation{pending: pendingOurs, queued: true, withdraw: true}, stepDropQueued},
		{"queued: superseded → replaced", pr(situation{pending: pendingOurs, queued: true, change: true, supersedes: true}), stepReplaceQueued},
		{"queued: same change → tried again", pr(situation{pending: pendingOurs, queued: true, change: true}), stepReplay},
		{"queued: no change → tried again", pr(situation{pending: pendingOurs, queued: true}), stepReplay},
		{"observe: queued, no change → tried again", situation{pending: pendingOurs, queued: true}, stepReplay},

		// A Change was carried out earlier in this Run: no second decision is carried out.
		{"carried: a new change waits for the next look", situation{change: true, carried: true}, stepIdle},
		{"carried: a larger change does not update the PR now", held(situation{proposal: proposalOpen, change: true, supersedes: true, carried: true}), stepIdle},
		{"carried: a rebuild waits for the next poll", held(situation{proposal: proposalOpen, mergeable: mergeDirty, carried: true}), stepPoll},
		{"carried: a merge still goes ahead", held(situation{proposal: proposalOpen, mergeable: mergeClean, autoMerge: true, carried: true}), stepMerge},
		{"carried: a merged proposal is still reported", held(situation{proposal: proposalMerged, carried: true}), stepMerged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan(tc.s); got != tc.want {
				t.Errorf("plan(%+v) = %v, want %v", tc.s, got, tc.want)
			}
		})
	}
}
