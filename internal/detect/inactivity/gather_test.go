package inactivity

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func instance(spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crownlabs.polito.it/v1alpha2", "kind": "Instance",
		"metadata": map[string]any{"namespace": "tenant-ana", "name": "vm-1"}, "spec": spec}}
	return u
}

func TestTemplateRefOf(t *testing.T) {
	ref := []string{"spec", "template"}
	cases := []struct {
		name            string
		spec            map[string]any
		ns, tpl         string
		found, problems bool
	}{
		{"a {name, namespace} map (CrownLabs)", map[string]any{"template": map[string]any{"name": "ubuntu", "namespace": "workspace-os"}}, "workspace-os", "ubuntu", true, false},
		{"a name: the target's namespace", map[string]any{"template": "ubuntu"}, "tenant-ana", "ubuntu", true, false},
		{"absent: no template, no problem", map[string]any{}, "", "", false, false},
		{"a map without a name", map[string]any{"template": map[string]any{"namespace": "x"}}, "", "", false, true},
		{"a number", map[string]any{"template": int64(3)}, "", "", false, true},
		{"the path goes through a string", map[string]any{"template": "x", "other": 1}, "tenant-ana", "x", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, name, found, p := TemplateRefOf(instance(tc.spec), ref)
			if ns != tc.ns || name != tc.tpl || found != tc.found || (p != nil) != tc.problems {
				t.Errorf("TemplateRefOf = %q %q %v %v, want %q %q %v problem %v", ns, name, found, p, tc.ns, tc.tpl, tc.found, tc.problems)
			}
		})
	}
	// A path through a scalar is the manifest's problem, not a crash.
	if _, _, found, p := TemplateRefOf(instance(map[string]any{"template": "x"}), []string{"spec", "template", "name"}); found || p == nil {
		t.Errorf("a path through a string: found %v, problem %v", found, p)
	}
}

func TestRunning(t *testing.T) {
	running := Pause{Field: []string{"spec", "running"}, Value: "false"}
	cases := []struct {
		name  string
		spec  map[string]any
		pause Pause
		want  bool
		err   bool
	}{
		{"replicas absent: 1", map[string]any{}, Pause{}, true, false},
		{"replicas 0", map[string]any{"replicas": int64(0)}, Pause{}, false, false},
		{"replicas 2", map[string]any{"replicas": int64(2)}, Pause{}, true, false},
		{"replicas a string", map[string]any{"replicas": "two"}, Pause{}, false, true},
		{"running: false", map[string]any{"running": false}, running, false, false},
		{"running: true", map[string]any{"running": true}, running, true, false},
		{"running absent", map[string]any{}, running, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Running(instance(tc.spec), tc.pause)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("Running = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestTargetFields: the cache keeps what Running and TemplateRefOf read, and a target trimmed to
// it decides as the whole one (replicas, pause field, template reference).
func TestTargetFields(t *testing.T) {
	cases := []struct {
		name        string
		pause       Pause
		templateRef []string
		want        [][]string
	}{
		{"scale to zero", Pause{}, nil, [][]string{{"spec", "replicas"}}},
		{"a pause field", Pause{Field: []string{"spec", "running"}, Value: "false"}, nil, [][]string{{"spec", "replicas"}, {"spec", "running"}}},
		{"a pause field and a template", Pause{Field: []string{"spec", "running"}, Value: "false"}, []string{"spec", "templateRef"},
			[][]string{{"spec", "replicas"}, {"spec", "running"}, {"spec", "templateRef"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TargetFields(tc.pause, tc.templateRef); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("TargetFields = %v, want %v", got, tc.want)
			}
			w := Watches([]schema.GroupVersionKind{{Group: "crownlabs.polito.it", Version: "v1alpha2", Kind: "Instance"}}, tc.pause, tc.templateRef)
			if got := w.ObjectFields[lifecycle.ObjectKind{Group: "crownlabs.polito.it", Version: "v1alpha2", Kind: "Instance"}]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Watches' fields of the kind = %v, want %v", got, tc.want)
			}
		})
	}
}
