package ephemeral

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilslru "k8s.io/utils/lru"
)

// The Cleaners' whole-object informers keep, per kind, only apiVersion, kind, metadata and the
// union of the field paths the Cleaners' conditions read of that kind (all of the object when
// one reads it in a way the analysis cannot pin to paths): 1,000 Cleaners testing
// spec.replicas hold every Deployment of the cluster as a few fields, not whole.
//
// The union only grows while Kustos runs (a Cleaner that goes leaves its paths in it): a
// shrink would need every cached object trimmed again, and what a Cleaner read once another one
// like it is likely to read again. Each cached copy carries the version of the union it was
// trimmed with (trimVersionKey, removed before any condition sees the object); a Cleaner
// needing a path the union gained after an object was cached reads that object from the API
// server instead (Reconciler.read), once per state of the object (liveCopies), until the
// object's next watch event trims it again.

// trimVersionKey holds, in a cached copy, the version of its kind's union it was trimmed with.
// No object served by the API server has a top-level field of this name (a "/" in a field
// name); read strips it before the conditions see the object.
const trimVersionKey = "kustos.io/trimmed-with"

// union is f and g together.
func (f Fields) union(g Fields) Fields {
	if f.All || g.All {
		return Fields{All: true}
	}
	if len(g.Paths) == 0 {
		return f
	}
	s := &fieldSet{}
	for _, p := range f.Paths {
		s.add(p)
	}
	for _, p := range g.Paths {
		s.add(p)
	}
	return s.fields()
}

// covers reports whether f keeps everything g reads.
func (f Fields) covers(g Fields) bool {
	if f.All {
		return true
	}
	if g.All {
		return false
	}
next:
	for _, p := range g.Paths {
		for _, q := range f.Paths {
			if hasPrefix(p, q) {
				continue next
			}
		}
		return false
	}
	return true
}

// FieldRegistry is the union, per kind, of the fields the Cleaners' conditions read of its
// objects: the TargetCache's transform trims the kind's objects to it. It grows when a Cleaner
// that reads new fields is resolved and never shrinks while Kustos runs. Safe for concurrent
// use; the zero value is empty (every object trimmed to apiVersion, kind and metadata).
type FieldRegistry struct {
	// Strip, when set, trims an object's metadata (managed fields, the client-side-apply copy)
	// before its fields are trimmed; internal/app's also compacts the map that is left.
	Strip func(metav1.Object)

	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]*kindFields
}

// kindFields is one kind's union and its version, which counts its growths; history[v-1] is
// the union as of version v.
type kindFields struct {
	version int64
	fields  Fields
	tree    *pathNode
	history []Fields
}

// since is the first version whose union covers f (the union only grows): a copy trimmed at
// that version or later holds what f reads. Cleaners whose fields an earlier version held keep
// reading their cached copies when another Cleaner grows the union.
func (k *kindFields) since(f Fields) int64 {
	for i, u := range k.history {
		if u.covers(f) {
			return int64(i + 1)
		}
	}
	return k.version
}

// Need adds f to gvk's union and returns the first version of the union from which a cached copy
// holds everything f reads (0: any copy does). Nil-safe: a nil registry trims nothing.
func (r *FieldRegistry) Need(gvk schema.GroupVersionKind, f Fields) int64 {
	if r == nil || !f.Beyond() {
		return 0
	}
	// Every look at a Cleaner asks; the union seldom grows.
	r.mu.RLock()
	if k := r.kinds[gvk]; k != nil && k.fields.covers(f) {
		v := k.since(f)
		r.mu.RUnlock()
		return v
	}
	r.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.kinds[gvk]
	if k == nil {
		if r.kinds == nil {
			r.kinds = map[schema.GroupVersionKind]*kindFields{}
		}
		k = &kindFields{}
		r.kinds[gvk] = k
	}
	if k.fields.covers(f) {
		return k.since(f)
	}
	k.fields = k.fields.union(f)
	k.tree = newPathTree(k.fields.Paths)
	k.version++
	k.history = append(k.history, k.fields)
	return k.version
}

// Keep adds paths, which another detector reads of gvk's objects through the TargetCache, to
// gvk's union. Called before the cache starts (as the inactivity detector's wiring does), every
// cached copy holds them, and that reader need not look at the mark.
func (r *FieldRegistry) Keep(gvk schema.GroupVersionKind, paths [][]string) {
	s := &fieldSet{}
	for _, p := range paths {
		s.add(p)
	}
	r.Need(gvk, s.fields())
}

// Held reports whether gvk's objects are cached as objects (trimmed to its union), not as
// metadata only: a Cleaner or another detector reads fields of them. A reader of their metadata
// reads it from those objects, not from an informer of its own that would hold every object of
// the kind a second time.
func (r *FieldRegistry) Held(gvk schema.GroupVersionKind) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kinds[gvk] != nil
}

