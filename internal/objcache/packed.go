package objcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
)

// Packed is an unstructured object as a cache holds it when the object is held by the
// thousand: the metadata every reader asks for in fields and flat slices, everything else
// (the few fields the detectors read, spec.replicas) as one JSON text. A Deployment trimmed
// to its metadata and replicas is about 2,000 bytes of heap as the maps of an unstructured
// object (a Go map is 300 bytes before its first entry) and about 470 packed
// (BenchmarkPackedDeployment).
//
// A Packed is read-only once packed: it is what the informer holds. Its DeepCopyObject
// returns the object unpacked (a *unstructured.Unstructured of the caller's own), which is
// how controller-runtime's cache reader copies a cached object: a Get or List of unstructured
// objects from a cache whose transform packs (see Cache) is served unpacked, as before. It is
// a client.Object for the informer's handlers and predicates; its setters exist for that
// interface and are not for cached copies. (That DeepCopyObject returns another type is why
// client-go's cache mutation detector, KUBE_CACHE_MUTATION_DETECTOR, cannot watch a cache of
// packed objects: it compares a copy with the cached object.)
type Packed struct {
	packedMeta
	apiVersion, kind string
	// rest is the object's other top-level fields as JSON (see encodeJSON), "" for none.
	rest string
}

// packedMeta is an object's metadata as Packed and PackedQuota hold it, and the metav1.Object
// they are for the informers' handlers.
type packedMeta struct {
	// has records which of the slots below the metadata had (a slot's zero value is not
	// absence), and for Packed whether the object had apiVersion, kind and metadata: Unpack
	// gives back exactly the keys there were.
	has                                                                    slot
	name, namespace, generateName, uid, resourceVersion, creationTimestamp string
	generation                                                             int64
	// labels and annotations are key, value, key, value… in key order: a map is 300 bytes
	// for its first entry.
	labels, annotations []string
	// metaRest is the rest of the metadata (owner references, finalizers, a deletion
	// timestamp, any value of an unexpected type): nil for most objects.
	metaRest map[string]any
}

// slot is a bit per metadata field Packed holds in a field of its own.
type slot uint16

const (
	hasAPIVersion slot = 1 << iota
	hasKind
	hasMetadata
	hasName
	hasNamespace
	hasGenerateName
	hasUID
	hasResourceVersion
	hasCreationTimestamp
	hasGeneration
	hasLabels
	hasAnnotations
)

var _ metav1.Object = (*Packed)(nil)
var _ metav1.Object = (*packedMeta)(nil)
var _ runtime.Object = (*Packed)(nil)

// errNotPackable is returned for an object holding a value no JSON decoder makes (an int32, a
// struct): such an object is cached as it is.
var errNotPackable = errors.New("a value not decoded from JSON")

// Pack returns u packed. u's maps are read, not kept: the caller may drop u. An object holding
// a value JSON does not decode to (not one an informer decoded) is an error: cache it as it is.
func Pack(u *unstructured.Unstructured) (*Packed, error) {
	p := &Packed{}
	var rest map[string]any
	for k, v := range u.Object {
		switch s, isString := v.(string); {
		case k == "apiVersion" && isString:
			p.apiVersion, p.has = intern(s), p.has|hasAPIVersion
		case k == "kind" && isString:
			p.kind, p.has = intern(s), p.has|hasKind
		case k == "metadata" && isMap(v):
			p.has |= hasMetadata
			if err := p.packMetadata(v.(map[string]any)); err != nil { //nolint:forcetypeassert // isMap
				return nil, err
			}
		default:
			if rest == nil {
				rest = map[string]any{}
			}
			rest[k] = v
		}
	}
	if rest != nil {
		var b bytes.Buffer
		if err := encodeJSON(&b, rest); err != nil {
			return nil, err
		}
		p.rest = b.String()
	}
	return p, nil
}

