package vsphere

import (
	"context"
	"strings"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Leases sweeps the state Leases of VM Keys (state's GoneSweeper leaves them to the VM crawler,
// which alone can tell that a VM is gone).
type Leases struct{ Store *state.Store }

var _ detectvsphere.VMLeases = Leases{}

// SweepVMs deletes the Leases of the expiry detector's VM Keys whose VM gone says is gone.
func (v Leases) SweepVMs(ctx context.Context, gone func(ctx context.Context, uuid string) (bool, error)) (int, error) {
	kindGroup := strings.ToLower(detectvsphere.Kind + "." + detectvsphere.Group)
	return v.Store.SweepGone(ctx, func(ctx context.Context, rec state.Record) (bool, error) {
		p, ok := rec.Key.Parts()
		if !ok || p.Detector != expiry.DetectorName || strings.ToLower(p.KindGroup) != kindGroup || p.Namespace != "" || p.Name == "" {
			return false, nil
		}
		return gone(ctx, p.Name)
	})
}

// States reads the expiry state of a VM's Key from its Lease.
type States struct{ Store *state.Store }

var _ detectvsphere.StateReader = States{}

// ExpiryState is the Key's expiry state; exists is false when it has no Lease.
func (s States) ExpiryState(ctx context.Context, key lifecycle.Key) (expiry.State, bool, error) {
	rec, err := s.Store.Get(ctx, key)
	if err != nil {
		return expiry.State{}, false, err
	}
	st, _ := expiry.ParseState(rec.Bag)
	return st, rec.Exists(), nil
}
