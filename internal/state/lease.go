package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Labels and annotations on state Leases. The label selector lets the controller cache only its
// own Leases (not the leader-election Lease) and lets the sweep find them.
const (
	LabelManagedBy         = "app.kubernetes.io/managed-by"
	ManagedByValue         = "kustos"
	LabelDetector          = "kustos.io/detector"
	LabelTargetNamespace   = "kustos.io/target-namespace"
	AnnotationKey          = "kustos.io/key"
	AnnotationTargetName   = "kustos.io/target-name"
	AnnotationPending      = "kustos.io/pending"
	AnnotationLastModified = "resizer.io/last-modified"
	// AnnotationProposed holds the Change the open PR (the holder) proposes, as JSON (PR mode).
	AnnotationProposed = "kustos.io/proposed"
	// AnnotationClosedValues holds the Change of the last PR a human closed without merging, as
	// JSON (PR mode): nothing smaller is proposed again for the key.
	AnnotationClosedValues = "kustos.io/closed-values"
)

// maxNameLength is the limit of a Lease name (a DNS subdomain).
const maxNameLength = 253

// LeaseName is the Lease that holds a Key's state: the seed's state-<namespace>-<quota> for
// the quota detector, state-<detector>-<namespace>-<name> for the others. Names longer than a
// Lease name may be are cut and get a short hash of the whole name, so they stay unique.
func LeaseName(key lifecycle.Key) string {
	detector, ns, name := SplitKey(key)
	var n string
	if detector == "quota" {
		n = "state-" + ns + "-" + name
	} else {
		n = "state-" + detector + "-" + ns + "-" + name
	}
	if len(n) <= maxNameLength {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	suffix := hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(n[:maxNameLength-len(suffix)-1], "-.")
	return head + "-" + suffix
}

// SplitKey splits "detector/namespace/name".
func SplitKey(key lifecycle.Key) (detector, namespace, name string) {
	parts := strings.SplitN(string(key), "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// Record is the remembered state of one Key.
type Record struct {
	Key lifecycle.Key
	// LastModified is the last recommendation (observer mode) or PR (PR mode); zero if never.
	LastModified time.Time
	// Holder names the open pull request that holds the lock; empty when unlocked.
	Holder string
	// Pending is a decision that was recorded in the Lease but whose Events and log lines may
	// not have been written yet (a crash in between). It is replayed, then cleared.
	Pending string
	// Proposed is the Change the open PR proposes (PR mode), JSON; empty without a holder.
	Proposed string
	// ClosedValues is the Change of the last PR a human closed (PR mode), JSON.
	ClosedValues string

	lease *coordinationv1.Lease
}

// Exists reports whether the record is stored (false for a Key never seen).
func (r Record) Exists() bool { return r.lease != nil }

// Store reads and writes state Leases in one namespace.
type Store struct {
	// Reader is usually the manager's cache (scoped to the state namespace); Writer the client.
	Reader    client.Reader
	Writer    client.Client
	Namespace string
}

// Get returns the record of a Key; a Key never seen gives an empty record and no error.
// A Lease whose annotations cannot be read is an error naming the Lease and the annotation.
func (s *Store) Get(ctx context.Context, key lifecycle.Key) (Record, error) {
	var l coordinationv1.Lease
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: LeaseName(key)}, &l)
	if apierrors.IsNotFound(err) {
		return Record{Key: key}, nil
	}
	if err != nil {
		return Record{Key: key}, fmt.Errorf("reading state lease %s/%s: %w", s.Namespace, LeaseName(key), err)
	}
	return recordFromLease(key, &l)
}

func recordFromLease(key lifecycle.Key, l *coordinationv1.Lease) (Record, error) {
	r := Record{Key: key, lease: l, Pending: l.Annotations[AnnotationPending],
		Proposed: l.Annotations[AnnotationProposed], ClosedValues: l.Annotations[AnnotationClosedValues]}
	if l.Spec.HolderIdentity != nil {
		r.Holder = *l.Spec.HolderIdentity
	}
	if v := l.Annotations[AnnotationLastModified]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return r, fmt.Errorf("state lease %s/%s: annotation %s=%q is not an RFC 3339 time: %w",
				l.Namespace, l.Name, AnnotationLastModified, truncate(v, 64), err)
		}
		r.LastModified = t
	}
	return r, nil
}

// ParseLease reads a state Lease found elsewhere (an offline dump). ok is false for Leases that
// are not Kustos state.
func ParseLease(l *coordinationv1.Lease) (Record, bool, error) {
	key := lifecycle.Key(l.Annotations[AnnotationKey])
	if l.Labels[LabelManagedBy] != ManagedByValue || key == "" {
		return Record{}, false, nil
	}
	r, err := recordFromLease(key, l)
	return r, true, err
}

