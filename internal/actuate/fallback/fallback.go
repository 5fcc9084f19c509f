package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Applier carries out a Change (the pipeline's Actuator).
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

var _ Applier = Actuator{}

// Actuator proposes a Change (Primary, the pr actuator) and, when no manifest in the repository
// defines the target, carries it out with Fallback instead (the direct actuator, which still
// refuses what Flux or Argo CD manages and deletes and pauses only what --allow lets it).
type Actuator struct {
	Primary, Fallback Applier
}

// Apply proposes c, or carries it out directly when Git does not hold its target.
func (f Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	out, err := f.Primary.Apply(ctx, c, decidedAt, opts)
	switch {
	case errors.Is(err, lifecycle.ErrSourceNotFound):
		return f.Fallback.Apply(ctx, c, decidedAt, opts)
	case err == nil && c.Edit.Op == lifecycle.EditDelete && out.Proposal != nil && out.Proposal.AlreadyInBase:
		// No manifest defines the object (a Delete finds nothing to remove from Git): it never
		// lived in Git, or a merged removal is waiting for the GitOps tool. Either way the
		// object should be gone; the direct actuator still refuses what Flux or Argo CD manages.
		return f.Fallback.Apply(ctx, c, decidedAt, opts)
	}
	return out, err
}
