package detectkit

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestSeen: Seen changes with what a detector decides on (the labels it names, the annotations
// with its prefixes, a new UID, a deletion; of the target or of its Namespace), and with nothing
// else, so that a change the detector does not read never keeps a merge waiting.
func TestSeen(t *testing.T) {
	w := lifecycle.Watches{MetadataAnnotationPrefixes: []string{"kustos.io/"}, MetadataLabels: []string{"kustos.io/expiration-ignore"}}
	base := func() (obj, ns *metav1.PartialObjectMetadata) {
		obj = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t", UID: "u1", ResourceVersion: "10",
			Labels: map[string]string{"app": "p"}, Annotations: map[string]string{"kustos.io/expires-at": "2026-12-01T00:00:00Z", "deployment.kubernetes.io/revision": "3"}}}
		ns = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "t", UID: "n1", ResourceVersion: "5"}}
		return obj, ns
	}
	o0, n0 := base()
	want := Seen(w, o0, n0)
	rows := []struct {
		name    string
		edit    func(obj, ns *metav1.PartialObjectMetadata)
		changes bool
	}{
		{"nothing", func(obj, ns *metav1.PartialObjectMetadata) {}, false},
		{"a status write (resourceVersion)", func(obj, ns *metav1.PartialObjectMetadata) { obj.ResourceVersion = "11"; ns.ResourceVersion = "6" }, false},
		{"a rollout's revision annotation", func(obj, ns *metav1.PartialObjectMetadata) {
			obj.Annotations["deployment.kubernetes.io/revision"] = "4"
		}, false},
		{"a label not read", func(obj, ns *metav1.PartialObjectMetadata) { obj.Labels["team"] = "x" }, false},
		{"the opt-out label", func(obj, ns *metav1.PartialObjectMetadata) { obj.Labels["kustos.io/expiration-ignore"] = "true" }, true},
		{"the opt-out label, empty", func(obj, ns *metav1.PartialObjectMetadata) { obj.Labels["kustos.io/expiration-ignore"] = "" }, true},
		{"a deadline moved", func(obj, ns *metav1.PartialObjectMetadata) {
			obj.Annotations["kustos.io/expires-at"] = "2026-12-02T00:00:00Z"
		}, true},
		{"an annotation read, added to the Namespace", func(obj, ns *metav1.PartialObjectMetadata) {
			ns.Annotations = map[string]string{"kustos.io/expiry-ignore": "true"}
		}, true},
		{"recreated (new UID)", func(obj, ns *metav1.PartialObjectMetadata) { obj.UID = "u2" }, true},
		{"being deleted", func(obj, ns *metav1.PartialObjectMetadata) { now := metav1.Now(); obj.DeletionTimestamp = &now }, true},
		{"a value's bytes moved into the key", func(obj, ns *metav1.PartialObjectMetadata) {
			delete(obj.Annotations, "kustos.io/expires-at")
			obj.Annotations["kustos.io/expires-at\x002026-12-01T00:00:00Z"] = ""
		}, true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			obj, ns := base()
			row.edit(obj, ns)
			if got := Seen(w, obj, ns); (got != want) != row.changes {
				t.Errorf("Seen changed %v, want %v", got != want, row.changes)
			}
		})
	}
	t.Run("no Namespace is not an empty one", func(t *testing.T) {
		obj, _ := base()
		if Seen(w, obj, nil) == Seen(w, obj, &metav1.PartialObjectMetadata{}) {
			t.Error("a cluster-scoped target reads like one in a Namespace without metadata")
		}
	})
	t.Run("a nil object in an interface", func(t *testing.T) {
		obj, _ := base()
		var none client.Object
		if Seen(w, obj, none) != Seen(w, obj, nil) {
			t.Error("nil objects differ")
		}
	})
}
