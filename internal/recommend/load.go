package recommend

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kustos-dev/kustos/internal/manifest"
)

// Object is one Kubernetes object read from the input, with where it came from. In what Load
// returns, Object.Object is one of *corev1.Namespace, *corev1.ResourceQuota, *corev1.Event
// (events.k8s.io/v1 events are converted), *appsv1.ReplicaSet, *appsv1.StatefulSet,
// *appsv1.DaemonSet, *batchv1.Job, *corev1.ReplicationController, *corev1.Pod or
// *coordinationv1.Lease, and namespaced objects without a namespace are in "default", as kubectl
// would put them.
type Object = manifest.Object

// InputError is input that cannot be used, printed as FILE:LINE: what is wrong.
type InputError = manifest.InputError

// kindKey is an apiVersion and kind as written in the input.
type kindKey struct{ apiVersion, kind string }

// kinds are the objects the decision reads; everything else in the input is skipped.
var kinds = map[kindKey]func() runtime.Object{
	{"v1", "Namespace"}:                 func() runtime.Object { return &corev1.Namespace{} },
	{"v1", "ResourceQuota"}:             func() runtime.Object { return &corev1.ResourceQuota{} },
	{"v1", "Event"}:                     func() runtime.Object { return &corev1.Event{} },
	{"events.k8s.io/v1", "Event"}:       func() runtime.Object { return &eventsv1.Event{} },
	{"v1", "ReplicationController"}:     func() runtime.Object { return &corev1.ReplicationController{} },
	{"v1", "Pod"}:                       func() runtime.Object { return &corev1.Pod{} },
	{"apps/v1", "ReplicaSet"}:           func() runtime.Object { return &appsv1.ReplicaSet{} },
	{"apps/v1", "StatefulSet"}:          func() runtime.Object { return &appsv1.StatefulSet{} },
	{"apps/v1", "DaemonSet"}:            func() runtime.Object { return &appsv1.DaemonSet{} },
	{"batch/v1", "Job"}:                 func() runtime.Object { return &batchv1.Job{} },
	{"coordination.k8s.io/v1", "Lease"}: func() runtime.Object { return &coordinationv1.Lease{} },
}

// decode is the manifest.Decoder of the kinds the decision reads.
func decode(apiVersion, kind string) runtime.Object {
	if newObject, ok := kinds[kindKey{apiVersion, kind}]; ok {
		return newObject()
	}
	return nil
}

// Load reads the objects the decision needs from data, YAML or JSON as manifest.Load reads it;
// other kinds are skipped. It converts events.k8s.io/v1 Events to core/v1, requires a name of
// Namespaces and ResourceQuotas, and puts namespaced objects without a namespace in "default".
// name is used in errors, which are *InputError values.
func Load(name string, data []byte) ([]Object, error) {
	objs, err := manifest.Load(name, data, decode)
	if err != nil {
		return nil, err
	}
	for i := range objs {
		if err := normalize(&objs[i]); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// normalize makes one decoded object what the decision expects.
func normalize(o *Object) error {
	if ev, ok := o.Object.(*eventsv1.Event); ok {
		o.Object = coreEvent(ev)
	}
	m, ok := o.Object.(metav1.Object)
	if !ok {
		return nil // every kind in kinds has metadata
	}
	_, isNamespace := o.Object.(*corev1.Namespace)
	_, isQuota := o.Object.(*corev1.ResourceQuota)
	if m.GetName() == "" && (isNamespace || isQuota) {
		kind := o.Object.GetObjectKind().GroupVersionKind().Kind
		return &InputError{File: o.File, Line: o.Line, Msg: kind + ": metadata.name is missing"}
	}
	if m.GetNamespace() == "" && !isNamespace {
		m.SetNamespace(metav1.NamespaceDefault)
	}
	return nil
}

// coreEvent converts an events.k8s.io/v1 Event to the core/v1 form the detector reads, as the
// API server does.
func coreEvent(e *eventsv1.Event) *corev1.Event {
	ev := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Related:             e.Related,
		Reason:              e.Reason,
		Message:             e.Note,
		Type:                e.Type,
		Action:              e.Action,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		EventTime:           e.EventTime,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		ev.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return ev
}
