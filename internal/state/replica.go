package state

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// LabelReplica marks a replica's liveness Lease (value "true").
const LabelReplica = "kustos.io/replica"

// Replica keeps a liveness Lease named replica-<identity> renewed while the process runs, so that
// other replicas can tell whether the replica carrying out a pending decision is still there.
// Without it, the replica that lost a Lease race would take the winner's pending decision for
// one left by a crash and write to GitHub at the same time as the winner.
type Replica struct {
	Client    client.Client
	Namespace string
	Identity  string
	// Duration is how long the Lease is valid without renewal; it is renewed every third of it.
	Duration time.Duration
	Now      func() time.Time
	Log      logr.Logger
}

// ReplicaDuration is how long a replica's liveness Lease lasts without renewal: how long a
// pending decision of a replica that crashed waits before another replica replays it.
const ReplicaDuration = 15 * time.Second

// NewIdentity names this process for its Leases: instance (the pod name; "": kustos) and a
// random suffix, so that a restarted container is a new replica and two replicas never share a
// name.
func NewIdentity(instance string) string {
	if instance == "" {
		instance = "kustos"
	}
	return instance + "-" + rand.Text()[:6]
}

// ReplicaLeaseName is the name of the replica's liveness Lease.
func ReplicaLeaseName(identity string) string {
	n := "replica-" + identity
	if len(n) > maxNameLength {
		return withHash(sanitize(n), lifecycle.Key("replica/"+identity))
	}
	return sanitize(n)
}

// NeedLeaderElection is false: every replica says it is alive.
func (r *Replica) NeedLeaderElection() bool { return false }

// Start renews the Lease until ctx ends, then deletes it (a clean shutdown hands pending
// decisions over at once instead of after Duration).
func (r *Replica) Start(ctx context.Context) error {
	every := r.Duration / 3
	if every <= 0 {
		every = 5 * time.Second
	}
	for {
		if err := r.renew(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "renewing replica liveness lease")
		}
		select {
		case <-ctx.Done():
			// ctx is done; the goodbye needs a context of its own.
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: ReplicaLeaseName(r.Identity)}}
			if err := r.Client.Delete(dctx, l); err != nil && !apierrors.IsNotFound(err) { //nolint:contextcheck // ctx is done; the goodbye needs its own
				r.Log.Error(err, "deleting replica liveness lease")
			}
			cancel()
			return nil
		case <-time.After(every):
		}
	}
}

func (r *Replica) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(r.Now())
	secs := int32(r.Duration / time.Second)
	id := r.Identity
	name := ReplicaLeaseName(r.Identity)
	var l coordinationv1.Lease
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name,
				Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelReplica: "true"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, &l))
	}
	if err != nil {
		return fmt.Errorf("reading replica lease %s/%s: %w", r.Namespace, name, err)
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &id, &secs, &now
	return r.Client.Update(ctx, &l)
}

// Alive reports whether the replica identity renewed its liveness Lease recently enough, as
// read through reader at now. A replica that never wrote one, or wrote one that expired, is gone.
func Alive(ctx context.Context, reader client.Reader, namespace, identity string, now time.Time) (bool, error) {
	var l coordinationv1.Lease
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ReplicaLeaseName(identity)}, &l)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading replica lease of %s: %w", identity, err)
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false, nil
	}
	expires := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	return now.Before(expires), nil
}
