package inactivity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The snapshot's parts read off a target, shared by the controller (from the cache) and
// `kustos inactivity plan` (from files), so that both decide on the same inputs.

// TemplateRefOf reads the reference to a target's template object from its field ref: a name
// (the target's namespace) or a {name, namespace} map. found is false when the field is absent;
// a reference that cannot be followed is a Problem, and the target then goes by its own and its
// namespace's metadata.
func TemplateRefOf(obj *unstructured.Unstructured, ref []string) (namespace, name string, found bool, problem *Problem) {
	field := lifecycle.PathString(ref)
	on := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, ref...)
	if err != nil {
		return "", "", false, &Problem{On: on, Key: field, Value: err.Error(), Err: "cannot read the template reference; the template's metadata is not read"}
	}
	if !found {
		return "", "", false, nil
	}
	namespace = obj.GetNamespace()
	switch r := v.(type) {
	case string:
		name = r
	case map[string]any:
		name, _ = r["name"].(string)
		if n, ok := r["namespace"].(string); ok && n != "" {
			namespace = n
		}
	}
	if name == "" {
		return "", "", false, &Problem{On: on, Key: field, Value: fmt.Sprint(v), Err: "want a template name or {name, namespace}; the template's metadata is not read"}
	}
	return namespace, name, true, nil
}

// ActivityOf is what the sources know of a target: its Ref in each source (the source's target
// templates over its namespace, name, kind, labels and annotations), looked up in tracker.
func ActivityOf(obj *unstructured.Unstructured, t lifecycle.Target, sources []activity.Compiled, tracker *activity.Tracker) (activity.Activity, error) {
	vars := activity.TargetVars{Namespace: t.Namespace, Name: t.Name, Kind: t.Kind, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	if vars.Labels == nil {
		vars.Labels = map[string]string{}
	}
	if vars.Annotations == nil {
		vars.Annotations = map[string]string{}
	}
	refs := make(map[string]activity.Ref, len(sources))
	for i := range sources {
		ref, err := sources[i].RefOf(vars)
		if err != nil {
			return activity.Activity{}, err
		}
		refs[sources[i].Name] = ref
	}
	return tracker.Lookup(refs), nil
}
