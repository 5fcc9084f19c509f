package ephemeral

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Gathering a Cleaner's snapshot: its targets' kinds resolved through the RESTMapper, watched as
// Cleaners come to need them, and their objects read from the caches.

// resourceKey renders "<resource>.<group>/<version>" ("<resource>/<version>" for core).
func resourceKey(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}

// mapObject finds the Cleaners a change of o (of kind gvk) concerns: those that resolved it by
// name, and those with a selector target of its kind in its namespace.
func (r *Reconciler) mapObject(ctx context.Context, gvk schema.GroupVersionKind, o client.Object) []reconcile.Request {
	m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		r.Log.Error(err, "mapping a target change to Cleaners", "kind", gvk.String())
		return nil
	}
	kind := resourceKey(m.Resource)
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	for _, key := range []string{o.GetName() + "." + kind, "*." + kind} {
		var list v1alpha1.CleanerList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexTargets: key}); err != nil {
			r.Log.Error(err, "listing Cleaners for a target change", "key", key)
			continue
		}
		for i := range list.Items {
			n := types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}
			if !seen[n] {
				seen[n] = true
				out = append(out, reconcile.Request{NamespacedName: n})
			}
		}
	}
	r.Log.V(1).Info("target changed", "kind", kind, "namespace", o.GetNamespace(), "name", o.GetName(), "cleaners", len(out))
	return out
}

// watchKey is one informer of a target kind: whole objects, or their metadata only.
type watchKey struct {
	gvk          schema.GroupVersionKind
	metadataOnly bool
}

// watch makes changes of kind gvk reach the Cleaners that read them (once per kind and form):
// metadataOnly watches (and caches) the objects' metadata only.
func (r *Reconciler) watch(gvk schema.GroupVersionKind, metadataOnly bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := watchKey{gvk: gvk, metadataOnly: metadataOnly}
	if r.watching[key] || r.controller == nil {
		return nil
	}
	var src source.Source
	if metadataOnly {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		src = source.Kind(r.metadataCache(gvk), o, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			return r.mapObject(ctx, gvk, o)
		}))
	} else {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		// As client.Object: the target cache holds its objects packed (objcache.Packed), not
		// as the unstructured objects its reads return.
		src = source.Kind[client.Object](r.targetCache(), u, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.mapObject(ctx, gvk, o)
		}))
	}
	if err := r.controller.Watch(src); err != nil {
		return err
	}
	r.watching[key] = true
	return nil
}

// watchingWhole reports whether whole objects of kind gvk are watched already.
func (r *Reconciler) watchingWhole(gvk schema.GroupVersionKind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watching[watchKey{gvk: gvk}]
}

// metadataView is o as a target read as metadata is seen: apiVersion, kind and metadata.
func metadataView(o *unstructured.Unstructured) *unstructured.Unstructured {
	v := &unstructured.Unstructured{Object: map[string]any{}}
	if m, ok := o.Object["metadata"]; ok {
		v.Object["metadata"] = m
	}
	v.SetGroupVersionKind(o.GroupVersionKind())
	return v
}

// metadataCache is where the metadata of kind gvk is read: the manager's cache for a kind it
// shares with another detector, else the targets' own.
func (r *Reconciler) metadataCache(gvk schema.GroupVersionKind) cache.Cache {
	if r.SharedMetadata[gvk] {
		return r.cache
	}
	return r.targetCache()
}

func (r *Reconciler) targetCache() cache.Cache {
	if r.TargetCache != nil {
		return r.TargetCache
	}
	return r.cache
}

// metadataOnly reports whether a target's objects are read as metadata only: when no condition
// reads them beyond apiVersion, kind and metadata (a target only deleted, or selected by its
// labels and tested on its annotations or age), and always for Secrets, whose data Kustos
// never caches (a condition over a Secret sees its apiVersion, kind and metadata).
func metadataOnly(t Target, m *meta.RESTMapping) bool {
	return !t.Whole || isSecret(m.Resource.GroupResource())
}

