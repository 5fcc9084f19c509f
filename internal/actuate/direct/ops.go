package direct

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The ops below work on the object Apply just read and return API errors unwrapped (Apply
// tells conflicts and NotFound apart) and their own errors wrapped in a lifecycle kind.

// setFields sets each field to its To, after checking that it still holds its From (when
// given; a field that already holds To is done, whatever From says: that is a replay). To is
// a value's Kubernetes string form; it is written as the type the live value has (a string
// stays a string, a number becomes an int64 or a float64, a boolean a boolean). A field that
// does not exist yet is written as an integer or boolean when To reads as one and as a string
// otherwise; when the API server rejects the patch, each such field is tried alone (dry run)
// and written as a string if its guessed type is what the server rejects (a ConfigMap's data,
// a CRD's string field).
func (a *Actuator) setFields(ctx context.Context, obj *unstructured.Unstructured, fields []lifecycle.FieldChange) (lifecycle.Outcome, error) {
	type guess struct {
		path []string
		v    any
		to   string
	}
	patch := map[string]any{}
	var guessed []guess
	for _, f := range fields {
		live, found, err := lookup(obj.Object, f.Path)
		if err != nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidChange)
		}
		liveStr := "<absent>"
		if found {
			s, ok := scalar(live)
			if !ok {
				return lifecycle.Outcome{}, fmt.Errorf("%s holds a %s, not a single value: %w",
					pathString(f.Path), typeName(live), lifecycle.ErrInvalidChange)
			}
			liveStr = s
		}
		if found && liveStr == f.To {
			continue // already so
		}
		if f.From != "" && (!found || liveStr != f.From) {
			return lifecycle.Outcome{}, fmt.Errorf("%s is %s, not %q as the detector saw: %w",
				pathString(f.Path), quoteFound(liveStr, found), f.From, lifecycle.ErrSourceConflict)
		}
		var v any
		if found {
			if v, err = typed(live, f.To); err != nil {
				return lifecycle.Outcome{}, fmt.Errorf("%s: %w: %w", pathString(f.Path), err, lifecycle.ErrInvalidChange)
			}
		} else {
			var isGuess bool
			if v, isGuess = newValue(f.Path, f.To); isGuess {
				guessed = append(guessed, guess{path: f.Path, v: v, to: f.To})
			}
		}
		if err := setNested(patch, f.Path, v); err != nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidChange)
		}
	}
	if len(patch) == 0 {
		return lifecycle.Outcome{}, nil
	}
	out, err := a.patch(ctx, obj, patch)
	if err == nil || len(guessed) == 0 || !rejected(err) {
		return out, err
	}
	// The API server rejected the patch, and nothing was written. Find the new fields whose
	// guessed type it rejects, and write those as strings.
	for _, g := range guessed {
		alone := map[string]any{}
		_ = setNested(alone, g.path, g.v) // a path of patch: cannot fail
		_, derr := a.patch(ctx, obj, alone, client.DryRunAll)
		switch {
		case derr == nil:
		case rejected(derr):
			_ = setNested(patch, g.path, g.to)
		default:
			return lifecycle.Outcome{}, derr
		}
	}
	return a.patch(ctx, obj, patch)
}

// rejected reports whether the API server refused a write for its content.
func rejected(err error) bool { return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) }

// setAnnotations merges want into metadata.annotations.
func (a *Actuator) setAnnotations(ctx context.Context, obj *unstructured.Unstructured, want map[string]string) (lifecycle.Outcome, error) {
	live := obj.GetAnnotations()
	changed := map[string]any{}
	for k, v := range want {
		if lv, ok := live[k]; !ok || lv != v {
			changed[k] = v
		}
	}
	if len(changed) == 0 {
		return lifecycle.Outcome{}, nil
	}
	return a.patch(ctx, obj, map[string]any{"metadata": map[string]any{"annotations": changed}})
}

// scaleToZero sets the replica count to zero through the scale subresource when the kind has
// one (Deployments, StatefulSets, ReplicaSets, CRDs that declare it: the subresource knows the
// kind's replicas path), and by patching spec.replicas otherwise.
func (a *Actuator) scaleToZero(ctx context.Context, obj *unstructured.Unstructured) (lifecycle.Outcome, error) {
	scale := newScale()
	err := a.Client.SubResource("scale").Get(ctx, obj, scale)
	if apierrors.IsNotFound(err) {
		// No scale subresource (or the object is gone: the patch below will say so).
		return a.scaleSpecReplicas(ctx, obj)
	}
	if err != nil {
		return lifecycle.Outcome{}, fmt.Errorf("reading the scale subresource: %w", err)
	}
	// autoscaling/v1 Scale omits spec.replicas when it is zero.
	replicas, _, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil {
		return lifecycle.Outcome{}, fmt.Errorf("reading the scale subresource: %w", err)
	}
	if replicas == 0 {
		return lifecycle.Outcome{}, nil
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": scale.GetResourceVersion()},
		"spec":     map[string]any{"replicas": 0},
	})
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	result := newScale()
	if err := a.Client.SubResource("scale").Patch(ctx, obj, client.RawPatch(types.MergePatchType, data),
		client.WithSubResourceBody(result), client.FieldOwner(a.fieldManager())); err != nil {
		return lifecycle.Outcome{}, err
	}
	return lifecycle.Outcome{Applied: result.GetResourceVersion() != scale.GetResourceVersion()}, nil
}

