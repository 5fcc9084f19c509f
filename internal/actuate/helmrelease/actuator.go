package helmrelease

import (
	"context"
	"fmt"
	"time"

	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Applier carries out a Change (the pipeline's Actuator); the Actuator hands it what is not a
// helm release.
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

// Remover uninstalls a release (*Uninstaller), on someone's behalf when on is not nil.
type Remover interface {
	UninstallFor(ctx context.Context, namespace, release string, on *OnBehalf) (removed bool, err error)
}

var (
	_ Applier = Actuator{}
	_ Remover = (*Uninstaller)(nil)
)

// Actuator removes helm releases for every detector that decides so (expiry's due releases, a
// Cleaner's releases marked delete): a Change whose Target is a release (lifecycle.IsRelease)
// is uninstalled, hooks run and history purged; every other Change goes to Next. A plain release
// is never in Git as such (a Flux-managed one is a HelmRelease object, which is not this
// Target), so there is nothing to propose: in PR mode too, the uninstall happens here. Observer
// mode does not use it: the observe actuator reports what would be uninstalled.
//
// Its errors are what the pipeline reports: a release that reaches outside its namespace is
// refused with an error matching lifecycle.ErrOutsideNamespace (naming the objects), any other
// Edit than a Delete with lifecycle.ErrInvalidChange, and helm's failures as they are (the
// pipeline keeps the decision pending and tries again).
//
// A Change made on someone's behalf (Change.OnBehalfOf: a Cleaner's author) is uninstalled only
// when Access says they may make every request of the uninstall, asked on the revision helm
// reads to act on (Uninstaller.UninstallFor); otherwise it is refused with an error matching
// lifecycle.ErrAuthorDenied, before any hook runs. Without Access such a Change is refused
// (lifecycle.ErrInvalidChange): Kustos's rights are never lent for want of someone to ask.
//
// With RequireOnBehalf (a Cleaner's releases, which are always someone's), a release Change
// that names nobody is refused too (lifecycle.ErrInvalidChange): one recorded before Changes
// carried their author (pending across an upgrade) would otherwise be uninstalled with Kustos's
// rights. The pipeline drops the refused decision, and the detector decides again, with the
// author.
type Actuator struct {
	Releases        Remover
	Access          Authoriser
	RequireOnBehalf bool
	Next            Applier
}

// Apply uninstalls c's release, or passes c on.
func (a Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if !lifecycle.IsRelease(c.Target) {
		if a.Next == nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: %s: no actuator for it", lifecycle.ErrInvalidChange, c.Target)
		}
		return a.Next.Apply(ctx, c, decidedAt, opts)
	}
	if c.Edit.Op != lifecycle.EditDelete {
		return lifecycle.Outcome{}, fmt.Errorf("%w: helm release %s: only an uninstall is possible, not %s", lifecycle.ErrInvalidChange, c.Target, c.Edit.Op)
	}
	if c.Target.Namespace == "" {
		return lifecycle.Outcome{}, fmt.Errorf("%w: helm release %s has no namespace", lifecycle.ErrInvalidChange, c.Target)
	}
	if c.OnBehalfOf == nil && a.RequireOnBehalf {
		return lifecycle.Outcome{}, fmt.Errorf("%w: helm release %s: the decision names no one whose rights its uninstall stays within (it was recorded before decisions carried their author); it is decided again", lifecycle.ErrInvalidChange, c.Target)
	}
	var on *OnBehalf
	if p := c.OnBehalfOf; p != nil {
		if a.Access == nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: helm release %s is to be uninstalled for %q, and this actuator cannot ask what they may do", lifecycle.ErrInvalidChange, c.Target, p.User)
		}
		on = &OnBehalf{Author: authorship.Author{Username: p.User, UID: p.UID, Groups: p.Groups, Extra: p.Extra}, Access: a.Access}
	}
	if _, err := a.Releases.UninstallFor(ctx, c.Target.Namespace, c.Target.Name, on); err != nil {
		return lifecycle.Outcome{}, err
	}
	return lifecycle.Outcome{Applied: true}, nil
}