func isSecret(gr schema.GroupResource) bool { return gr == schema.GroupResource{Resource: "secrets"} }

// resolvedTarget is a target with its kind resolved and its objects read.
type resolvedTarget struct {
	Target
	mapping  *meta.RESTMapping
	objects  []*unstructured.Unstructured
	resolved []string
}

// resolve maps every target's kind (kind or resource name, any case) through the RESTMapper,
// refuses cluster-scoped kinds, checks that Kustos may watch them, watches them, and reads their
// objects from the cache. A non-empty reason says why the targets cannot be used.
func (r *Reconciler) resolve(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec) (out []resolvedTarget, reason, msg string, err error) {
	for i, t := range spec.Targets {
		path := fmt.Sprintf("spec.targets[%d]", i)
		m, merr := r.mapping(t)
		if merr != nil {
			if meta.IsNoMatchError(merr) {
				return nil, ReasonKindNotFound, fmt.Sprintf("%s: the API server serves no kind %q in %s/%s", path, t.Kind, t.Group, t.Version), nil
			}
			return nil, "", "", merr
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			return nil, ReasonForbidden, fmt.Sprintf("%s: %s is cluster-scoped; a Cleaner acts only in its own namespace", path, m.GroupVersionKind.Kind), nil
		}
		for _, verb := range []string{"list", "watch"} {
			ok, aerr := r.Access.Allowed(ctx, verb, m.Resource, "")
			if aerr != nil {
				return nil, "", "", aerr
			}
			if !ok {
				return nil, ReasonMissingPermission, fmt.Sprintf("%s: Kustos may not %s %s: add the kind to the chart value cleaner.targetKinds",
					path, verb, m.Resource.GroupResource()), nil
			}
		}
		metaOnly := metadataOnly(t, m)
		// A kind some Cleaner or another detector reads whole (the inactivity detector's
		// targets: Fields.Held) is read whole for every Cleaner (unless another detector's
		// informer holds its metadata): an informer of its metadata besides would hold every
		// object of the kind a second time. The conditions still see metadata only.
		view := metaOnly && !isSecret(m.Resource.GroupResource()) && !r.SharedMetadata[m.GroupVersionKind] &&
			(r.watchingWhole(m.GroupVersionKind) || r.Fields.Held(m.GroupVersionKind))
		if view {
			metaOnly = false
		}
		// The kind's union grows (if it must) before its informer may start: the first list is
		// trimmed to it.
		var need int64
		if !metaOnly && !view {
			need = r.Fields.Need(m.GroupVersionKind, t.Fields)
		}
		if err := r.watch(m.GroupVersionKind, metaOnly); err != nil {
			return nil, "", "", fmt.Errorf("watching %s: %w", m.GroupVersionKind, err)
		}
		rt := resolvedTarget{Target: t, mapping: m}
		kind := resourceKey(m.Resource)
		objs, err := r.read(ctx, m.GroupVersionKind, cl.Namespace, t, metaOnly, need)
		if err != nil {
			return nil, "", "", err
		}
		if view {
			for i, o := range objs {
				objs[i] = metadataView(o)
			}
		}
		rt.objects = objs
		if t.Selector == nil {
			rt.resolved = []string{t.ObjectName + "." + kind}
		} else {
			for _, o := range objs {
				rt.resolved = append(rt.resolved, o.GetName()+"."+kind)
			}
		}
		out = append(out, rt)
	}
	return out, "", "", nil
}