// scaleSpecReplicas sets spec.replicas to zero on a kind without a scale subresource.
func (a *Actuator) scaleSpecReplicas(ctx context.Context, obj *unstructured.Unstructured) (lifecycle.Outcome, error) {
	path := []string{"spec", "replicas"}
	live, found, err := lookup(obj.Object, path)
	if err != nil || !found {
		return lifecycle.Outcome{}, fmt.Errorf("the kind has no scale subresource and the object no spec.replicas: %w", lifecycle.ErrInvalidChange)
	}
	if s, ok := scalar(live); ok && s == "0" {
		return lifecycle.Outcome{}, nil
	}
	v, err := typed(live, "0")
	if err != nil {
		return lifecycle.Outcome{}, fmt.Errorf("spec.replicas: %w: %w", err, lifecycle.ErrInvalidChange)
	}
	return a.patch(ctx, obj, map[string]any{"spec": map[string]any{"replicas": v}})
}

// delete deletes obj, on the condition that it still is the object read (UID) in the state
// read (resourceVersion): what was checked is what is deleted. Dependents are deleted by the
// garbage collector in the background.
func (a *Actuator) delete(ctx context.Context, obj *unstructured.Unstructured) (lifecycle.Outcome, error) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if err := a.Client.Delete(ctx, obj,
		client.Preconditions{UID: &uid, ResourceVersion: &rv},
		client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return lifecycle.Outcome{}, err
	}
	return lifecycle.Outcome{Applied: true}, nil
}

// patch applies patch to obj as a JSON merge patch that carries obj's resourceVersion, so the
// API server refuses it (Conflict) when the object changed since it was read. Applied is
// whether the object changed: the API server does not write (nor bump the resourceVersion
// of) an object a patch leaves as it was.
func (a *Actuator) patch(ctx context.Context, obj *unstructured.Unstructured, patch map[string]any, opts ...client.PatchOption) (lifecycle.Outcome, error) {
	if err := setNested(patch, []string{"metadata", "resourceVersion"}, obj.GetResourceVersion()); err != nil {
		return lifecycle.Outcome{}, err
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	result := &unstructured.Unstructured{}
	result.SetGroupVersionKind(obj.GroupVersionKind())
	result.SetNamespace(obj.GetNamespace())
	result.SetName(obj.GetName())
	opts = append(opts, client.FieldOwner(a.fieldManager()))
	if err := a.Client.Patch(ctx, result, client.RawPatch(types.MergePatchType, data), opts...); err != nil {
		return lifecycle.Outcome{}, err
	}
	return lifecycle.Outcome{Applied: result.GetResourceVersion() != obj.GetResourceVersion()}, nil
}

func newScale() *unstructured.Unstructured {
	s := &unstructured.Unstructured{}
	s.SetAPIVersion("autoscaling/v1")
	s.SetKind("Scale")
	return s
}

// checkPath checks that path names a field Kustos may set: below the object root, not its
// identity, not its status (written by its controller, and ignored in writes to the object
// when the kind has a status subresource), in metadata only labels and annotations.
func checkPath(path []string) error {
	if len(path) == 0 {
		return errors.New("a field change has an empty path")
	}
	for _, k := range path {
		if k == "" {
			return fmt.Errorf("path %s has an empty segment", pathString(path))
		}
	}
	switch path[0] {
	case "apiVersion", "kind":
		return fmt.Errorf("%s cannot be changed", path[0])
	case "status":
		return fmt.Errorf("%s: status is written by the object's controller", pathString(path))
	case "metadata":
		if len(path) != 3 || (path[1] != "labels" && path[1] != "annotations") {
			return fmt.Errorf("%s: only metadata.labels and metadata.annotations entries can be set", pathString(path))
		}
	}
	return nil
}

// lookup returns the value at path; found is false when a map on the way lacks the key or the
// value is null. Only maps can be walked through.
func lookup(obj map[string]any, path []string) (v any, found bool, err error) {
	var cur any = obj
	for i, k := range path {
		if cur == nil {
			return nil, false, nil
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s: %s holds a %s, not a map", pathString(path), pathString(path[:i]), typeName(cur))
		}
		if cur, ok = m[k]; !ok {
			return nil, false, nil
		}
	}
	return cur, cur != nil, nil
}

// setNested sets path in patch to v, creating maps on the way.
func setNested(patch map[string]any, path []string, v any) error {
	m := patch
	for i, k := range path[:len(path)-1] {
		next, ok := m[k]
		if !ok {
			n := map[string]any{}
			m[k] = n
			m = n
			continue
		}
		if m, ok = next.(map[string]any); !ok {
			return fmt.Errorf("%s is set and so is %s below it", pathString(path[:i+1]), pathString(path))
		}
	}
	last := path[len(path)-1]
	if _, isMap := m[last].(map[string]any); isMap {
		return fmt.Errorf("%s is set and so are fields below it", pathString(path))
	}
	m[last] = v
	return nil
}

// scalar returns v's Kubernetes string form, when v is a single value.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// typed converts to, a value's string form, to the type of live.
func typed(live any, to string) (any, error) {
	switch live.(type) {
	case string:
		return to, nil
	case int64, int, int32, float64:
		if i, err := strconv.ParseInt(to, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(to, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, nil
		}
		return nil, fmt.Errorf("holds a number and %q is none", to)
	case bool:
		switch to {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("holds a boolean and %q is none", to)
	}
	return nil, fmt.Errorf("holds a %s", typeName(live))
}

// newValue is the value of a new field: an int64 or a boolean when to reads as one (guess
// true: the API server may want a string instead), a string otherwise and always for labels
// and annotations.
func newValue(path []string, to string) (v any, guess bool) {
	if path[0] == "metadata" {
		return to, false
	}
	if i, err := strconv.ParseInt(to, 10, 64); err == nil {
		return i, true
	}
	switch to {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return to, false
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int, int32, float64:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func quoteFound(s string, found bool) string {
	if !found {
		return s
	}
	return strconv.Quote(s)
}

func pathString(p []string) string { return lifecycle.PathString(p) }
