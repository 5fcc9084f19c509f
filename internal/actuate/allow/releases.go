package allow

import (
	"context"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Applier carries out a Change (the pipeline's Actuator).
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

// ReleaseRemovals puts helm uninstalls under the same Policy as the direct actuator's
// deletions: a Change whose Target is a helm release (lifecycle.IsRelease; a Change for one can
// only be its removal) goes on to Next only when Allow lets its detector delete
// ReleaseResource (--allow=expiry:delete:helm.sh/releases, cleaner:delete:helm.sh/releases);
// otherwise it is refused with lifecycle.ErrDeleteNotAllowed, before anything reads the release.
// Every other Change goes on to Next unchecked: the actuator that carries it out checks its own.
//
// Next is the helm actuator (which uninstalls releases and hands the rest on), so that no
// uninstall can be reached past this check.
type ReleaseRemovals struct {
	Allow Policy
	Next  Applier
}

// Apply refuses a release removal Allow does not allow, and passes every other Change on.
func (r ReleaseRemovals) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if lifecycle.IsRelease(c.Target) {
		if err := r.Allow.Check(c, VerbDelete, ReleaseResource, "helm release "+c.Target.Namespace+"/"+c.Target.Name); err != nil {
			return lifecycle.Outcome{}, err
		}
	}
	return r.Next.Apply(ctx, c, decidedAt, opts)
}