func isMap(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// packMetadata fills p's metadata slots from md; what has no slot, or not the type a slot
// holds, goes to metaRest (a copy: md may be the caller's).
func (p *packedMeta) packMetadata(md map[string]any) error {
	for k, v := range md {
		s, isString := v.(string)
		switch {
		case k == "name" && isString:
			p.name, p.has = s, p.has|hasName
		case k == "namespace" && isString:
			p.namespace, p.has = s, p.has|hasNamespace
		case k == "generateName" && isString:
			p.generateName, p.has = s, p.has|hasGenerateName
		case k == "uid" && isString:
			p.uid, p.has = s, p.has|hasUID
		case k == "resourceVersion" && isString:
			p.resourceVersion, p.has = s, p.has|hasResourceVersion
		case k == "creationTimestamp" && isString:
			p.creationTimestamp, p.has = s, p.has|hasCreationTimestamp
		case k == "generation" && isInt64(v):
			p.generation, p.has = v.(int64), p.has|hasGeneration //nolint:forcetypeassert // isInt64
		case k == "labels" && stringMap(v):
			p.labels, p.has = flatten(v.(map[string]any)), p.has|hasLabels //nolint:forcetypeassert // stringMap
		case k == "annotations" && stringMap(v):
			p.annotations, p.has = flatten(v.(map[string]any)), p.has|hasAnnotations //nolint:forcetypeassert // stringMap
		default:
			if err := checkJSON(v); err != nil {
				return fmt.Errorf("metadata.%s: %w", k, err)
			}
			if p.metaRest == nil {
				p.metaRest = map[string]any{}
			}
			p.metaRest[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return nil
}

func isInt64(v any) bool {
	_, ok := v.(int64)
	return ok
}

// stringMap reports whether v is a map of strings (labels, annotations as the API server
// serves them).
func stringMap(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// flatten is m as key, value pairs in key order, its keys interned; nil for an empty map (the
// has bit tells an empty map from none).
func flatten(m map[string]any) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, 2*len(m))
	for _, k := range keys {
		out = append(out, intern(k), m[k].(string)) //nolint:forcetypeassert // stringMap checked
	}
	return out
}

// lookup is the value of key in pairs (flatten's), found by binary search.
func lookup(pairs []string, key string) (string, bool) {
	n := len(pairs) / 2
	i := sort.Search(n, func(i int) bool { return pairs[2*i] >= key })
	if i < n && pairs[2*i] == key {
		return pairs[2*i+1], true
	}
	return "", false
}

// Unpack returns the object as it was packed: maps and values of its own (as a deep copy
// would).
func (p *Packed) Unpack() *unstructured.Unstructured {
	obj := map[string]any{}
	if p.rest != "" {
		// Packed from values JSON decodes to, by encodeJSON, which tells floats from integers:
		// it decodes to what it was.
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(p.rest), &obj); err != nil {
			panic(fmt.Sprintf("objcache: a packed object's own JSON does not decode: %v", err))
		}
	}
	if p.has&hasAPIVersion != 0 {
		obj["apiVersion"] = p.apiVersion
	}
	if p.has&hasKind != 0 {
		obj["kind"] = p.kind
	}
	if p.has&hasMetadata != 0 {
		obj["metadata"] = p.metadata()
	}
	return &unstructured.Unstructured{Object: obj}
}

// metadata is the metadata map as it was packed, a copy of the caller's own.
func (p *packedMeta) metadata() map[string]any {
	md := make(map[string]any, len(p.metaRest)+10)
	for k, v := range p.metaRest {
		md[k] = runtime.DeepCopyJSONValue(v)
	}
	for _, f := range []struct {
		bit slot
		key string
		val string
	}{
		{hasName, "name", p.name}, {hasNamespace, "namespace", p.namespace}, {hasGenerateName, "generateName", p.generateName},
		{hasUID, "uid", p.uid}, {hasResourceVersion, "resourceVersion", p.resourceVersion},
		{hasCreationTimestamp, "creationTimestamp", p.creationTimestamp},
	} {
		if p.has&f.bit != 0 {
			md[f.key] = f.val
		}
	}
	if p.has&hasGeneration != 0 {
		md["generation"] = p.generation
	}
	if p.has&hasLabels != 0 {
		md["labels"] = unflatten(p.labels)
	}
	if p.has&hasAnnotations != 0 {
		md["annotations"] = unflatten(p.annotations)
	}
	return md
}

func unflatten(pairs []string) map[string]any {
	m := make(map[string]any, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// stringMap is the labels or annotations as a map of the caller's own: empty, not nil, when
// the object has an empty map (as an unstructured object's getter answers).
func (p *packedMeta) stringMap(bit slot, pairs []string) map[string]string {
	if p.has&bit == 0 {
		return nil
	}
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// Label is the value of the label key, without a copy of the labels.
func (p *packedMeta) Label(key string) (string, bool) { return lookup(p.labels, key) }

// Annotation is the value of the annotation key, without a copy of the annotations.
func (p *packedMeta) Annotation(key string) (string, bool) { return lookup(p.annotations, key) }

// Key is the object's namespace and name.
func (p *packedMeta) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.namespace, Name: p.name}
}

// FillObjectMeta sets m to the object's metadata, as the API's conversion of the unpacked
// metadata does (the maps m gets are its own). An object packed without metadata (never one
// the API server served) is an error, as its conversion would be.
func (p *packedMeta) FillObjectMeta(m *metav1.ObjectMeta) error {
	if p.has&hasMetadata == 0 {
		return errNoMetadata
	}
	if p.metaRest != nil {
		// Owner references, finalizers, a deletion, or a field of a type its slot does not
		// hold: the conversion of the whole metadata, as for an unstructured object (rare).
		*m = metav1.ObjectMeta{}
		return convertMetadata(p.metadata(), m)
	}
	*m = metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, GenerateName: p.generateName, UID: types.UID(p.uid),
		ResourceVersion: p.resourceVersion, Generation: p.generation,
		Labels: p.stringMap(hasLabels, p.labels), Annotations: p.stringMap(hasAnnotations, p.annotations)}
	if p.has&hasCreationTimestamp != 0 {
		// Parsed as the conversion parses it (which refuses "").
		quoted, err := json.Marshal(p.creationTimestamp)
		if err != nil {
			return err
		}
		if err := m.CreationTimestamp.UnmarshalJSON(quoted); err != nil {
			return err
		}
	}
	return nil
}

// rareView is an unstructured object holding only the metadata without a slot and the
// timestamp: the getters and setters of those read and write through it, as unstructured
// objects do.
func (p *packedMeta) rareView() *unstructured.Unstructured {
	md := p.metaRest
	if md == nil {
		md = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": md}}
	return u
}

func (p *packedMeta) setRare(u *unstructured.Unstructured) {
	md, _ := u.Object["metadata"].(map[string]any)
	if len(md) == 0 {
		md = nil
	}
	p.metaRest = md
	p.has |= hasMetadata
}

// GetObjectKind is the object's apiVersion and kind.
func (p *Packed) GetObjectKind() schema.ObjectKind { return p }

// GroupVersionKind is the object's kind.
func (p *Packed) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(p.apiVersion, p.kind)
}

// SetGroupVersionKind sets the object's apiVersion and kind.
func (p *Packed) SetGroupVersionKind(gvk schema.GroupVersionKind) {
	p.apiVersion, p.kind = intern(gvk.GroupVersion().String()), intern(gvk.Kind)
	p.has |= hasAPIVersion | hasKind
}

// DeepCopyObject returns the object unpacked: a cache reader's copy of a packed object is the
// unstructured object it was (see Packed).
func (p *Packed) DeepCopyObject() runtime.Object { return p.Unpack() }

func (p *packedMeta) setString(bit slot, dst *string, v string) {
	*dst = v
	p.has |= bit | hasMetadata
}

// The metav1.Object getters read the slots; the setters write them (a Packed in a cache is
// never written: they exist for the interface).

func (p *packedMeta) GetNamespace() string       { return p.namespace }
func (p *packedMeta) SetNamespace(v string)      { p.setString(hasNamespace, &p.namespace, v) }
func (p *packedMeta) GetName() string            { return p.name }
func (p *packedMeta) SetName(v string)           { p.setString(hasName, &p.name, v) }
func (p *packedMeta) GetGenerateName() string    { return p.generateName }
func (p *packedMeta) SetGenerateName(v string)   { p.setString(hasGenerateName, &p.generateName, v) }
func (p *packedMeta) GetUID() types.UID          { return types.UID(p.uid) }
func (p *packedMeta) SetUID(v types.UID)         { p.setString(hasUID, &p.uid, string(v)) }
func (p *packedMeta) GetResourceVersion() string { return p.resourceVersion }
func (p *packedMeta) SetResourceVersion(v string) {
	p.setString(hasResourceVersion, &p.resourceVersion, v)
}
func (p *packedMeta) GetGeneration() int64  { return p.generation }
func (p *packedMeta) SetGeneration(v int64) { p.generation, p.has = v, p.has|hasGeneration|hasMetadata }
func (p *packedMeta) GetSelfLink() string   { return p.rareView().GetSelfLink() }
func (p *packedMeta) GetLabels() map[string]string {
	if _, odd := p.metaRest["labels"]; odd { // not a map of strings: as an unstructured object reads it
		return p.rareView().GetLabels()
	}
	return p.stringMap(hasLabels, p.labels)
}
func (p *packedMeta) GetAnnotations() map[string]string {
	if _, odd := p.metaRest["annotations"]; odd { // as for labels
		return p.rareView().GetAnnotations()
	}
	return p.stringMap(hasAnnotations, p.annotations)
}
func (p *packedMeta) GetFinalizers() []string { return p.rareView().GetFinalizers() }
func (p *packedMeta) GetDeletionGracePeriodSeconds() *int64 {
	return p.rareView().GetDeletionGracePeriodSeconds()
}
func (p *packedMeta) GetDeletionTimestamp() *metav1.Time { return p.rareView().GetDeletionTimestamp() }
func (p *packedMeta) GetOwnerReferences() []metav1.OwnerReference {
	return p.rareView().GetOwnerReferences()
}
func (p *packedMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return p.rareView().GetManagedFields()
}

// GetCreationTimestamp parses the timestamp as an unstructured object's getter does.
func (p *packedMeta) GetCreationTimestamp() metav1.Time {
	u := unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"creationTimestamp": p.creationTimestamp}}}
	return u.GetCreationTimestamp()
}

