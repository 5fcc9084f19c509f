package quota

import (
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Event reason and type of the events this detector reads. The controller watches only these,
// with a server-side field selector, so ordinary events never reach its cache.
const (
	EventReasonFailedCreate = "FailedCreate"
	EventTypeWarning        = corev1.EventTypeWarning
)

// EventTime is the latest moment an Event says it happened. Events carry up to five clocks
// depending on which API and which component wrote them; the newest one counts.
func EventTime(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.FirstTimestamp.Time, ev.LastTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}

// IsFailedCreate reports whether an event is a Warning FailedCreate, the only events read.
func IsFailedCreate(ev *corev1.Event) bool {
	return ev.Type == EventTypeWarning && ev.Reason == EventReasonFailedCreate
}

// FailureFromEvent reads one FailedCreate event. It returns an error wrapping
// ErrNotQuotaMessage for FailedCreate events that have nothing to do with quotas (callers skip
// those quietly), and another error for quota messages it cannot read (callers report those).
func FailureFromEvent(ev *corev1.Event) (Failure, error) {
	if !IsFailedCreate(ev) {
		return Failure{}, fmt.Errorf("event %s: %w", ev.Name, ErrNotQuotaMessage)
	}
	parsed, err := ParseEventMessage(ev.Message)
	if err != nil {
		return Failure{}, fmt.Errorf("event %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	f := Failure{
		EventName: ev.Name,
		LastSeen:  EventTime(ev),
		Message:   ev.Message,
		Parsed:    parsed,
	}
	switch ev.InvolvedObject.Kind {
	case "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Pod", "ReplicationController":
		f.Owner = Owner{Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name}
	}
	return f, nil
}

// MissingPods says how many pods an owner still lacks, from its spec and status:
// ReplicaSet/StatefulSet/ReplicationController spec.replicas − status.replicas, Job
// parallelism − active, DaemonSet desired − current. ok is false for anything else.
func MissingPods(obj runtime.Object) (missing int64, ok bool) {
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		return int64(replicas(o.Spec.Replicas)) - int64(o.Status.Replicas), true
	case *appsv1.StatefulSet:
		return int64(replicas(o.Spec.Replicas)) - int64(o.Status.Replicas), true
	case *corev1.ReplicationController:
		return int64(replicas(o.Spec.Replicas)) - int64(o.Status.Replicas), true
	case *batchv1.Job:
		parallelism := int64(1)
		if o.Spec.Parallelism != nil {
			parallelism = int64(*o.Spec.Parallelism)
		}
		if o.Spec.Completions != nil {
			// A job never runs more pods at once than it has completions left.
			left := int64(*o.Spec.Completions) - int64(o.Status.Succeeded)
			if left < parallelism {
				parallelism = left
			}
		}
		return parallelism - int64(o.Status.Active), true
	case *appsv1.DaemonSet:
		return int64(o.Status.DesiredNumberScheduled) - int64(o.Status.CurrentNumberScheduled), true
	case *corev1.Pod:
		return 1, true
	}
	return 0, false
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1 // the API default
	}
	return *p
}

// ErrOwnerNotFound is returned by an OwnerLookup when the failing owner no longer exists: its
// deficit went away with it.
var ErrOwnerNotFound = errors.New("owner not found")

// OwnerLookup finds the object a FailedCreate event is about. It returns (nil, nil) when it
// cannot know (an offline dump without workloads: the owner then counts as missing one pod),
// an error wrapping ErrOwnerNotFound when the owner is gone, and other errors for lookups that
// failed and should be retried.
type OwnerLookup func(kind, name string) (runtime.Object, error)

// CollectFailures reads the FailedCreate events of one namespace and keeps the ones that name
// the given quota, with the owner's missing pod count filled in through lookup (only for
// "exceeded quota" failures, the only ones whose arithmetic needs it). Messages that mention a
// quota but cannot be read are returned as problems; they never stop the others.
func CollectFailures(events []*corev1.Event, quotaName string, lookup OwnerLookup) (failures []Failure, problems []error, err error) {
	for _, ev := range events {
		f, perr := FailureFromEvent(ev)
		if perr != nil {
			if !errors.Is(perr, ErrNotQuotaMessage) {
				problems = append(problems, perr)
			}
			continue
		}
		if f.Parsed.Quota != quotaName {
			continue
		}
		if f.Parsed.Kind == FailureExceeded && f.Owner.Kind != "" && lookup != nil {
			obj, lerr := lookup(f.Owner.Kind, f.Owner.Name)
			if errors.Is(lerr, ErrOwnerNotFound) {
				continue
			}
			if lerr != nil {
				return nil, problems, fmt.Errorf("looking up %s %s: %w", f.Owner.Kind, f.Owner.Name, lerr)
			}
			if obj != nil {
				if m, ok := MissingPods(obj); ok {
					f.Owner.Missing, f.Owner.Known = m, true
				}
			}
		}
		failures = append(failures, f)
	}
	return failures, problems, nil
}
