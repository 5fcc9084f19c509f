package conditions

import "time"

// Defaults of Policy: quick re-checks while a resource is not Ready (its work is in progress or
// failing), rare ones while it is.
const (
	// DefaultNotReadyRecheck is how soon a resource whose Ready is not True is looked at again.
	DefaultNotReadyRecheck = 10 * time.Second
	// DefaultReadyRecheck is how soon a Ready resource is looked at again.
	DefaultReadyRecheck = 30 * time.Minute
)

// Policy is the re-check pulse: besides on every spec change, a resource is looked at again (its
// steps run and report) when its last reports are older than a TTL that depends on whether it is
// Ready. A controller that runs its steps on every reconcile turns that into its RequeueAfter. The
// zero value is the default policy; a zero or negative field takes its default.
type Policy struct {
	// NotReady is the re-check interval while Ready is not True (default 10s).
	NotReady time.Duration
	// Ready is the re-check interval while Ready is True (default 30min).
	Ready time.Duration
}

// RecheckAfter returns how long after the steps last reported the resource is to be looked at
// again, given whether its Ready condition is True.
func (p Policy) RecheckAfter(ready bool) time.Duration {
	if ready {
		if p.Ready > 0 {
			return p.Ready
		}
		return DefaultReadyRecheck
	}
	if p.NotReady > 0 {
		return p.NotReady
	}
	return DefaultNotReadyRecheck
}