func (p *packedMeta) SetCreationTimestamp(t metav1.Time) {
	u := unstructured.Unstructured{Object: map[string]any{}}
	u.SetCreationTimestamp(t)
	s, ok, _ := unstructured.NestedString(u.Object, "metadata", "creationTimestamp")
	p.creationTimestamp = s
	if ok {
		p.has |= hasCreationTimestamp | hasMetadata
	} else {
		p.has &^= hasCreationTimestamp
	}
}

func (p *packedMeta) SetSelfLink(v string) { u := p.rareView(); u.SetSelfLink(v); p.setRare(u) }
func (p *packedMeta) SetFinalizers(v []string) {
	u := p.rareView()
	u.SetFinalizers(v)
	p.setRare(u)
}
func (p *packedMeta) SetDeletionGracePeriodSeconds(v *int64) {
	u := p.rareView()
	u.SetDeletionGracePeriodSeconds(v)
	p.setRare(u)
}
func (p *packedMeta) SetDeletionTimestamp(v *metav1.Time) {
	u := p.rareView()
	u.SetDeletionTimestamp(v)
	p.setRare(u)
}
func (p *packedMeta) SetOwnerReferences(v []metav1.OwnerReference) {
	u := p.rareView()
	u.SetOwnerReferences(v)
	p.setRare(u)
}
func (p *packedMeta) SetManagedFields(v []metav1.ManagedFieldsEntry) {
	u := p.rareView()
	u.SetManagedFields(v)
	p.setRare(u)
}

