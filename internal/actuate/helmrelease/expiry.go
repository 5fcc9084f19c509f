package helmrelease

import (
	"context"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
)

// ExpiryReleases reads releases for the expiry detector (its Releases) through the Uninstaller.
type ExpiryReleases struct{ Uninstaller *Uninstaller }

var _ expiry.Releases = ExpiryReleases{}

// Release reads a release's values, first deployment and labels; found is false when it is gone.
func (h ExpiryReleases) Release(ctx context.Context, namespace, name string) (expiry.Release, bool, error) {
	i, found, err := h.Uninstaller.Release(ctx, namespace, name)
	return expiry.Release{Values: i.Values, FirstDeployed: i.FirstDeployed, Labels: i.Labels}, found, err
}

// Check says whether the Uninstaller would uninstall the release (Uninstaller.Check).
func (h ExpiryReleases) Check(ctx context.Context, namespace, name string) error {
	return h.Uninstaller.Check(ctx, namespace, name)
}
