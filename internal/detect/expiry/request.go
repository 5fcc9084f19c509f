package expiry

import (
	"reflect"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// decideRequest is the pipeline Request of one target, shared by workloads, Namespaces and
// helm releases: the pure Decide over the Lease's state, its warning and done messages as
// Findings with Notices (extension links minted by links, when set).
func decideRequest(key lifecycle.Key, target lifecycle.Target, uid string, now time.Time, policy Policy, settings Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), p Pausable, log logr.Logger) lifecycle.Request {
	req := request(key, target, uid, now, settings, links, p, log, func(State) (Policy, Kept) { return policy, Kept{} })
	// The owner is told when the removal is held (a backup or submission before it failed).
	// Kept lifetimes (VMs) have no step before their quarantine, hence none there.
	req.HeldNotice = &lifecycle.Notice{To: policy.OwnerAddress, Owner: policy.Owner, Target: target}
	return req
}

// PolicyOf is the policy of a target whose lifetime Kustos keeps in its state, given what the
// Lease remembers: the policy, and the lifetime to keep from now on.
type PolicyOf func(State) (Policy, Kept)

// KeptRequest is the pipeline Request of a target whose lifetime lives (also) in its Lease
// (State.Kept): policyOf reads the kept lifetime and what the target says now, and what it
// returns to keep is written back with the rest of the state. Targets whose metadata is never
// lost pass a policyOf that ignores the state (decideRequest). The schedule is Decide's.
func KeptRequest(key lifecycle.Key, target lifecycle.Target, uid string, now time.Time, settings Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), log logr.Logger, policyOf PolicyOf) lifecycle.Request {
	return request(key, target, uid, now, settings, links, Pausable{}, log, policyOf)
}

// Pausable is what a look knows of a target whose lifetime ends in a pause: its spec.replicas
// ("" for everything else: nothing to record or restore), and the resume links of its pause
// notice (nil: none).
type Pausable struct {
	Replicas    string
	ResumeLinks ResumeLinks
}

func request(key lifecycle.Key, target lifecycle.Target, uid string, now time.Time, settings Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), p Pausable, log logr.Logger, policyOf PolicyOf) lifecycle.Request {
	return lifecycle.Request{
		Key: key, Target: target, UID: uid, Now: now,
		Decide: func(v lifecycle.View) lifecycle.Decision {
			st, bad := ParseState(v.Bag)
			detectkit.DroppedState(log, DetectorName, bad)
			policy, kept := policyOf(st)
			st0 := st
			st.Kept = kept
			last := Decide(Snapshot{Now: now, Target: target, UID: uid,
				Policy: policy, State: st, LastDecision: v.LastModified, ProposalOpen: v.ProposalOpen, Declined: v.Declined,
				Proposed: v.Proposed, LeftToPeople: v.LeftToPeople, Settings: settings, Replicas: p.Replicas})
			log.V(1).Info("expiry decided", "next", last.Next, "at", last.At, "deadline", last.Deadline)
			out := lifecycle.Decision{Change: last.Change, RequeueAfter: last.RequeueAfter, Withdraw: last.Withdraw}
			if !reflect.DeepEqual(last.State, st0) || len(bad) > 0 {
				out.Bag = last.State.Bag()
			}
			// A pause notice with resume links goes in place of the plain one.
			rf, paused := resumeFindings(key, target, policy, last, now, p.ResumeLinks, log)
			shown := last
			shown.SendDone = shown.SendDone && !paused
			out.Findings = append(findings(key, target, policy, shown, now, links, log), rf...)
			return out
		},
		Supersedes: Supersedes,
	}
}

// LinkGrace is how long an extension link works after the environment would go: in PR mode its
// removal may wait for room in the pull-request budget or for a reviewer, and until it is merged
// the owner can still keep it (an extension takes it out of the queue or the pull request).
// A link still works once; one used after the removal extends nothing that exists.
const LinkGrace = 7 * 24 * time.Hour
