package ephemeral

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names reports whether an object of kind gvk belongs to the target's reference: same group and
// version, and Kind naming the kind or its resource in any case (Service, service, services), as
// the RESTMapper resolves it in the cluster. The offline tool matches kinds with it; resource
// names are guessed as the RESTMapper's default does (lower-case plural).
func (t Target) Names(gvk schema.GroupVersionKind) bool {
	if gvk.Group != t.Group || gvk.Version != t.Version {
		return false
	}
	if strings.EqualFold(t.Kind, gvk.Kind) {
		return true
	}
	plural, singular := meta.UnsafeGuessKindToResource(gvk)
	return strings.EqualFold(t.Kind, plural.Resource) || strings.EqualFold(t.Kind, singular.Resource)
}

// Selects reports whether obj (already of the target's kind, in the Cleaner's namespace) is
// one of the target's objects: the named one, or one its selector matches.
func (t Target) Selects(obj *unstructured.Unstructured) bool {
	if t.Selector == nil {
		return obj.GetName() == t.ObjectName
	}
	return t.Selector.Matches(labels.Set(obj.GetLabels()))
}

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// Gather picks the objects of every target from objs: those in namespace ns, of the target's
// kind (Names), that it Selects, sorted by name so that the conditions always see the same
// order; a Secret is its apiVersion, kind and metadata only, as the controller reads it. It
// returns them as the CEL variables want them (unstructured content) for every target,
// evaluated or not, so callers can count them too.
func (s *Spec) Gather(ns string, objs []*unstructured.Unstructured) map[string][]map[string]any {
	out := make(map[string][]map[string]any, len(s.Targets))
	for _, t := range s.Targets {
		var picked []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetNamespace() == ns && t.Names(o.GroupVersionKind()) && t.Selects(o) {
				picked = append(picked, o)
			}
		}
		sort.Slice(picked, func(i, j int) bool { return picked[i].GetName() < picked[j].GetName() })
		list := make([]map[string]any, len(picked))
		for i, o := range picked {
			list[i] = o.Object
			if o.GroupVersionKind() == secretGVK {
				// As in the cluster, where Kustos reads Secrets as metadata only.
				list[i] = map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": o.Object["metadata"]}
			}
		}
		out[t.Name] = list
	}
	return out
}
