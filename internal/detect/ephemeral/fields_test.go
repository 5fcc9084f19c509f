package ephemeral

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

var deployments = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func deployment(name string, spec map[string]any) *unstructured.Unstructured {
	o := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns", "labels": map[string]any{"app": name}},
		"status":   map[string]any{"replicas": int64(2)},
	}
	if spec != nil {
		o["spec"] = spec
	}
	return &unstructured.Unstructured{Object: o}
}

func compileOne(t *testing.T, cond string) *Spec {
	t.Helper()
	spec, errs := Compile(v1alpha1.CleanerSpec{TTL: "1h", Conditions: []string{cond}, Targets: []v1alpha1.Target{
		{Name: "web", Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", Name: "web"}}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return spec
}

// TestTrimmedEvaluatesAsWhole: a condition evaluated on the copy the cache keeps (trimmed to the
// fields it reads) has the value, or fails, as it does on the whole object: a missing field,
// has() of an absent one, a list read under a path, a map iterated.
func TestTrimmedEvaluatesAsWhole(t *testing.T) {
	conds := []string{
		`web.spec.replicas == 0`,
		`has(web.spec.replicas)`,
		`has(web.spec.paused) && web.spec.paused`,
		`web.spec.template.spec.containers.all(c, c.image == "x")`,
		`web.spec.template.metadata.labels.exists(k, k == "tier")`,
		`web.spec.replicas == null`,
		`"replicas" in web.spec`,
		`web == null || web.metadata.labels.app == "web"`,
	}
	objs := map[string]*unstructured.Unstructured{
		"replicas 0": deployment("web", map[string]any{"replicas": int64(0), "paused": true,
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "a"}},
				"spec": map[string]any{"containers": []any{map[string]any{"image": "x", "name": "c"}}}}}),
		"replicas 3":     deployment("web", map[string]any{"replicas": int64(3), "strategy": map[string]any{"type": "Recreate"}}),
		"no replicas":    deployment("web", map[string]any{"selector": map[string]any{}}),
		"no spec":        deployment("web", nil),
		"spec not a map": deployment("web", nil),
	}
	objs["spec not a map"].Object["spec"] = "odd"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eval := func(s *Spec, o map[string]any) Result {
		d := s.Decide(context.Background(), Snapshot{Created: now.Add(-2 * time.Hour), Now: now, Objects: map[string][]map[string]any{"web": {o}}})
		return d.Results[0]
	}
	for _, cond := range conds {
		for name, o := range objs {
			t.Run(cond+"/"+name, func(t *testing.T) {
				s := compileOne(t, cond)
				var reg FieldRegistry
				need := reg.Need(deployments, s.Targets[0].Fields)
				cp := o.DeepCopy()
				if _, err := reg.Transform(cp); err != nil {
					t.Fatal(err)
				}
				if !trimmedFor(cp, need) {
					t.Fatalf("a copy trimmed at the current union does not hold it")
				}
				whole, trimmed := eval(s, o.Object), eval(s, cp.Object)
				if whole.Value != trimmed.Value || (whole.Err == nil) != (trimmed.Err == nil) {
					t.Errorf("on the whole object %v (%v), on the trimmed copy %v (%v); copy %v", whole.Value, whole.Err, trimmed.Value, trimmed.Err, cp.Object)
				}
			})
		}
	}
}

// TestFieldRegistry: the cache keeps apiVersion, kind, metadata and the union's paths, marks
// each copy with the union's version (removed before the conditions see it), and a copy trimmed
// before the union grew does not hold what the growth added.
func TestFieldRegistry(t *testing.T) {
	replicas := Fields{Paths: [][]string{{"spec", "replicas"}}}
	labels := Fields{Paths: [][]string{{"spec", "template", "metadata", "labels"}}}
	var reg FieldRegistry
	obj := func() *unstructured.Unstructured {
		return deployment("web", map[string]any{"replicas": int64(1), "strategy": map[string]any{"type": "Recreate"},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": map[string]any{"x": "y"}}})
	}
	trim := func() *unstructured.Unstructured {
		u := obj()
		if _, err := reg.Transform(u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if got := trim(); !reflect.DeepEqual(got.Object, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": obj().Object["metadata"], trimVersionKey: int64(0)}) {
		t.Errorf("a kind no Cleaner reads beyond metadata: %v", got.Object)
	}
	v1 := reg.Need(deployments, replicas)
	if again := reg.Need(deployments, replicas); again != v1 || v1 == 0 {
		t.Errorf("versions %d then %d for the same fields: want one, not 0", v1, again)
	}
	before := trim()
	if want := map[string]any{"replicas": int64(1)}; !reflect.DeepEqual(before.Object["spec"], want) {
		t.Errorf("spec %v, want %v", before.Object["spec"], want)
	}
	if _, ok := before.Object["status"]; ok {
		t.Errorf("status kept, no condition reads it")
	}
	v2 := reg.Need(deployments, labels)
	if v2 <= v1 {
		t.Fatalf("the union grew, its version did not: %d, %d", v1, v2)
	}
	if got := reg.Need(deployments, replicas); got != v1 {
		t.Errorf("fields the union held since version %d need version %d: a copy trimmed before the union grew holds them", v1, got)
	}
	if got := reg.Need(deployments, labels); got != v2 {
		t.Errorf("the fields that grew the union need version %d, got %d", v2, got)
	}
	if !trimmedFor(before.DeepCopy(), v1) {
		t.Errorf("a copy trimmed at version %d does not hold that version's fields", v1)
	}
	stale := before.DeepCopy()
	if trimmedFor(stale, v2) {
		t.Errorf("a copy trimmed at %d holds version %d's fields", v1, v2)
	}
	if _, ok := stale.Object[trimVersionKey]; ok {
		t.Errorf("the mark is left for the conditions to see")
	}
	after := trim()
	want := map[string]any{"replicas": int64(1), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}}}
	if !reflect.DeepEqual(after.Object["spec"], want) || !trimmedFor(after, v2) {
		t.Errorf("after the growth: spec %v, want %v", after.Object["spec"], want)
	}
	reg.Need(deployments, Fields{All: true})
	if got := trim(); !reflect.DeepEqual(got.Object["status"], obj().Object["status"]) {
		t.Errorf("a condition reading all of it: status %v", got.Object["status"])
	}
	// The mark survives the cache's deep copies.
	_ = runtime.DeepCopyJSONValue(trim().Object)
}

// TestFieldRegistryKeep: paths another detector reads through the TargetCache (the inactivity
// detector's replicas and pause field) are in every copy from the first one on, overlapping
// paths kept once; a Cleaner reading one of them needs no newer copy, and a Cleaner growing the
// union keeps them.
func TestFieldRegistryKeep(t *testing.T) {
	var reg FieldRegistry
	reg.Keep(deployments, [][]string{{"spec", "replicas"}, {"spec", "replicas"}, {"spec", "strategy", "type"}, {"spec", "strategy"}})
	want := Fields{Paths: [][]string{{"spec", "replicas"}, {"spec", "strategy"}}}
	if got := reg.Fields(deployments); !reflect.DeepEqual(got, want) {
		t.Fatalf("union %v, want %v", got, want)
	}
	obj := func() *unstructured.Unstructured {
		return deployment("web", map[string]any{"replicas": int64(1), "strategy": map[string]any{"type": "Recreate"},
			"template": map[string]any{"spec": map[string]any{"x": "y"}}})
	}
	u := obj()
	if _, err := reg.Transform(u); err != nil {
		t.Fatal(err)
	}
	if got, want := u.Object["spec"], map[string]any{"replicas": int64(1), "strategy": map[string]any{"type": "Recreate"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("first copy's spec %v, want %v", got, want)
	}
	if v := reg.Need(deployments, Fields{Paths: [][]string{{"spec", "replicas"}}}); !trimmedFor(u.DeepCopy(), v) {
		t.Errorf("a Cleaner reading a kept path needs version %d, newer than the first copy", v)
	}
	reg.Need(deployments, Fields{Paths: [][]string{{"spec", "template"}}})
	u = obj()
	if _, err := reg.Transform(u); err != nil {
		t.Fatal(err)
	}
	if got := u.Object["spec"].(map[string]any); got["replicas"] != int64(1) || got["strategy"] == nil || got["template"] == nil { //nolint:forcetypeassert // trim keeps the map
		t.Errorf("after a Cleaner grew the union: spec %v", got)
	}
}

// targetStore is the TargetCache as read: one cached copy per name (only Get is used).
type targetStore struct {
	cache.Cache
	objs map[string]*unstructured.Unstructured
}

func (s *targetStore) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o, ok := s.objs[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, key.Name)
	}
	o.DeepCopyInto(obj.(*unstructured.Unstructured)) //nolint:forcetypeassert // the Cleaners read unstructured objects
	return nil
}

// apiServer is the API server as read: the object as it is now; it counts the reads.
type apiServer struct {
	obj   *unstructured.Unstructured
	reads int
}

func (a *apiServer) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	a.reads++
	a.obj.DeepCopyInto(obj.(*unstructured.Unstructured)) //nolint:forcetypeassert // as above
	return nil
}

func (a *apiServer) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed here")
}

