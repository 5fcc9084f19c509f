package inactivity

import (
	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// request is the pipeline Request of one gathered target: the pure Decide over the Lease's
// state, its alert and ActivityUnknown findings (Findings), the state to write back when it
// changed.
func (r *Reconciler) request(g gathered, log logr.Logger) lifecycle.Request {
	key := lifecycle.KeyFor(DetectorName, g.target)
	return lifecycle.Request{
		Key: key, Target: g.target, UID: g.uid, Seen: g.seen, Now: g.now, AutoMerge: r.AutoMerge,
		Group: r.Grouping.For(DetectorName, g.target, g.policy.Owner, r.GroupWindow),
		// The owner is told when the termination is held (its submission failed).
		HeldNotice: &lifecycle.Notice{To: g.policy.OwnerAddress, Owner: g.policy.Owner, Target: g.target},
		Decide: func(v lifecycle.View) lifecycle.Decision {
			st, bad := ParseState(v.Bag)
			detectkit.DroppedState(log, DetectorName, bad)
			d := Decide(g.snapshot(v, st, r.Settings))
			log.V(1).Info("inactivity decided", "next", d.Next, "at", d.At, "lastActivity", d.LastActivity, "idleSince", d.IdleSince, "running", g.running, "resourceVersion", g.resourceVersion)
			out := Findings(key, g.target, g.policy, g.act, d, g.now)
			addKeepLinks(&out, r.KeepLinks, key, d, log)
			addPauseNotice(&out, r.ResumeLinks, key, g.target, g.policy, d, g.now, log)
			if d.State == st && len(bad) == 0 {
				out.Bag = nil // unchanged: no write
			}
			return out
		},
		Supersedes: Supersedes,
	}
}
