package objcache

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"sigs.k8s.io/json"
)

func TestCompact(t *testing.T) {
	if Compact(nil) != nil {
		t.Error("nil became a map")
	}
	m := map[string]any{"name": "web", "labels": map[string]any{"app": "web"}, "managedFields": []any{}}
	delete(m, "managedFields")
	c := Compact(m)
	if !reflect.DeepEqual(c, m) {
		t.Errorf("Compact(%v) = %v", m, c)
	}
	c["name"] = "other"
	if m["name"] != "web" {
		t.Error("the compact copy shares its entries' storage with the original")
	}
}

// Two objects decoded apart hold one copy of each key, their labels' and annotations' too.
func TestCompactInternsKeys(t *testing.T) {
	decode := func() map[string]any {
		var o map[string]any
		if err := json.UnmarshalCaseSensitivePreserveInts([]byte(deploymentJSON), &o); err != nil {
			t.Fatal(err)
		}
		return Compact(o["metadata"].(map[string]any)) //nolint:forcetypeassert // the document above
	}
	keyData := func(m map[string]any, want string) *byte {
		for k := range m {
			if k == want {
				return unsafe.StringData(k)
			}
		}
		t.Fatalf("no key %q in %v", want, m)
		return nil
	}
	a := decode()
	runtime.GC() // a copy interned before a collection is still the one shared after it
	b := decode()
	if keyData(a, "namespace") != keyData(b, "namespace") {
		t.Error(`two copies of the key "namespace"`)
	}
	la, lb := a["labels"].(map[string]any), b["labels"].(map[string]any) //nolint:forcetypeassert // the document above
	if keyData(la, "app") != keyData(lb, "app") {
		t.Error(`two copies of the label key "app"`)
	}
	if la["app"] != "app-00012" {
		t.Errorf("labels %v", la)
	}
	long := strings.Repeat("k", maxInternedLen+1)
	if x, y := intern(strings.Clone(long)), intern(strings.Clone(long)); unsafe.StringData(x) == unsafe.StringData(y) {
		t.Errorf("a key of %d bytes was interned (at most %d are)", len(long), maxInternedLen)
	}
}

// deploymentJSON is a Deployment as the API server sends it, managed fields included.
const deploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app-00012","namespace":"wc-00012",` +
	`"uid":"0f1c5b0e-7d3e-4a8e-9a43-2f7f3c4b5d6e","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-11-27T15:13:02Z",` +
	`"labels":{"app":"app-00012"},"annotations":{"deployment.kubernetes.io/revision":"1"},"managedFields":[{"manager":"bench",` +
	`"operation":"Update","apiVersion":"apps/v1","time":"2026-11-27T15:13:02Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},` +
	`"spec":{"replicas":1,"selector":{"matchLabels":{"app":"app-00012"}},"template":{"metadata":{"labels":{"app":"app-00012"}},` +
	`"spec":{"containers":[{"name":"app","image":"registry.example/preview:1.2.3"}]}}}}`

// BenchmarkCachedDeployment reports the heap a cache holds per Deployment trimmed to metadata
// and spec.replicas, its managed fields dropped: with the decoded metadata map as it is, and
// compacted.
func BenchmarkCachedDeployment(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "decoded"
		if compact {
			name = "compacted"
		}
		b.Run(name, func(b *testing.B) {
			const n = 10000
			held := make([]map[string]any, n)
			var perObject uint64
			for range b.N {
				before := liveHeap()
				for i := range held {
					var o map[string]any
					if err := json.UnmarshalCaseSensitivePreserveInts([]byte(deploymentJSON), &o); err != nil {
						b.Fatal(err)
					}
					md := o["metadata"].(map[string]any) //nolint:forcetypeassert // the document above
					delete(md, "managedFields")
					if compact {
						md = Compact(md)
					}
					held[i] = map[string]any{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": md,
						"spec": map[string]any{"replicas": o["spec"].(map[string]any)["replicas"]}} //nolint:forcetypeassert // as above
				}
				perObject = (liveHeap() - before) / n
				runtime.KeepAlive(held)
				clear(held)
			}
			b.ReportMetric(float64(perObject), "heap-B/object")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
