package gate

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Backup kinds of --backup.
const (
	BackupNone   = "none"
	BackupVelero = "velero"
)

// Options are the --backup-* and --submission-* flags: what must be done before a removal.
type Options struct {
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
	// Poll is how often a running step is looked at (0: DefaultPoll); tests shorten it.
	Poll time.Duration
}

// Validate reports the first flag that cannot work.
func (g Options) Validate() error {
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
		if err := CheckDestination(g.SubmissionEndpoint, "--submission-endpoint", egress.HostNames{}); err != nil {
			return err
		}
	}
	if _, err := g.AllowedHosts(); err != nil {
		return err
	}
	return nil
}

// AllowedHosts parses --submission-allowed-hosts with --allowed-destinations' name syntax.
func (g Options) AllowedHosts() (egress.HostNames, error) {
	h, err := egress.ParseHostNames(g.SubmissionAllowedHosts)
	if err != nil {
		return h, fmt.Errorf("--submission-allowed-hosts: %w", err)
	}
	return h, nil
}

// Steps are the steps the options turn on, in the order they run: a submission saves the
// environment's work before the backup saves what is removed, the submission's Job gone or
// not. live reads and writes built-in kinds (Jobs, claims, the targets); velero makes the
// client of Velero's Backups, which have no protobuf encoding. reasons are the Reasons of the
// submission (by detector), events the Reporter of its Warnings.
func (g Options) Steps(live client.Client, velero func() (client.Client, error), events Reporter, reasons map[string]string, now func() time.Time) ([]Step, error) {
	var steps []Step
	if g.Submission {
		allowed, err := g.AllowedHosts()
		if err != nil {
			return nil, err
		}
		steps = append(steps, &Submission{Client: live, Endpoint: g.SubmissionEndpoint, AllowedHosts: allowed,
			Attempts: g.SubmissionMaxAttempts, Reporter: events,
			Image: g.SubmissionImage, Timeout: g.SubmissionTimeout, Now: now, Reasons: reasons})
	}
	if g.Backup == BackupVelero {
		c, err := velero()
		if err != nil {
			return nil, fmt.Errorf("--backup=velero: creating the API client: %w", err)
		}
		steps = append(steps, &Velero{Client: c, Namespace: g.BackupNamespace, TTL: g.BackupTTL, Timeout: g.BackupTimeout})
	}
	return steps, nil
}
