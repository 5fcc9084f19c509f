package ephemeral

import (
	"reflect"
	"sort"
	"testing"

	celast "github.com/google/cel-go/common/ast"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// TestWholeReads: a condition that reads only apiVersion, kind and metadata of a target leaves
// it to be read as metadata; any other read, or a use the analysis does not follow, needs the
// whole object.
func TestWholeReads(t *testing.T) {
	vars := []variable{{name: "web"}, {name: "pods", selector: true}, {name: "cm"}}
	cases := []struct {
		cond  string
		whole []string
	}{
		{`web.metadata.labels["team"] == "a"`, nil},
		{`web["metadata"]["annotations"]["x"] == "y"`, nil},
		{`has(web.metadata.labels.team)`, nil},
		{`web == null || web.metadata.creationTimestamp < string(time)`, nil},
		{`null != web && web.kind == "Deployment" && web.apiVersion == "apps/v1"`, nil},
		{`timestamp(web.metadata.creationTimestamp) + duration("1h") < time`, nil},
		{`pods.items.size() == 0 || size(pods.items) > 3`, nil},
		{`pods.items.all(p, p.metadata.labels.exists(k, k.startsWith("x")))`, nil},
		{`pods.items.exists(p, p.metadata.name == web.metadata.name)`, nil},
		{`pods.items[0].metadata.name == "a"`, nil},
		{`"team" in web.metadata.labels`, nil},
		{`web.spec.replicas == 0`, []string{"web"}},
		{`has(web.status)`, []string{"web"}},
		{`web["data"]["done"] == "yes"`, []string{"web"}},
		{`pods.items.all(p, p.status.phase == "Succeeded")`, []string{"pods"}},
		{`pods.items[0].spec.nodeName == ""`, []string{"pods"}},
		{`pods.items.map(p, p).exists(p, p.metadata.name == "a")`, []string{"pods"}},
		{`pods.items.filter(p, p.metadata.name == "a").size() == 1`, []string{"pods"}},
		{`web == cm`, []string{"cm", "web"}},
		{`"spec" in web`, []string{"web"}},
		{`web.metadata.labels[cm.data.team] == "x"`, []string{"cm"}},
		{`web.exists(k, k == "spec")`, []string{"web"}},
		{`string(web).size() > 0`, []string{"web"}},
		{`[web, cm].size() == 2 && cm.metadata.name == "x"`, []string{"cm", "web"}},
		{`{"a": web}.size() == 1`, []string{"web"}},
		{`(web.metadata.name == "a" ? web : cm).metadata.name == "a"`, []string{"cm", "web"}},
		{`pods.items.exists(web, web.spec.x == 1) && web.metadata.name == "a"`, []string{"pods"}},
		{`[1, 2].exists(web, web == 1) && web.spec.x == 1`, []string{"web"}},
		{`cm.data.done == "yes" && web.metadata.name == "a"`, []string{"cm"}},
		{`time > timestamp("2024-01-01T00:00:00Z")`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.cond, func(t *testing.T) {
			var got []string
			for name, f := range fieldReads(checked(t, vars, tc.cond), vars) {
				if f.Beyond() {
					got = append(got, name)
				}
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.whole) {
				t.Errorf("read whole: %v, want %v", got, tc.whole)
			}
		})
	}
}

// checked is cond compiled and checked in the conditions' environment over vars.
func checked(t *testing.T, vars []variable, cond string) celast.Expr {
	t.Helper()
	env, err := newEnv(canonical(vars))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(cond)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	return ast.NativeRep().Expr()
}

// TestCompileMarksWholeTargets: Compile reads a target whole only when one of the conditions
// reads it beyond metadata; a target no condition evaluates is never whole.
func TestCompileMarksWholeTargets(t *testing.T) {
	f := false
	targets := []v1alpha1.Target{
		{Name: "web", Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", Name: "web"}},
		{Name: "pods", Reference: v1alpha1.Reference{Version: "v1", Kind: "Pod", MatchLabels: map[string]string{"app": "web"}}},
		{Name: "gone", Reference: v1alpha1.Reference{Version: "v1", Kind: "Service", Name: "web"}, Delete: true, IncludeWhenEvaluating: &f},
	}
	cases := []struct {
		name       string
		conditions []string
		whole      map[string]bool
	}{
		{"metadata only", []string{`web.metadata.labels.team == "a"`, `pods.items.all(p, has(p.metadata.annotations))`},
			map[string]bool{"web": false, "pods": false, "gone": false}},
		{"one condition reads the pods' status", []string{`web.metadata.labels.team == "a"`, `pods.items.all(p, p.status.phase == "Succeeded")`},
			map[string]bool{"web": false, "pods": true, "gone": false}},
		{"no conditions", nil, map[string]bool{"web": false, "pods": false, "gone": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Compile(v1alpha1.CleanerSpec{TTL: "1h", Targets: targets, Conditions: tc.conditions})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			for _, tg := range spec.Targets {
				if tg.Whole != tc.whole[tg.Name] {
					t.Errorf("target %s: Whole = %v, want %v", tg.Name, tg.Whole, tc.whole[tg.Name])
				}
			}
		})
	}
}

// TestFromMetadataOwnsItsMaps: the objects read as metadata are the cache's own (no deep copy);
// what the conditions get must not share a map with them.
func TestFromMetadataOwnsItsMaps(t *testing.T) {
	cases := []struct {
		name string
		meta metav1.ObjectMeta
	}{
		{"labels and annotations", metav1.ObjectMeta{Name: "a", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"x": "y"}}},
		{"owner references", metav1.ObjectMeta{Name: "b", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &metav1.PartialObjectMetadata{ObjectMeta: tc.meta}
			before := o.DeepCopy()
			u, err := fromMetadata(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, o)
			if err != nil {
				t.Fatal(err)
			}
			m := u.Object["metadata"].(map[string]any) //nolint:forcetypeassert // fromMetadata builds it
			m["name"] = "changed"
			if l, ok := m["labels"].(map[string]any); ok {
				l["team"] = "changed"
			}
			if refs, ok := m["ownerReferences"].([]any); ok {
				refs[0].(map[string]any)["name"] = "changed" //nolint:forcetypeassert // as above
			}
			if !reflect.DeepEqual(o, before) {
				t.Errorf("changing the conditions' object changed the cached one: %+v", o.ObjectMeta)
			}
			if u.GetKind() != "Pod" || u.GetAPIVersion() != "v1" {
				t.Errorf("kind %s/%s, want v1/Pod", u.GetAPIVersion(), u.GetKind())
			}
		})
	}
}

// TestMetadataView: a target read as metadata from the whole object's informer shows the
// conditions what an informer of its metadata would: apiVersion, kind and metadata.
func TestMetadataView(t *testing.T) {
	cases := []struct {
		name string
		obj  map[string]any
		want map[string]any
	}{
		{"a ConfigMap", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "y"}},
			"data": map[string]any{"done": "yes"}},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "y"}}}},
		{"no metadata", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{}},
			map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := metadataView(&unstructured.Unstructured{Object: tc.obj}).Object; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("view %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFieldPaths: what a condition reads of each target beyond metadata, as the field paths a
// trimmed cached copy must keep, or all of the object when the reads cannot be pinned to paths.
func TestFieldPaths(t *testing.T) {
	vars := []variable{{name: "web"}, {name: "pods", selector: true}, {name: "cm"}}
	all := Fields{All: true}
	paths := func(ps ...[]string) Fields { return Fields{Paths: ps} }
	p := func(names ...string) []string { return names }
	cases := []struct {
		cond string
		want map[string]Fields
	}{
		{`web.metadata.labels["team"] == "a" && web.kind == "Deployment"`, map[string]Fields{}},
		{`web.spec.replicas == 0`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`web["spec"]["replicas"] == 0`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`web.spec["template"].metadata.labels.app == "x"`, map[string]Fields{"web": paths(p("spec", "template", "metadata", "labels", "app"))}},
		{`cm.data.done == "yes" && web.metadata.name == "a"`, map[string]Fields{"cm": paths(p("data", "done"))}},
		{`has(web.spec.replicas)`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`has(web.status)`, map[string]Fields{"web": paths(p("status"))}},
		{`has(web.spec) && web.spec.exists(k, k == "x")`, map[string]Fields{"web": paths(p("spec"))}},
		{`web.spec.replicas == 0 && web.spec.paused == true && web.spec.replicas < 3`,
			map[string]Fields{"web": paths(p("spec", "paused"), p("spec", "replicas"))}},
		{`web.spec.replicas == 0 && size(web.spec) > 1`, map[string]Fields{"web": paths(p("spec"))}},
		{`pods.items.all(p, p.status.phase == "Succeeded")`, map[string]Fields{"pods": paths(p("status", "phase"))}},
		{`pods.items.exists(p, p.spec.nodeName == web.spec.x)`,
			map[string]Fields{"pods": paths(p("spec", "nodeName")), "web": paths(p("spec", "x"))}},
		{`pods.items[0].spec.nodeName == ""`, map[string]Fields{"pods": paths(p("spec", "nodeName"))}},
		{`pods.items.map(p, p.status.phase).all(s, s == "x")`, map[string]Fields{"pods": paths(p("status", "phase"))}},
		{`pods.items.map(p, p).exists(p, p.metadata.name == "a")`, map[string]Fields{"pods": all}},
		{`pods.items.filter(p, p.status.phase == "x").size() == 1`, map[string]Fields{"pods": all}},
		{`pods.items.size() == 0 || size(pods.items) > 3`, map[string]Fields{}},
		{`web.spec.containers.all(c, c.image == "x")`, map[string]Fields{"web": paths(p("spec", "containers"))}},
		{`web.spec.containers[0].image == "x"`, map[string]Fields{"web": paths(p("spec", "containers"))}},
		{`web.spec[cm.data.key] == 1`, map[string]Fields{"web": paths(p("spec")), "cm": paths(p("data", "key"))}},
		{`web.status.size() > 0`, map[string]Fields{"web": paths(p("status"))}},
		{`"replicas" in web.spec`, map[string]Fields{"web": paths(p("spec"))}},
		{`string(web.spec.replicas) == "0"`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`(web.metadata.name == "a" ? web.spec : cm.data).x == 1`,
			map[string]Fields{"web": paths(p("spec")), "cm": paths(p("data"))}},
		{`web.spec.replicas == null`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`web == null || web.spec.replicas == 0`, map[string]Fields{"web": paths(p("spec", "replicas"))}},
		{`web == cm`, map[string]Fields{"web": all, "cm": all}},
		{`web.spec == cm.spec`, map[string]Fields{"web": paths(p("spec")), "cm": paths(p("spec"))}},
		{`"spec" in web`, map[string]Fields{"web": all}},
		{`web.exists(k, k == "spec")`, map[string]Fields{"web": all}},
		{`web[cm.data.key] == 1`, map[string]Fields{"web": all, "cm": paths(p("data", "key"))}},
		{`string(web).size() > 0`, map[string]Fields{"web": all}},
		{`[web.spec.x, 1].size() == 2`, map[string]Fields{"web": paths(p("spec", "x"))}},
		{`(web.metadata.name == "a" ? web : cm).spec.x == 1`, map[string]Fields{"web": all, "cm": all}},
		{`pods.items.exists(web, web.spec.x == 1) && web.metadata.name == "a"`, map[string]Fields{"pods": paths(p("spec", "x"))}},
	}
	for _, tc := range cases {
		t.Run(tc.cond, func(t *testing.T) {
			if got := fieldReads(checked(t, vars, tc.cond), vars); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reads %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOptionalAndBindNotOffered: the conditions' environment offers neither optional field
// selection (web.?spec) nor cel.bind, so the analysis need not follow them; should one be
// added, this fails and the analysis needs cases for it.
func TestOptionalAndBindNotOffered(t *testing.T) {
	env, err := newEnv([]variable{{name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range []string{`web.?spec.orValue(null) == null`, `cel.bind(s, web.spec, s.replicas == 0)`} {
		if _, iss := env.Compile(cond); iss.Err() == nil {
			t.Errorf("%s compiles: the field analysis must learn it", cond)
		}
	}
}
