package detectkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/nsscope"
)

// oneObject answers reads of one object's metadata (nil: none), or fails with err.
type oneObject struct {
	obj *metav1.PartialObjectMetadata
	err error
}

func (o oneObject) Get(_ context.Context, n client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	if o.err != nil {
		return o.err
	}
	if o.obj == nil || o.obj.Name != n.Name || o.obj.Namespace != n.Namespace {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, n.Name)
	}
	o.obj.DeepCopyInto(out.(*metav1.PartialObjectMetadata))
	return nil
}

func (o oneObject) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

func TestReadTarget(t *testing.T) {
	deleting := metav1.Now()
	failed := errors.New("cache not synced")
	for _, tc := range []struct {
		name       string
		r          oneObject
		wantOK     bool
		wantErr    error
		wantForget string // "": not called; "gone", "deleting"
	}{
		{"there", oneObject{obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}}, true, nil, ""},
		{"gone: forgotten, no error", oneObject{}, false, nil, "gone"},
		{"being deleted: forgotten, not gone", oneObject{obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web",
			DeletionTimestamp: &deleting, Finalizers: []string{"x"}}}}, false, nil, "deleting"},
		{"a failed read: the error, nothing forgotten", oneObject{err: failed}, false, failed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forgot := ""
			forget := func(gone bool) {
				forgot = "deleting"
				if gone {
					forgot = "gone"
				}
			}
			ok, err := ReadTarget(context.Background(), tc.r, types.NamespacedName{Namespace: "a", Name: "web"}, &metav1.PartialObjectMetadata{}, forget)
			if ok != tc.wantOK || !errors.Is(err, tc.wantErr) || forgot != tc.wantForget {
				t.Errorf("ReadTarget = %v, %v, forget %q; want %v, %v, forget %q", ok, err, forgot, tc.wantOK, tc.wantErr, tc.wantForget)
			}
		})
	}
}

func TestReadNamespace(t *testing.T) {
	deleting := metav1.Now()
	failed := errors.New("cache not synced")
	for _, tc := range []struct {
		name    string
		r       oneObject
		wantOK  bool
		wantErr error
	}{
		{"there", oneObject{obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}}, true, nil},
		{"gone", oneObject{}, false, nil},
		{"being deleted", oneObject{obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", DeletionTimestamp: &deleting, Finalizers: []string{"x"}}}}, false, nil},
		{"a failed read", oneObject{err: failed}, false, failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, ok, err := ReadNamespace(context.Background(), tc.r, "team-a")
			if ok != tc.wantOK || !errors.Is(err, tc.wantErr) || (ok && ns.Name != "team-a") {
				t.Errorf("ReadNamespace = %v, %v, %v; want ok %v, %v", ns, ok, err, tc.wantOK, tc.wantErr)
			}
		})
	}
}

// TestInScope: Matches on the labels the reconcile read answers as Selects would from the same
// cache, for a namespaced object, a Namespace and a cluster-scoped object.
func TestInScope(t *testing.T) {
	ns := func(name, shard string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"shard": shard}}}
		o.SetGroupVersionKind(NamespaceGVK)
		return o
	}
	workload := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	workload.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	clusterWide := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	clusterWide.SetGroupVersionKind(schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"})
	mine, theirs := ns("team-a", "a"), ns("team-b", "b")
	sel, err := nsscope.New("shard=a", oneObject{obj: mine})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		scope Scope
		obj   client.Object
		ns    *metav1.PartialObjectMetadata
		want  bool
	}{
		{"no selector", nil, workload, theirs, true},
		{"an object of a selected namespace", sel, workload, mine, true},
		{"an object of another installation's namespace", sel, workload, theirs, false},
		{"a selected Namespace", sel, mine, nil, true},
		{"another installation's Namespace", sel, theirs, nil, false},
		{"a cluster-scoped object", sel, clusterWide, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InScope(tc.scope, tc.obj, tc.ns); got != tc.want {
				t.Errorf("InScope = %v, want %v", got, tc.want)
			}
			if tc.scope == nil || tc.ns == nil || tc.ns != mine {
				return
			}
			// The same answer as Selects from the cache holding the Namespace.
			if sel, err := tc.scope.Selects(context.Background(), tc.ns.Name); err != nil || sel != tc.want {
				t.Errorf("Selects = %v, %v; InScope said %v", sel, err, tc.want)
			}
		})
	}
}

type notified struct {
	ref        corev1.ObjectReference
	reason, id string
}

type recorder []notified

func (r *recorder) Notify(_ context.Context, ref corev1.ObjectReference, _, reason, _, id string, _ time.Time) error {
	*r = append(*r, notified{ref: ref, reason: reason, id: id})
	return nil
}

// TestReport: each problem's Event goes on the object its value is on, when it may be written
// there; its reason is the detector's unless the problem names one; its id keeps one per value.
func TestReport(t *testing.T) {
	target := corev1.ObjectReference{Kind: "Deployment", Namespace: "team-a", Name: "web"}
	nsRef := corev1.ObjectReference{Kind: "Namespace", Name: "team-a"}
	tpl := corev1.ObjectReference{Kind: "Template", Namespace: "shared", Name: "lab"}
	for _, tc := range []struct {
		name       string
		problem    Problem
		mayWrite   func(corev1.ObjectReference) bool
		wantOn     string
		wantReason string
		wantID     string
	}{
		{"on the target", Problem{On: "Deployment/team-a/web", Key: "kustos.io/ttl", Value: "x"}, nil,
			"Deployment", "InvalidThing", "thing-invalid|Deployment/team-a/web|kustos.io/ttl|x"},
		{"on its Namespace", Problem{On: "Namespace/team-a", Key: "kustos.io/ttl", Value: "x"}, nil,
			"Namespace", "InvalidThing", "thing-invalid|Namespace/team-a|kustos.io/ttl|x"},
		{"on its template", Problem{On: "Template/shared/lab", Key: "kustos.io/ttl", Value: "x"}, nil,
			"Template", "InvalidThing", "thing-invalid|Template/shared/lab|kustos.io/ttl|x"},
		{"on a template it may not write to: on the target", Problem{On: "Template/shared/lab", Key: "kustos.io/ttl", Value: "x"},
			func(o corev1.ObjectReference) bool { return o.Namespace != "shared" },
			"Deployment", "InvalidThing", "thing-invalid|Template/shared/lab|kustos.io/ttl|x"},
		{"a reason of its own", Problem{On: "Deployment/team-a/web", Key: "kustos.io/owner", Value: "x", Reason: "InvalidOwner"}, nil,
			"Deployment", "InvalidOwner", "thing-invalid|InvalidOwner|Deployment/team-a/web|kustos.io/owner|x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			ps := Problems{Detector: "thing", Reason: "InvalidThing", Reporter: &rec, Log: logr.Discard()}
			if err := ps.Report(context.Background(), target, []corev1.ObjectReference{tpl, nsRef}, tc.mayWrite, []Problem{tc.problem}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if len(rec) != 1 || rec[0].ref.Kind != tc.wantOn || rec[0].reason != tc.wantReason || rec[0].id != tc.wantID {
				t.Errorf("Report wrote %+v; want one Event on the %s, reason %s, id %s", rec, tc.wantOn, tc.wantReason, tc.wantID)
			}
		})
	}
}