// Fields returns gvk's union.
func (r *FieldRegistry) Fields(gvk schema.GroupVersionKind) Fields {
	if r == nil {
		return Fields{All: true}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if k := r.kinds[gvk]; k != nil {
		return k.fields
	}
	return Fields{}
}

// Transform is the TargetCache's transform: an unstructured object is trimmed to its kind's
// union as it is now, and marked with the union's version; any other object (metadata only) is
// returned as it is, metadata stripped.
func (r *FieldRegistry) Transform(in any) (any, error) {
	if r == nil {
		return in, nil
	}
	if o, ok := in.(metav1.Object); ok && r.Strip != nil {
		r.Strip(o)
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	u.Object = r.trim(u.GroupVersionKind(), u.Object)
	return u, nil
}

// trim returns obj's apiVersion, kind, metadata and the fields of gvk's union, and the mark.
// The maps along a kept path are kept even when the path's end is absent, so that has() and
// a missing key behave as on the whole object; a value that is not a map on the way is kept
// whole. The values are obj's own, not copies.
func (r *FieldRegistry) trim(gvk schema.GroupVersionKind, obj map[string]any) map[string]any {
	r.mu.RLock()
	var version int64
	var tree *pathNode
	all := false
	if k := r.kinds[gvk]; k != nil {
		version, tree, all = k.version, k.tree, k.fields.All
	}
	r.mu.RUnlock()
	if all {
		obj[trimVersionKey] = version
		return obj
	}
	out := make(map[string]any, 4+tree.children())
	for _, key := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := obj[key]; ok {
			out[key] = v
		}
	}
	tree.keep(obj, out)
	out[trimVersionKey] = version
	return out
}

// trimmedFor reports whether the cached copy o (a copy the caller owns) holds what version need of
// its kind's union holds, and removes the mark: the conditions never see it. An object without
// a mark was not trimmed and holds everything.
func trimmedFor(o *unstructured.Unstructured, need int64) bool {
	v, marked := o.Object[trimVersionKey]
	if !marked {
		return true
	}
	delete(o.Object, trimVersionKey)
	got, _ := v.(int64)
	return got >= need
}

// pathNode is a tree of kept paths: a node without children keeps its whole subtree.
type pathNode struct {
	next map[string]*pathNode
}

func newPathTree(paths [][]string) *pathNode {
	root := &pathNode{next: map[string]*pathNode{}}
	for _, p := range paths {
		n := root
		for _, name := range p {
			c := n.next[name]
			if c == nil {
				c = &pathNode{}
				if n.next == nil {
					n.next = map[string]*pathNode{}
				}
				n.next[name] = c
			}
			n = c
		}
		n.next = nil // the whole subtree (Paths are minimal: nothing is under it)
	}
	return root
}

func (n *pathNode) children() int {
	if n == nil {
		return 0
	}
	return len(n.next)
}

// keep copies into out what the tree under n keeps of in.
func (n *pathNode) keep(in, out map[string]any) {
	if n == nil {
		return
	}
	for name, c := range n.next {
		v, ok := in[name]
		if !ok {
			continue
		}
		m, isMap := v.(map[string]any)
		if c.next == nil || !isMap {
			out[name] = v
			continue
		}
		sub := make(map[string]any, len(c.next))
		c.keep(m, sub)
		out[name] = sub
	}
}

// liveCopies remembers targets read from the API server because their cached copy was
// trimmed before the union held what a Cleaner reads (Reconciler.read). Such a cached copy is
// trimmed again only when its object changes: without the memory, every evaluation of that
// Cleaner would read the unchanged object from the API server again. A remembered copy stands
// for the object while the cache holds the same resourceVersion of it, which names one state
// of the object. Bounded (least recently used go first); safe for concurrent use; the zero
// value remembers nothing.
type liveCopies struct {
	cache *utilslru.Cache
}

// liveCopiesRemembered is how many live copies are remembered at most.
const liveCopiesRemembered = 1024

func newLiveCopies() liveCopies { return liveCopies{cache: utilslru.New(liveCopiesRemembered)} }

// liveCopy is one object as read from the API server, trimmed with the union's version.
type liveCopy struct {
	resourceVersion string
	version         int64
	obj             *unstructured.Unstructured
}

// put remembers o (read from the API server, trimmed with the union's version, its mark
// dropped).
func (l liveCopies) put(o *unstructured.Unstructured, version int64) {
	if l.cache == nil || o.GetUID() == "" {
		return
	}
	l.cache.Add(o.GetUID(), liveCopy{resourceVersion: o.GetResourceVersion(), version: version, obj: o.DeepCopy()})
}

// get returns a copy of the remembered live copy of cached's object, if one was read at
// cached's resourceVersion and trimmed with a union that holds version need's fields.
func (l liveCopies) get(cached *unstructured.Unstructured, need int64) (*unstructured.Unstructured, bool) {
	if l.cache == nil {
		return nil, false
	}
	v, ok := l.cache.Get(cached.GetUID())
	if !ok {
		return nil, false
	}
	c := v.(liveCopy) //nolint:forcetypeassert // put adds only liveCopy values
	if c.resourceVersion != cached.GetResourceVersion() || c.version < need {
		return nil, false
	}
	return c.obj.DeepCopy(), true
}