// MarkModified records a decision made at t: last-modified = t and the pending decision, in
// one write that carries the resourceVersion the caller read. A conflict means someone else (or
// our own earlier write, not yet in the cache) got there first: the caller must re-read and
// decide again, and must not act on this decision.
func (s *Store) MarkModified(ctx context.Context, rec Record, t time.Time, pending string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		l.Annotations[AnnotationLastModified] = t.UTC().Format(time.RFC3339Nano)
		if pending == "" {
			delete(l.Annotations, AnnotationPending)
		} else {
			l.Annotations[AnnotationPending] = pending
		}
		now := metav1.NewMicroTime(t)
		l.Spec.RenewTime = &now
	})
}

// ClearPending marks the pending decision as fully recorded.
func (s *Store) ClearPending(ctx context.Context, rec Record) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) { delete(l.Annotations, AnnotationPending) })
}

// Lock records that holder (the open PR, e.g. "pr-12") proposes the Change proposed (JSON) and
// clears the pending decision, in one write conditional on the resourceVersion read (PR mode).
func (s *Store) Lock(ctx context.Context, rec Record, holder, proposed string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		h := holder
		l.Spec.HolderIdentity = &h
		l.Annotations[AnnotationProposed] = proposed
		delete(l.Annotations, AnnotationPending)
		delete(l.Annotations, AnnotationClosedValues)
	})
}

// Unlock clears the holder, the proposed and the pending Change and sets last-modified to t, in
// one write (PR mode: the PR was merged or closed). closed, when not empty, is remembered as the
// closed values (a human declined the PR); empty removes them.
func (s *Store) Unlock(ctx context.Context, rec Record, t time.Time, closed string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = nil
		l.Annotations[AnnotationLastModified] = t.UTC().Format(time.RFC3339Nano)
		delete(l.Annotations, AnnotationProposed)
		delete(l.Annotations, AnnotationPending)
		if closed == "" {
			delete(l.Annotations, AnnotationClosedValues)
		} else {
			l.Annotations[AnnotationClosedValues] = closed
		}
		now := metav1.NewMicroTime(t)
		l.Spec.RenewTime = &now
	})
}

func (s *Store) write(ctx context.Context, rec Record, mutate func(*coordinationv1.Lease)) (Record, error) {
	detector, ns, name := SplitKey(rec.Key)
	var l *coordinationv1.Lease
	if rec.lease == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      LeaseName(rec.Key),
			Labels: map[string]string{
				LabelManagedBy:       ManagedByValue,
				LabelDetector:        detector,
				LabelTargetNamespace: ns,
			},
			Annotations: map[string]string{AnnotationKey: string(rec.Key), AnnotationTargetName: name},
		}}
		mutate(l)
		if err := s.Writer.Create(ctx, l); err != nil {
			return rec, fmt.Errorf("creating state lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	} else {
		l = rec.lease.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		mutate(l)
		// Update (not patch) so the resourceVersion we read is a precondition.
		if err := s.Writer.Update(ctx, l); err != nil {
			return rec, fmt.Errorf("updating state lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	}
	return recordFromLease(rec.Key, l)
}

// Sweep deletes state Leases whose target namespace no longer exists and returns how many it
// deleted. namespaceExists must ask the API server (or an up-to-date cache); a namespace that
// is merely terminating still exists. Deletion is conditional on the resourceVersion listed, so a
// Lease written in the meantime survives.
func (s *Store) Sweep(ctx context.Context, namespaceExists func(context.Context, string) (bool, error)) (int, error) {
	var leases coordinationv1.LeaseList
	if err := s.Writer.List(ctx, &leases, client.InNamespace(s.Namespace), client.MatchingLabels{LabelManagedBy: ManagedByValue}); err != nil {
		return 0, fmt.Errorf("listing state leases in %s: %w", s.Namespace, err)
	}
	deleted := 0
	known := map[string]bool{}
	for i := range leases.Items {
		l := &leases.Items[i]
		ns := l.Labels[LabelTargetNamespace]
		if ns == "" {
			continue
		}
		exists, seen := known[ns]
		if !seen {
			var err error
			if exists, err = namespaceExists(ctx, ns); err != nil {
				return deleted, fmt.Errorf("checking namespace %s: %w", ns, err)
			}
			known[ns] = exists
		}
		if exists {
			continue
		}
		err := s.Writer.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting state lease %s/%s: %w", l.Namespace, l.Name, err)
		}
		if err == nil {
			deleted++
		}
	}
	return deleted, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