// read returns the target's objects in namespace from the cache, sorted by name: whole (as
// trimmed to their kind's union of fields), or (metaOnly) as apiVersion, kind and metadata. A
// cached copy trimmed before the union's version need (the union grew for this target's fields
// since) is not used: the object's copy read from the API server at the same resourceVersion
// is, if one is remembered, else the target is read from the API server.
func (r *Reconciler) read(ctx context.Context, gvk schema.GroupVersionKind, namespace string, t Target, metaOnly bool, need int64) ([]*unstructured.Unstructured, error) {
	out, err := r.readCached(ctx, gvk, namespace, t, metaOnly)
	if err != nil || metaOnly {
		return out, err
	}
	stale := false
	for i, o := range out {
		if trimmedFor(o, need) {
			continue
		}
		if c, ok := r.liveCopies.get(o, need); ok {
			out[i] = c
			continue
		}
		stale = true
	}
	if !stale {
		return out, nil
	}
	r.Log.V(1).Info("target read from the API server: its cached copy was trimmed before the fields this Cleaner reads were known",
		"kind", gvk.String(), "namespace", namespace, "target", t.Name)
	metrics.CleanerLiveReads.Inc()
	return r.readLive(ctx, gvk, namespace, t)
}

// readLive reads the target's objects from the API server, trimmed as the cache would trim
// them now (which keeps at least the fields the union held at need), sorted by name.
func (r *Reconciler) readLive(ctx context.Context, gvk schema.GroupVersionKind, namespace string, t Target) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	if t.Selector == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := r.Live.Get(ctx, client.ObjectKey{Namespace: namespace, Name: t.ObjectName}, u); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading %s %s/%s from the API server: %w", gvk.Kind, namespace, t.ObjectName, err)
		}
		out = append(out, u)
	} else {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Live.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: t.Selector}); err != nil {
			return nil, fmt.Errorf("listing %s in %s from the API server: %w", gvk.Kind, namespace, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	for _, o := range out {
		if _, err := r.Fields.Transform(o); err != nil {
			return nil, err
		}
		version, _ := o.Object[trimVersionKey].(int64)
		trimmedFor(o, 0) // drops the mark
		r.liveCopies.put(o, version)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// readCached reads the target's objects from the caches, sorted by name.
func (r *Reconciler) readCached(ctx context.Context, gvk schema.GroupVersionKind, namespace string, t Target, metaOnly bool) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	if t.Selector == nil {
		var err error
		if metaOnly {
			o := &metav1.PartialObjectMetadata{}
			o.SetGroupVersionKind(gvk)
			// Without a copy: fromMetadata converts it into maps of its own.
			if err = r.metadataCache(gvk).Get(ctx, client.ObjectKey{Namespace: namespace, Name: t.ObjectName}, o, client.UnsafeDisableDeepCopy); err == nil {
				var u *unstructured.Unstructured
				if u, err = fromMetadata(gvk, o); err == nil {
					out = append(out, u)
				}
			}
		} else {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err = r.targetCache().Get(ctx, client.ObjectKey{Namespace: namespace, Name: t.ObjectName}, u); err == nil {
				out = append(out, u)
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, namespace, t.ObjectName, err)
		}
		return out, nil
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: t.Selector}}
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if metaOnly {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(listKind)
		// Without a copy: fromMetadata converts each item into maps of its own.
		if err := r.metadataCache(gvk).List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, namespace, err)
		}
		for i := range list.Items {
			u, err := fromMetadata(gvk, &list.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	} else {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listKind)
		if err := r.targetCache().List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, namespace, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// fromMetadata is o as the conditions see an object read as metadata: apiVersion, kind and
// metadata, nothing else, in maps of its own (o may be the cache's object, not a copy).
func fromMetadata(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o.ObjectMeta)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": m}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// mapping resolves a target's kind, which may be a kind (Service) or a resource name (service,
// services) in any case, to the served kind as the API spells it.
func (r *Reconciler) mapping(t Target) (*meta.RESTMapping, error) {
	gvk, err := r.Mapper.KindFor(schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: strings.ToLower(t.Kind)})
	if err != nil {
		// Not a resource name: a kind, as written.
		m, kerr := r.Mapper.RESTMapping(schema.GroupKind{Group: t.Group, Kind: t.Kind}, t.Version)
		if kerr != nil {
			return nil, err
		}
		gvk = m.GroupVersionKind
	}
	return r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}
