package app

import (
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/gate"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// Backup kinds of --backup.
const (
	BackupNone   = gate.BackupNone
	BackupVelero = gate.BackupVelero
)

// gated puts the removal gates that are on in front of next (next itself when none is). events
// is the pipeline's reporter: the gate's Warnings (a refused kustos.io/submit-to, a submission
// given up) go on the target as the pipeline's own do, deduplicated by id in one place.
func gated(o Options, mgr ctrl.Manager, live client.Client, events gate.Reporter, next pipeline.Actuator) (pipeline.Actuator, error) {
	velero := func() (client.Client, error) {
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	}
	reasons := map[string]string{inactivity.DetectorName: inactivity.ReasonProbeFailed, expiry.DetectorName: expiry.ReasonExpiryDue}
	steps, err := o.Gates.Steps(live, velero, events, reasons, o.Now)
	if err != nil || len(steps) == 0 {
		return next, err
	}
	gates := &gate.Actuator{Steps: steps, Next: next, Poll: o.Gates.Poll, RetryAfter: o.Gates.RetryAfter, Now: o.Now, Reporter: events, Log: o.Log.WithName("gate")}
	// A helm release the operator did not let the detector uninstall is refused before the
	// gates: a backup or a submission Job for a release that then stays would be made again at
	// every look. (A direct deletion or pause is still refused behind them, by the direct
	// actuator, which alone knows whether Git defines the target.)
	return allow.ReleaseRemovals{Allow: o.Allow, Next: gates}, nil
}