func (p *packedMeta) SetLabels(v map[string]string) {
	p.labels, p.has = flattenStrings(v), p.has|hasMetadata
	p.has = setBit(p.has, hasLabels, v != nil)
}

func (p *packedMeta) SetAnnotations(v map[string]string) {
	p.annotations, p.has = flattenStrings(v), p.has|hasMetadata
	p.has = setBit(p.has, hasAnnotations, v != nil)
}

func setBit(s, bit slot, on bool) slot {
	if on {
		return s | bit
	}
	return s &^ bit
}

func flattenStrings(m map[string]string) []string {
	a := make(map[string]any, len(m))
	for k, v := range m {
		a[k] = v
	}
	return flatten(a)
}

// checkJSON reports a value that is not one JSON decodes to (see encodeJSON).
func checkJSON(v any) error {
	switch x := v.(type) {
	case nil, bool, int64:
		return nil
	case string:
		if !utf8.ValidString(x) {
			return fmt.Errorf("%w: a string not UTF-8", errNotPackable)
		}
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: %v", errNotPackable, x)
		}
		return nil
	case map[string]any:
		for _, e := range x {
			if err := checkJSON(e); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for _, e := range x {
			if err := checkJSON(e); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %T", errNotPackable, v)
}

// encodeJSON writes v, made of what sigs.k8s.io/json decodes with its integers kept (nil,
// bools, strings, int64, float64, maps and slices of those), so that that decoder gives back
// the same values: a float that is a whole number is written with a fraction ("2.0"), which
// encoding/json would write as an integer ("2", decoded as int64).
func encodeJSON(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		if !utf8.ValidString(x) {
			return fmt.Errorf("%w: a string not UTF-8", errNotPackable)
		}
		s, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(s)
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: %v", errNotPackable, x)
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		b.WriteString(s)
	case map[string]any:
		b.WriteByte('{')
		first := true
		for k, e := range x {
			if !first {
				b.WriteByte(',')
			}
			first = false
			if err := encodeJSON(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encodeJSON(b, e); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return fmt.Errorf("%w: %T", errNotPackable, v)
	}
	return nil
}
