package objcache

import (
	"reflect"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"
)

// decoded is doc as an informer decodes it.
func decoded(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	var o map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(doc), &o); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: o}
}

// samePacked checks that u packs and unpacks to itself, and that every getter a handler,
// predicate or selector calls answers as u's own.
func samePacked(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	want := u.DeepCopy()
	p, err := Pack(u)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	if !reflect.DeepEqual(u.Object, want.Object) {
		t.Fatalf("Pack changed its input")
	}
	got := p.Unpack()
	if !reflect.DeepEqual(got.Object, want.Object) {
		t.Fatalf("unpacked\n%#v\nwant\n%#v", got.Object, want.Object)
	}
	if c, ok := p.DeepCopyObject().(*unstructured.Unstructured); !ok || !reflect.DeepEqual(c.Object, want.Object) {
		t.Fatalf("DeepCopyObject is not the unpacked object: %#v", p.DeepCopyObject())
	}
	// The copies are the caller's own: writing one leaves the packed object as it was.
	if md, ok := got.Object["metadata"].(map[string]any); ok {
		for k := range md {
			md[k] = "changed"
		}
		if again := p.Unpack(); !reflect.DeepEqual(again.Object, want.Object) {
			t.Fatalf("an unpacked copy shares maps with the packed object")
		}
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"GetName", p.GetName(), u.GetName()},
		{"GetNamespace", p.GetNamespace(), u.GetNamespace()},
		{"GetGenerateName", p.GetGenerateName(), u.GetGenerateName()},
		{"GetUID", p.GetUID(), u.GetUID()},
		{"GetResourceVersion", p.GetResourceVersion(), u.GetResourceVersion()},
		{"GetGeneration", p.GetGeneration(), u.GetGeneration()},
		{"GetCreationTimestamp", p.GetCreationTimestamp(), u.GetCreationTimestamp()},
		{"GetDeletionTimestamp", p.GetDeletionTimestamp(), u.GetDeletionTimestamp()},
		{"GetDeletionGracePeriodSeconds", p.GetDeletionGracePeriodSeconds(), u.GetDeletionGracePeriodSeconds()},
		{"GetOwnerReferences", p.GetOwnerReferences(), u.GetOwnerReferences()},
		{"GetFinalizers", p.GetFinalizers(), u.GetFinalizers()},
		{"GroupVersionKind", p.GroupVersionKind(), u.GroupVersionKind()},
	}
	// An unstructured object's label and annotation getters give up on a value that is not a
	// string (nil); the packed object keeps such a map among the rest and answers the same.
	checks = append(checks,
		struct {
			name      string
			got, want any
		}{"GetLabels", p.GetLabels(), u.GetLabels()},
		struct {
			name      string
			got, want any
		}{"GetAnnotations", p.GetAnnotations(), u.GetAnnotations()})
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %#v, unstructured %#v", c.name, c.got, c.want)
		}
	}
	var pm, um metav1.ObjectMeta
	perr := p.FillObjectMeta(&pm)
	uerr := errNoMetadata // an object without metadata converts to none
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		uerr = convertMetadata(md, &um)
	}
	if (perr != nil) != (uerr != nil) {
		t.Errorf("FillObjectMeta error %v, the conversion's %v", perr, uerr)
	} else if perr == nil && !reflect.DeepEqual(pm, um) {
		t.Errorf("FillObjectMeta\n%#v\nthe conversion\n%#v", pm, um)
	}
}

func TestPackedRoundTrip(t *testing.T) {
	for name, doc := range map[string]string{
		"a trimmed Deployment":          deploymentTrimmed,
		"whole, managed fields and all": deploymentJSON,
		"owner, finalizer, deletion": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"n",` +
			`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u1","controller":true}],` +
			`"finalizers":["x/y"],"deletionTimestamp":"2026-11-27T10:00:00Z","deletionGracePeriodSeconds":30}}`,
		"floats that are whole numbers, nulls, nested lists": `{"kind":"X","spec":{"f":2.0,"g":1e3,"h":-0.5,"n":null,` +
			`"l":[1,2.5,[true,false,"s"],{}],"e":{},"big":9223372036854775807}}`,
		"empty labels and annotations":   `{"metadata":{"name":"a","labels":{},"annotations":{}}}`,
		"a label that is not a string":   `{"metadata":{"name":"a","labels":{"a":1,"b":"c"}}}`,
		"a name that is not a string":    `{"metadata":{"name":7,"generation":"1"}}`,
		"metadata that is not a map":     `{"apiVersion":"v1","kind":"X","metadata":"m"}`,
		"no metadata, kind not a string": `{"kind":3,"spec":{"replicas":1}}`,
		"the trim mark":                  `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"kustos.io/trimmed-with":3}`,
		"escapes in keys and values":     `{"metadata":{"name":"a","annotations":{"q\"k":"v\u003c\n\u2028"}},"s\\p":{"\u00e9":"<>&"}}`,
		"empty object":                   `{}`,
	} {
		t.Run(name, func(t *testing.T) { samePacked(t, decoded(t, doc)) })
	}
}

func TestPackRefusesWhatJSONDoesNotDecodeTo(t *testing.T) {
	for name, obj := range map[string]map[string]any{
		"an int":             {"spec": map[string]any{"replicas": 1}},
		"a typed map":        {"metadata": map[string]any{"ownerReferences": []map[string]any{}}},
		"a string not UTF-8": {"spec": "\xff"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Pack(&unstructured.Unstructured{Object: obj}); err == nil {
				t.Fatal("packed")
			}
		})
	}
}

