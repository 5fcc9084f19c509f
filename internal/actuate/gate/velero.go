package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Labels and annotations on the objects the steps create.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedByValue  = "kustos"
	LabelKeyHash    = "kustos.io/key-hash"
	LabelStep       = "kustos.io/step"
	AnnotationKey   = "kustos.io/key"
	AnnotationScope = "kustos.io/backup-scope"
)

// ObjectWriter is what the steps need of the API server: read and create their objects (the
// live client, not a cache: a Backup or Job created a moment ago must be found).
type ObjectWriter interface {
	client.Reader
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

var (
	_ ObjectWriter = client.Client(nil)
	_ Step         = (*Velero)(nil)
)

// Defaults of the Velero step.
const (
	DefaultBackupTTL       = 720 * time.Hour
	DefaultBackupTimeout   = time.Hour
	DefaultVeleroNamespace = "velero"
)

// Velero backs up what a removal takes away before it goes: a velero.io/v1 Backup of the
// namespace of a helm release (expiry's releases, a Cleaner's) or of a Namespace that is
// removed, in Namespace (Velero's own). A release's Backup covers its whole namespace, not only
// the objects labelled with the release's name: charts label their objects as they please, and
// a restore needs helm's release record (a Secret) too; one object too many in a backup does no
// harm, one missing does.
//
// The removal waits until the Backup is Completed. Failed, PartiallyFailed, FailedValidation, a
// Backup deleted meanwhile, or no completion within Timeout fails the attempt: nothing is removed.
type Velero struct {
	Client ObjectWriter
	// Namespace is Velero's (--backup-namespace); TTL (--backup-ttl) how long Velero keeps the
	// backup; Timeout (--backup-timeout) how long an attempt may take.
	Namespace string
	TTL       time.Duration
	Timeout   time.Duration
}

// Name is the step's name: "backup".
func (v *Velero) Name() string { return lifecycle.QueuedBackup }

// Applies holds the removal of a helm release or a Namespace.
func (v *Velero) Applies(_ context.Context, c lifecycle.Change) (bool, error) {
	_, ok := backupNamespace(c)
	return ok, nil
}

// backupNamespace is the namespace a removal's backup covers.
func backupNamespace(c lifecycle.Change) (string, bool) {
	if c.Edit.Op != lifecycle.EditDelete {
		return "", false
	}
	switch t := c.Target; {
	case lifecycle.IsRelease(t) && t.Namespace != "":
		return t.Namespace, true
	case t.Group == "" && t.Kind == "Namespace" && t.Name != "":
		return t.Name, true
	}
	return "", false
}

// Start creates the Backup named name.
func (v *Velero) Start(ctx context.Context, c lifecycle.Change, name string) error {
	ns, ok := backupNamespace(c)
	if !ok {
		return fmt.Errorf("%w: %s is not a helm release or a Namespace", ErrFailed, c.Target)
	}
	b := &velerov1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: v.namespace(), Name: name,
			Labels:      objectLabels(c.Key, v.Name()),
			Annotations: map[string]string{AnnotationKey: lifecycle.Clip(string(c.Key), 1000), AnnotationScope: "namespace " + ns + " before removing " + c.Target.String()}},
		Spec: velerov1.BackupSpec{
			IncludedNamespaces: []string{ns},
			TTL:                metav1.Duration{Duration: v.ttl()},
		},
	}
	if err := v.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: creating Velero backup %s/%s: %w (is Velero installed, with its Backup CRD, in namespace %s?)", ErrFailed, v.namespace(), name, err, v.namespace())
		}
		return fmt.Errorf("creating Velero backup %s/%s: %w", v.namespace(), name, err)
	}
	return nil
}

// Check reads the Backup's phase.
func (v *Velero) Check(ctx context.Context, _ lifecycle.Change, name string, since, now time.Time) (Status, error) {
	var b velerov1.Backup
	err := v.Client.Get(ctx, types.NamespacedName{Namespace: v.namespace(), Name: name}, &b)
	if apierrors.IsNotFound(err) {
		return Status{Phase: PhaseFailed, Message: fmt.Sprintf("Velero backup %s/%s was deleted before it completed", v.namespace(), name)}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading Velero backup %s/%s: %w", v.namespace(), name, err)
	}
	phase := b.Status.Phase
	switch phase {
	case velerov1.BackupPhaseCompleted:
		return Status{Phase: PhaseDone, Message: fmt.Sprintf("Velero backup %s/%s completed", v.namespace(), name)}, nil
	case velerov1.BackupPhaseFailed, velerov1.BackupPhasePartiallyFailed, velerov1.BackupPhaseFailedValidation:
		msg := fmt.Sprintf("Velero backup %s/%s ended %s", v.namespace(), name, phase)
		if why := backupFailure(b.Status); why != "" {
			msg += " (" + why + ")"
		}
		return Status{Phase: PhaseFailed, Message: msg}, nil
	}
	if now.Sub(since) >= v.timeout() {
		return Status{Phase: PhaseFailed, Message: fmt.Sprintf("Velero backup %s/%s did not complete within %s (phase %s)",
			v.namespace(), name, lifecycle.FormatDuration(v.timeout()), orNew(phase))}, nil
	}
	return Status{Phase: PhaseRunning, Message: fmt.Sprintf("Velero backup %s/%s is %s", v.namespace(), name, orNew(phase))}, nil
}

// backupFailure says why a Backup failed, as Velero recorded it.
func backupFailure(s velerov1.BackupStatus) string {
	var parts []string
	if s.FailureReason != "" {
		parts = append(parts, lifecycle.Clip(s.FailureReason, 160))
	}
	if len(s.ValidationErrors) > 0 {
		parts = append(parts, "validation: "+lifecycle.Clip(strings.Join(s.ValidationErrors, "; "), 160))
	}
	if s.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d errors, see velero backup logs", s.Errors))
	}
	return strings.Join(parts, "; ")
}

func orNew(p velerov1.BackupPhase) velerov1.BackupPhase {
	if p == "" {
		return velerov1.BackupPhaseNew
	}
	return p
}

func (v *Velero) namespace() string {
	if v.Namespace == "" {
		return DefaultVeleroNamespace
	}
	return v.Namespace
}

func (v *Velero) ttl() time.Duration { return positive(v.TTL, DefaultBackupTTL) }

func (v *Velero) timeout() time.Duration { return positive(v.Timeout, DefaultBackupTimeout) }

// objectLabels mark a step's object as Kustos's, for key (by hash: a label value holds 63
// characters) and step.
func objectLabels(key lifecycle.Key, step string) map[string]string {
	sum := sha256.Sum256([]byte(key))
	return map[string]string{LabelManagedBy: ManagedByValue, LabelKeyHash: hex.EncodeToString(sum[:])[:40], LabelStep: step}
}
