package state

import (
	"context"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultGoneGrace is GoneSweeper's Grace when none is given.
const DefaultGoneGrace = 10 * time.Minute

// GoneRule says how GoneSweeper tells that the object of a Key of one kind is gone, for the
// kinds whose object is not simply asked of the API server by the Key's kind.
type GoneRule struct {
	// Detector limits the rule to one detector's Keys ("": any).
	Detector string
	// Kind is the Key's kind.
	Kind schema.GroupKind
	// As is the object whose life the Key's shares (a Cleaner's CloudEvent is no object: its
	// Key lives as long as its Cleaner); the zero value: the Key's own kind.
	As schema.GroupKind
	// Never: no API server can say the object is gone (a VM lives in vSphere, and its crawler
	// sweeps its Leases); such Leases are kept.
	Never bool
	// SecretLabels, when set, says the object lives in Secrets of the Key's namespace (a helm
	// release in helm's storage): the labels of the Secrets of the Key's name. It is gone when no
	// such Secret exists; a sweeper that may not list them keeps the Lease.
	SecretLabels func(name string) map[string]string
}

// GoneSweeper deletes the Leases of per-object detectors' Keys (Cleaner targets, expiring
// objects) whose object is gone: every deleted preview would otherwise leave a Lease behind until
// its namespace goes. It runs on the leader only, once at start and then every Interval.
type GoneSweeper struct {
	Store *Store
	// Live reads the objects: the API server, not a cache.
	Live   client.Reader
	Mapper meta.RESTMapper
	// Detectors are the detectors whose Keys are swept.
	Detectors map[string]bool
	// Rules are the kinds asked otherwise than by their own kind.
	Rules    []GoneRule
	Interval time.Duration
	// Grace keeps a Key's Lease this long after its last decision whatever its target says: a
	// deletion just carried out must not race the sweep of its own Lease (0: DefaultGoneGrace).
	Grace time.Duration
	// Swept, when set, counts the Leases deleted.
	Swept prometheus.Counter
	Now   func() time.Time
	Log   logr.Logger
}

var _ manager.LeaderElectionRunnable = (*GoneSweeper)(nil)

// NeedLeaderElection is true: one replica sweeps.
func (s *GoneSweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends; a failed sweep is logged and tried again at the next tick.
func (s *GoneSweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		n, err := s.Store.SweepGone(ctx, s.Gone)
		if err != nil {
			s.Log.Error(err, "sweep of the Leases of deleted objects failed; will try again")
		}
		if n > 0 {
			if s.Swept != nil {
				s.Swept.Add(float64(n))
			}
			s.Log.Info("deleted the state leases of deleted objects", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Gone asks the API server (not the cache) whether the object of a per-object Key exists.
func (s *GoneSweeper) Gone(ctx context.Context, rec Record) (bool, error) {
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGoneGrace
	}
	p, ok := rec.Key.Parts()
	if !ok || !s.Detectors[p.Detector] || p.KindGroup == "" || s.Now().Sub(rec.LastModified) < grace {
		return false, nil
	}
	kind, group, _ := strings.Cut(p.KindGroup, ".")
	gk := schema.GroupKind{Group: group, Kind: kind}
	for _, r := range s.Rules {
		if r.Kind != gk || (r.Detector != "" && r.Detector != p.Detector) {
			continue
		}
		switch {
		case r.Never:
			return false, nil
		case r.SecretLabels != nil:
			var secrets metav1.PartialObjectMetadataList
			secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			if err := s.Live.List(ctx, &secrets, client.InNamespace(p.Namespace), client.MatchingLabels(r.SecretLabels(p.Name))); err != nil {
				if apierrors.IsForbidden(err) {
					return false, nil // a Kustos that may not read the Secrets keeps the Lease
				}
				return false, err
			}
			return len(secrets.Items) == 0, nil
		case r.As != (schema.GroupKind{}):
			gk = r.As
		}
		break
	}
	m, err := s.Mapper.RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return true, nil // the kind itself is gone (its CRD deleted)
	}
	if err != nil {
		return false, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.GroupVersionKind)
	err = s.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
