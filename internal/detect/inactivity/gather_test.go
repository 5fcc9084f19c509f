package inactivity

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
