package expiry

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// TestMetadataChanged: only what Decide reads wakes the detector. The cache may keep every
// annotation (for Cleaners); a rollout's revision annotation or a GitOps tool's sync label must
// not queue 10,000 looks.
func TestMetadataChanged(t *testing.T) {
	base := func() *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{AnnotationOwner: "ana", "deployment.kubernetes.io/revision": "1"}}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(o *metav1.PartialObjectMetadata)
		want   bool
	}{
		{"nothing", func(*metav1.PartialObjectMetadata) {}, false},
		{"a rollout's revision", func(o *metav1.PartialObjectMetadata) { o.Annotations["deployment.kubernetes.io/revision"] = "2" }, false},
		{"another label", func(o *metav1.PartialObjectMetadata) { o.Labels["app"] = "api" }, false},
		{"the owner", func(o *metav1.PartialObjectMetadata) { o.Annotations[AnnotationOwner] = "bo" }, true},
		{"a lifetime added", func(o *metav1.PartialObjectMetadata) { o.Annotations[AnnotationTTL] = "1d" }, true},
		{"the owner removed", func(o *metav1.PartialObjectMetadata) { delete(o.Annotations, AnnotationOwner) }, true},
		{"the opt-out label", func(o *metav1.PartialObjectMetadata) { o.Labels[LabelIgnore] = "true" }, true},
		{"being deleted", func(o *metav1.PartialObjectMetadata) { o.DeletionTimestamp = &now }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := metadataChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !metadataChanged().Create(event.CreateEvent{Object: base()}) || !metadataChanged().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("a creation or deletion must be looked at")
	}
}

// TestTargetsChangedNamespaceJoins: a Namespace that is itself an expiry target and joins the
// selector (only its shard label changes, which Decide does not read) is looked at.
func TestTargetsChangedNamespaceJoins(t *testing.T) {
	scope, err := nsscope.New("kustos.io/shard=b", nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := func(shard string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: map[string]string{"kustos.io/shard": shard}}}
		o.SetGroupVersionKind(detectkit.NamespaceGVK)
		return o
	}
	r := &Reconciler{Kind: detectkit.NamespaceGVK, Scope: scope}
	if !r.targetsChanged().Update(event.UpdateEvent{ObjectOld: ns("a"), ObjectNew: ns("b")}) {
		t.Error("a Namespace joining the selector is not looked at")
	}
	if r.targetsChanged().Update(event.UpdateEvent{ObjectOld: ns("b"), ObjectNew: ns("a")}) {
		t.Error("a Namespace leaving the selector is looked at (nothing to do there)")
	}
}
