package manifest

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and it must return either an
// *InputError pointing into the input or objects with positions (unstructured ones with apiVersion
// and kind), never both. Core kinds are decoded typed and everything else unstructured, so both
// paths are exercised. The seed corpus is in testdata/fuzz/FuzzLoad; run with go test -fuzz
// FuzzLoad -fuzztime 45s.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: n}\nstatus: {hard: {cpu: \"1\"}, used: {cpu: 900m}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: n, annotations: {resizer.io/threshold: \"5\"}}}\n"))
	f.Add([]byte("apiVersion: serving.knative.dev/v1\nkind: RevisionList\nitems:\n- metadata: {name: r, labels: {a: b}}\n  spec: {containerConcurrency: 10}\n"))
	decode := func(apiVersion, kind string) runtime.Object {
		if obj := typed(apiVersion, kind); obj != nil {
			return obj
		}
		return Unstructured(apiVersion, kind)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Load("fuzz.yaml", data, decode)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error is %T, want *InputError: %v", err, err)
			}
			if objs != nil {
				t.Fatalf("objects returned with an error")
			}
			lines := len(lineEnds(data)) + 1
			if ie.File != "fuzz.yaml" || ie.Msg == "" || ie.Line < 0 || ie.Line > lines {
				t.Fatalf("bad error position or text: %#v (input has %d lines)", ie, lines)
			}
			return
		}
		for _, o := range objs {
			if o.Object == nil || o.File != "fuzz.yaml" || o.Line < 1 {
				t.Fatalf("bad object: %#v", o)
			}
			if u, ok := o.Object.(*unstructured.Unstructured); ok && (u.GetAPIVersion() == "" || u.GetKind() == "") {
				t.Fatalf("unstructured object without apiVersion or kind: %v", u.Object)
			}
			o.Object.DeepCopyObject() // unstructured content must hold only JSON types
		}
	})
}
