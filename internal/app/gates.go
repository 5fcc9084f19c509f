package app

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/gate"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// Backup kinds of --backup.
const (
	BackupNone   = "none"
	BackupVelero = "velero"
)

// GateOptions are the --backup-* and --submission-* flags: what must be done before a removal.
type GateOptions struct {
	// Backup is --backup: none or velero.
	Backup string
	// BackupTTL, BackupTimeout and BackupNamespace are --backup-ttl, --backup-timeout and
	// --backup-namespace (Velero's).
	BackupTTL, BackupTimeout time.Duration
	BackupNamespace          string
	// Submission is --enable-submission; SubmissionEndpoint, SubmissionAllowedHosts,
	// SubmissionImage and SubmissionTimeout the --submission-* flags.
	Submission             bool
	SubmissionEndpoint     string
	SubmissionAllowedHosts []string
	SubmissionImage        string
	SubmissionTimeout      time.Duration
	// SubmissionMaxAttempts is --submission-max-attempts: how many failed submission attempts
	// hold a removal (a tenant can make its submission fail; it must not keep its environment
	// forever).
	SubmissionMaxAttempts int
	// RetryAfter is --gate-retry-interval: how long a failed backup or submission waits before
	// the next attempt.
	RetryAfter time.Duration
	// Poll is how often a running step is looked at (0: gate.DefaultPoll); tests shorten it.
	Poll time.Duration
}

func (g GateOptions) validate() error {
	switch {
	case g.Backup != "" && g.Backup != BackupNone && g.Backup != BackupVelero:
		return fmt.Errorf("--backup=%q: want %q or %q", g.Backup, BackupNone, BackupVelero)
	case g.Backup == BackupVelero && g.BackupTTL <= 0:
		return fmt.Errorf("--backup-ttl=%s: must be positive", lifecycle.FormatDuration(g.BackupTTL))
	case g.Backup == BackupVelero && g.BackupTimeout <= 0:
		return fmt.Errorf("--backup-timeout=%s: must be positive", lifecycle.FormatDuration(g.BackupTimeout))
	case g.Backup == BackupVelero && g.BackupNamespace == "":
		return fmt.Errorf("--backup-namespace: required with --backup=velero (Velero's namespace)")
	case g.RetryAfter <= 0 && (g.Backup == BackupVelero || g.Submission):
		return fmt.Errorf("--gate-retry-interval=%s: must be positive", lifecycle.FormatDuration(g.RetryAfter))
	}
	if !g.Submission {
		return nil
	}
	switch {
	case g.SubmissionImage == "":
		return fmt.Errorf("--submission-image: required with --enable-submission (Kustos's own image; the chart sets it)")
	case g.SubmissionTimeout <= 0:
		return fmt.Errorf("--submission-timeout=%s: must be positive", lifecycle.FormatDuration(g.SubmissionTimeout))
	case g.SubmissionMaxAttempts < 1:
		return fmt.Errorf("--submission-max-attempts=%d: must be at least 1", g.SubmissionMaxAttempts)
	}
	if g.SubmissionEndpoint != "" {
		if err := gate.CheckDestination(g.SubmissionEndpoint, "--submission-endpoint", egress.HostNames{}); err != nil {
			return err
		}
	}
	if _, err := g.allowedHosts(); err != nil {
		return err
	}
	return nil
}

// allowedHosts parses --submission-allowed-hosts with --allowed-destinations' name syntax.
func (g GateOptions) allowedHosts() (egress.HostNames, error) {
	h, err := egress.ParseHostNames(g.SubmissionAllowedHosts)
	if err != nil {
		return h, fmt.Errorf("--submission-allowed-hosts: %w", err)
	}
	return h, nil
}

// gated puts the removal gates that are on in front of next (next itself when none is). live
// reads and writes built-in kinds (Jobs, claims, the targets); Velero's Backups, which have no
// protobuf encoding, go through a JSON client of mgr's config. events is the pipeline's
// reporter: the gate's Warnings (a refused kustos.io/submit-to, a submission given up) go on
// the target as the pipeline's own do, deduplicated by id in one place.
func gated(o Options, mgr ctrl.Manager, live client.Client, events gate.Reporter, next pipeline.Actuator) (pipeline.Actuator, error) {
	var steps []gate.Step
	g := o.Gates
	if g.Submission {
		allowed, err := g.allowedHosts()
		if err != nil {
			return nil, err
		}
		// Before the backup: a submission saves the environment's work; the backup saves
		// what is removed, the submission's Job gone or not.
		steps = append(steps, &gate.Submission{Client: live, Endpoint: g.SubmissionEndpoint, AllowedHosts: allowed,
			Attempts: g.SubmissionMaxAttempts, Reporter: events,
			Image: g.SubmissionImage, Timeout: g.SubmissionTimeout, Now: o.Now,
			Reasons: map[string]string{inactivity.DetectorName: inactivity.ReasonProbeFailed, expiry.DetectorName: expiry.ReasonExpiryDue}})
	}
	if g.Backup == BackupVelero {
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
		c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return nil, fmt.Errorf("--backup=velero: creating the API client: %w", err)
		}
		steps = append(steps, &gate.Velero{Client: c, Namespace: g.BackupNamespace, TTL: g.BackupTTL, Timeout: g.BackupTimeout})
	}
	if len(steps) == 0 {
		return next, nil
	}
	gates := &gate.Actuator{Steps: steps, Next: next, Poll: g.Poll, RetryAfter: g.RetryAfter, Now: o.Now, Reporter: events, Log: o.Log.WithName("gate")}
	// A helm release the operator did not let the detector uninstall is refused before the
	// gates: a backup or a submission Job for a release that then stays would be made again at
	// every look. (A direct deletion or pause is still refused behind them, by the direct
	// actuator, which alone knows whether Git defines the target.)
	return allow.ReleaseRemovals{Allow: o.Allow, Next: gates}, nil
}