func TestPackedLookups(t *testing.T) {
	p, err := Pack(decoded(t, `{"metadata":{"name":"a","namespace":"n","labels":{"b":"2","a":"1","c":"3"},"annotations":{"kustos.io/x":"y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, want string
		found     bool
	}{{"a", "1", true}, {"b", "2", true}, {"c", "3", true}, {"d", "", false}, {"", "", false}} {
		if v, ok := p.Label(c.key); v != c.want || ok != c.found {
			t.Errorf("Label(%q) = %q, %v; want %q, %v", c.key, v, ok, c.want, c.found)
		}
	}
	if v, ok := p.Annotation("kustos.io/x"); v != "y" || !ok {
		t.Errorf("Annotation = %q, %v", v, ok)
	}
	if k := p.Key(); k.Namespace != "n" || k.Name != "a" {
		t.Errorf("Key = %v", k)
	}
}

// TestPackedSetters: the setters (for the client.Object interface) write what the getters and
// Unpack then give back, as an unstructured object's would.
func TestPackedSetters(t *testing.T) {
	u := decoded(t, deploymentTrimmed)
	p, err := Pack(u)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Date(2026, 11, 27, 10, 0, 0, 0, time0.Location())
	grace := int64(5)
	for _, o := range []metav1.Object{u, p} {
		o.SetName("b")
		o.SetNamespace("m")
		o.SetLabels(map[string]string{"x": "1"})
		o.SetAnnotations(nil)
		o.SetGeneration(4)
		o.SetCreationTimestamp(now)
		o.SetDeletionTimestamp(&now)
		o.SetDeletionGracePeriodSeconds(&grace)
		o.SetFinalizers([]string{"f"})
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "K", Name: "o", UID: "u"}})
		o.SetUID("new")
		o.SetResourceVersion("9")
		o.SetGenerateName("g-")
	}
	if got := p.Unpack(); !reflect.DeepEqual(got.Object, u.Object) {
		t.Fatalf("after the setters\n%#v\nunstructured\n%#v", got.Object, u.Object)
	}
}

var time0 = metav1.Now()

// deploymentTrimmed is a Deployment as the target cache keeps it: metadata, spec.replicas and
// the trim mark.
const deploymentTrimmed = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app-00012","namespace":"wc-00012",` +
	`"uid":"0f1c5b0e-7d3e-4a8e-9a43-2f7f3c4b5d6e","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-11-27T15:13:02Z",` +
	`"labels":{"app":"app-00012"},"annotations":{"deployment.kubernetes.io/revision":"1"}},"spec":{"replicas":1},"kustos.io/trimmed-with":1}`

// FuzzPacked: any JSON object an informer could decode packs and unpacks to itself, and the
// packed object's getters answer as the unstructured object's.
func FuzzPacked(f *testing.F) {
	for _, s := range []string{deploymentTrimmed, deploymentJSON, `{"metadata":{"labels":{"a":1}}}`, `{"a":[1.0,-0,1e400]}`,
		`{"metadata":{"creationTimestamp":"not a time","deletionTimestamp":5}}`,
		`{"metadata":{"generation":1.0}}`, `{"metadata":{"annotations":{"a":null,"b":"c"}}}`, `{"metadata":{"labels":{"a":null}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var o map[string]any
		if sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(doc), &o) != nil || o == nil {
			return
		}
		samePacked(t, &unstructured.Unstructured{Object: o})
	})
}

// BenchmarkPackedDeployment reports the heap a cache holds per Deployment trimmed to metadata
// and spec.replicas, as unstructured maps (compacted, as the caches held them before) and
// packed; and what an unpack (a cache read's copy) costs.
func BenchmarkPackedDeployment(b *testing.B) {
	heapPerObject(b, "unstructured", func(int) any {
		u := decoded(b, deploymentTrimmed)
		u.Object["metadata"] = Compact(u.Object["metadata"].(map[string]any)) //nolint:forcetypeassert // the document above
		return u
	})
	heapPerObject(b, "packed", func(int) any {
		u := decoded(b, deploymentTrimmed)
		u.Object["metadata"] = Compact(u.Object["metadata"].(map[string]any)) //nolint:forcetypeassert // as above
		p, err := Pack(u)
		if err != nil {
			b.Fatal(err)
		}
		return p
	})
	b.Run("unpack", func(b *testing.B) {
		p, err := Pack(decoded(b, deploymentTrimmed))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for range b.N {
			_ = p.Unpack()
		}
	})
	b.Run("deepcopy", func(b *testing.B) {
		u := decoded(b, deploymentTrimmed)
		b.ReportAllocs()
		for range b.N {
			_ = u.DeepCopy()
		}
	})
}

// heapPerObject runs a sub-benchmark name reporting the live heap that 10,000 objects made by
// object take, per object.
func heapPerObject(b *testing.B, name string, object func(i int) any) {
	b.Helper()
	b.Run(name, func(b *testing.B) {
		const n = 10000
		held := make([]any, n)
		var perObject uint64
		for range b.N {
			before := liveHeap()
			for i := range held {
				held[i] = object(i)
			}
			perObject = (liveHeap() - before) / n
			runtime.KeepAlive(held)
			clear(held)
		}
		b.ReportMetric(float64(perObject), "heap-B/object")
	})
}
