package inactivity

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type recordedEvents []corev1.ObjectReference

func (r *recordedEvents) Notify(_ context.Context, ref corev1.ObjectReference, _, _, _, _ string, _ time.Time) error {
	*r = append(*r, ref)
	return nil
}

// shardOf selects the namespaces of one shard.
type shardOf map[string]bool

func (s shardOf) Selects(_ context.Context, ns string) (bool, error) { return ns == "" || s[ns], nil }
func (s shardOf) Matches(map[string]string) bool                     { return false }

// TestReportStaysInScope: a problem found on a template object is reported on that object when
// its namespace is this installation's, and on the target when it is another installation's
// (--namespace-selector): Kustos writes no Event into a namespace it does not serve.
func TestReportStaysInScope(t *testing.T) {
	target := corev1.ObjectReference{Kind: "Deployment", Namespace: "team-a", Name: "desk"}
	for _, tc := range []struct {
		name, templateNS string
		scope            Scope
		want             string // the namespace/name the Event is on
	}{
		{"no selector", "shared", nil, "shared/tpl"},
		{"template in the target's namespace", "team-a", shardOf{"team-a": true}, "team-a/tpl"},
		{"template in a selected namespace", "shared", shardOf{"team-a": true, "shared": true}, "shared/tpl"},
		{"template in another installation's namespace", "shared", shardOf{"team-a": true}, "team-a/desk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got recordedEvents
			r := &Reconciler{Reporter: &got, Scope: tc.scope}
			tpl := corev1.ObjectReference{Kind: "Template", Namespace: tc.templateNS, Name: "tpl"}
			err := r.report(context.Background(), logr.Discard(), target, []corev1.ObjectReference{tpl},
				[]Problem{{On: "Template/" + tc.templateNS + "/tpl", Key: "kustos.io/inactivity-timeout", Value: "x", Err: "bad"}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Namespace+"/"+got[0].Name != tc.want {
				t.Fatalf("Events on %v, want one on %s", got, tc.want)
			}
		})
	}
}

// listedObjects is a cache of objects of one kind, as the check's full sweep lists it.
type listedObjects []types.NamespacedName

func (l listedObjects) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not used")
}

func (l listedObjects) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	u := list.(*unstructured.UnstructuredList)
	for _, n := range l {
		o := unstructured.Unstructured{}
		o.SetNamespace(n.Namespace)
		o.SetName(n.Name)
		u.Items = append(u.Items, o)
	}
	return nil
}

// TestAfterCheck: the first check, and every FullSweepEvery-th, is followed by a look at every
// object of the kind (a template's new timeout is found there); the others only at the
// targets, which a look adds and removes.
func TestAfterCheck(t *testing.T) {
	desk, web, api := types.NamespacedName{Namespace: "lab", Name: "desk"}, types.NamespacedName{Namespace: "team", Name: "web"}, types.NamespacedName{Namespace: "team", Name: "api"}
	r := &Reconciler{Objects: listedObjects{desk, web, api}, Kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
	r.setTarget(desk, true)
	r.setTarget(web, true)
	r.setTarget(web, false) // its timeout was removed
	for check := 1; check <= 2*FullSweepEvery+1; check++ {
		got := r.afterCheck(context.Background())
		want := 1
		if check%FullSweepEvery == 1 {
			want = 3
		}
		if len(got) != want || (want == 1 && got[0].NamespacedName != desk) {
			t.Fatalf("check %d queued %v, want %d objects", check, got, want)
		}
	}
}