// TestStaleCopyReadLiveOnce: a cached copy trimmed before the union grew is read from the API
// server once per state of its object (resourceVersion), not at every evaluation; the live copy
// stands for it only while the cache holds that state, and only if it holds the fields needed.
func TestStaleCopyReadLiveOnce(t *testing.T) {
	web := func(rv string) *unstructured.Unstructured {
		u := deployment("web", map[string]any{"replicas": int64(1),
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}}})
		u.SetUID("uid-web")
		u.SetResourceVersion(rv)
		u.Object["status"] = map[string]any{"replicas": int64(1)}
		return u
	}
	reg := &FieldRegistry{}
	v1 := reg.Need(deployments, Fields{Paths: [][]string{{"spec", "replicas"}}})
	cached := func(rv string) *unstructured.Unstructured {
		u := web(rv)
		if _, err := reg.Transform(u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	store := &targetStore{objs: map[string]*unstructured.Unstructured{"web": cached("1")}}
	api := &apiServer{obj: web("1")}
	r := &Reconciler{TargetCache: store, Live: api, Fields: reg, liveCopies: newLiveCopies()}
	labels := Fields{Paths: [][]string{{"spec", "template", "metadata", "labels"}}}
	v2 := reg.Need(deployments, labels)
	target := Target{Name: "web", ObjectName: "web", Whole: true, Fields: labels}
	const v3 = 3 // the union's version after the step that adds status
	read := func(need int64) *unstructured.Unstructured {
		t.Helper()
		objs, err := r.read(context.Background(), deployments, "ns", target, false, need)
		if err != nil || len(objs) != 1 {
			t.Fatalf("read = %v, %v", objs, err)
		}
		return objs[0]
	}
	steps := []struct {
		name      string
		before    func()
		need      int64
		wantReads int
		wantRV    string
	}{
		{"fresh copy, need met", nil, v1, 0, "1"},
		{"stale copy: read live", nil, v2, 1, "1"},
		{"stale copy again, same state: the live copy", nil, v2, 1, "1"},
		{"the object changed, the cache still holds state 1: the live copy of state 1", func() { api.obj = web("2") }, v2, 1, "1"},
		{"more fields needed than the live copy was trimmed for: read live", func() {
			reg.Need(deployments, Fields{Paths: [][]string{{"status"}}})
			api.obj = web("1")
		}, v3, 2, "1"},
		{"the cache holds state 2, trimmed anew: no live read", func() { store.objs["web"] = cached("2") }, v3, 2, "2"},
		{"a stale copy of a state the live copy is not of: read live", func() {
			stale := web("3")
			stale.Object = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": stale.Object["metadata"],
				"spec": map[string]any{"replicas": int64(1)}, trimVersionKey: v1}
			store.objs["web"] = stale
			api.obj = web("3")
		}, v3, 3, "3"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		got := read(s.need)
		if api.reads != s.wantReads || got.GetResourceVersion() != s.wantRV {
			t.Errorf("%s: %d live reads, state %s; want %d, %s", s.name, api.reads, got.GetResourceVersion(), s.wantReads, s.wantRV)
		}
		if _, marked := got.Object[trimVersionKey]; marked {
			t.Errorf("%s: the mark reached the conditions", s.name)
		}
		if s.need >= v2 {
			if l, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "metadata", "labels"); l["app"] != "web" {
				t.Errorf("%s: the pod template's labels are missing: %v", s.name, got.Object)
			}
		}
	}
}
