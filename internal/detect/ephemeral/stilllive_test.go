package ephemeral

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// apiObjects answers Gets and Lists of ConfigMap metadata as the API server would (the one read
// stillLive makes; it is never a cache).
type apiObjects []metav1.PartialObjectMetadata

func (a apiObjects) Get(_ context.Context, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	for _, o := range a {
		if o.Namespace == k.Namespace && o.Name == k.Name {
			o.DeepCopyInto(obj.(*metav1.PartialObjectMetadata))
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, k.Name)
}

func (a apiObjects) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	l := list.(*metav1.PartialObjectMetadataList)
	for _, obj := range a {
		if obj.Namespace == o.Namespace && (o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(obj.Labels))) {
			l.Items = append(l.Items, obj)
		}
	}
	return nil
}

// TestStillLive: before a Cleaner reports its cleanup done (and goes), the objects of its targets
// marked for deletion are read from the API server: those its target cache did not show yet
// (the cache behind after an API server restart: seen in the soak, a Cleaner gone with its
// targets left) keep it waiting; those being deleted, another namespace's, unselected ones and
// targets not marked for deletion do not.
func TestStillLive(t *testing.T) {
	configMaps := &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}
	cm := func(ns, name string, lbls map[string]string, deleting bool) metav1.PartialObjectMetadata {
		o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
		if deleting {
			now := metav1.Now()
			o.DeletionTimestamp = &now
		}
		return o
	}
	scratch := labels.SelectorFromSet(labels.Set{"purpose": "scratch"})
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "t-1", Name: "c"}}
	rows := []struct {
		name    string
		api     apiObjects
		targets []resolvedTarget
		want    []string
	}{
		{"every target gone", nil, []resolvedTarget{
			{Target: Target{ObjectName: "c-git", Delete: true}, mapping: configMaps},
			{Target: Target{Selector: scratch, Delete: true}, mapping: configMaps}}, nil},
		{"a named target the cache did not show", apiObjects{cm("t-1", "c-git", nil, false)}, []resolvedTarget{
			{Target: Target{ObjectName: "c-git", Delete: true}, mapping: configMaps}}, []string{"ConfigMap/t-1/c-git"}},
		{"a selected target the cache did not show", apiObjects{cm("t-1", "c-scratch", map[string]string{"purpose": "scratch"}, false)}, []resolvedTarget{
			{Target: Target{Selector: scratch, Delete: true}, mapping: configMaps}}, []string{"ConfigMap/t-1/c-scratch"}},
		{"being deleted, another namespace's, not selected, not marked for deletion: none left", apiObjects{
			cm("t-1", "c-scratch", map[string]string{"purpose": "scratch"}, true),
			cm("t-2", "other", map[string]string{"purpose": "scratch"}, false),
			cm("t-1", "kept", map[string]string{"purpose": "kept"}, false),
			cm("t-1", "evidence", nil, false),
		}, []resolvedTarget{
			{Target: Target{Selector: scratch, Delete: true}, mapping: configMaps},
			{Target: Target{ObjectName: "evidence"}, mapping: configMaps}}, nil},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := &Reconciler{Live: row.api}
			got, err := r.stillLive(context.Background(), cl, row.targets)
			if err != nil || !slices.Equal(got, row.want) {
				t.Errorf("stillLive = %q, %v; want %q", got, err, row.want)
			}
		})
	}
}
