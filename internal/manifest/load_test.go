package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// typed decodes a few core kinds into their API types and skips everything else, as a command
// that reads only some kinds would.
func typed(apiVersion, kind string) runtime.Object {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ResourceQuota":
		return &corev1.ResourceQuota{}
	case "v1 Pod":
		return &corev1.Pod{}
	case "apps/v1 ReplicaSet":
		return &appsv1.ReplicaSet{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	}
	return nil
}

// summary renders loaded objects as "Kind namespace/name@line" for comparison, Kind being the
// kind set on the object, prefixed with ~ for an *unstructured.Unstructured.
func summary(objs []Object) string {
	var parts []string
	for _, o := range objs {
		kind := o.Object.GetObjectKind().GroupVersionKind().Kind
		if _, ok := o.Object.(*unstructured.Unstructured); ok {
			kind = "~" + kind
		}
		var ns, name string
		if obj, ok := o.Object.(interface {
			GetNamespace() string
			GetName() string
		}); ok {
			ns, name = obj.GetNamespace(), obj.GetName()
		}
		if ns != "" {
			name = ns + "/" + name
		}
		parts = append(parts, fmt.Sprintf("%s %s@%d", kind, name, o.Line))
	}
	return strings.Join(parts, ", ")
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // summary of the objects, or
		err   string // the whole error message
	}{
		{
			name:  "multi-document",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# c\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\n",
			want:  "Namespace a@1, ResourceQuota a/q@6",
		},
		{
			name:  "kinds the decoder does not know are skipped",
			input: "apiVersion: v1\nkind: ConfigMap\ndata: {a: 1}\n---\napiVersion: example.com/v1\nkind: Widget\nspec: [1, 2]\n---\napiVersion: apps/v1beta2\nkind: ReplicaSet\nspec: nonsense\n",
			want:  "",
		},
		{
			name:  "List items",
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: n}\n\n- apiVersion: v1\n  kind: Secret\n- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: j, namespace: n}\n",
			want:  "Pod n/p@4, Job n/j@10",
		},
		{
			name:  "typed List items inherit kind",
			input: `{"apiVersion": "apps/v1", "kind": "StatefulSetList", "items": [{"metadata": {"name": "db", "namespace": "n"}}, {"kind": "StatefulSet", "metadata": {"name": "db2"}}]}`,
			want:  "StatefulSet n/db@1, StatefulSet db2@1",
		},
		{
			name:  "empty List",
			input: "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n",
			want:  "",
		},
		{
			name:  "unknown fields are fine",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, futureField: x}\nfancy: true\n",
			want:  "Namespace a@1",
		},
		{
			name:  "anchors and aliases",
			input: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: n}\nspec:\n  hard: &h {cpu: \"1\"}\nstatus:\n  hard: *h\n",
			want:  "ResourceQuota n/q@1",
		},
		{
			name:  "unquoted numbers are quantities",
			input: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nstatus:\n  hard: {cpu: 1.5, pods: 10, memory: 1e9}\n",
			want:  "ResourceQuota q@1",
		},
		{
			name:  "BOM and CRLF",
			input: "\ufeffapiVersion: v1\r\nkind: Namespace\r\nmetadata:\r\n  name: a\r\n",
			want:  "Namespace a@1",
		},
		{
			name:  "bad quantity",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\nstatus: {hard: {cpu: lots}}\n",
			err:   "in.yaml:5: ResourceQuota a/q: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
		},
		{
			name:  "wrong type",
			input: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web, namespace: n}\nspec: {replicas: \"3\"}\n",
			err:   "in.yaml:1: ReplicaSet n/web: spec.replicas: cannot use a string as int32",
		},
		{
			name:  "unquoted number as annotation",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations:\n    resizer.io/threshold: 90\n",
			err:   "in.yaml:1: Namespace a: metadata.annotations: cannot use a number as string",
		},
		{
			name:  "bad item in List",
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: 3}\n",
			err:   "in.yaml:7: Pod p: spec.containers: cannot use a number as []v1.Container",
		},
		{
			name:  "item that is not a mapping",
			input: "apiVersion: v1\nkind: List\nitems:\n- just a string\n",
			err:   `in.yaml:4: expected a Kubernetes object (a mapping with apiVersion and kind), found "just a string"`,
		},
		{
			name:  "items not a list",
			input: "apiVersion: v1\nkind: List\nitems:\n  a: b\n",
			err:   "in.yaml:4: List: items must be a list, found a mapping",
		},
		{
			name:  "document is a list",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n- a\n- b\n",
			err:   "in.yaml:5: expected a Kubernetes object (a mapping with apiVersion and kind), found a list",
		},
		{
			name:  "document is a scalar",
			input: "hello\n",
			err:   `in.yaml:1: expected a Kubernetes object (a mapping with apiVersion and kind), found "hello"`,
		},
		{
			name:  "missing kind",
			input: "---\napiVersion: v1\nmetadata: {name: a}\n",
			err:   "in.yaml:2: kind is missing (apiVersion v1)",
		},
		{
			name:  "missing apiVersion",
			input: "kind: ResourceQuota\nmetadata: {name: a}\n",
			err:   "in.yaml:1: ResourceQuota: apiVersion is missing",
		},
		{
			name:  "missing both",
			input: "foo: bar\n",
			err:   "in.yaml:1: not a Kubernetes object: apiVersion and kind are missing",
		},
		{
			name:  "kind not a string",
			input: "apiVersion: v1\nkind: [Pod]\n",
			err:   "in.yaml:2: kind must be a string, found a list",
		},
		{
			name:  "duplicate key",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  name: b\n",
			err:   `in.yaml:5: duplicate key "name"`,
		},
		{
			name:  "merge key",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  <<: {labels: {}}\n",
			err:   "in.yaml:5: merge keys (<<) are not supported",
		},
		{
			name:  "alias inside its anchor",
			input: "apiVersion: v1\nkind: Pod\nmetadata: &m {name: a, labels: *m}\n",
			err:   "in.yaml:3: alias *m refers to itself",
		},
		{
			name:  "alias bomb",
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
			err:   "in.yaml:1: Pod a: the input expands to more than 4984 bytes (too many aliases?)",
		},
		{
			name:  "infinity",
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  priority: .inf\n",
			err:   `in.yaml:5: ".inf" cannot be represented in JSON`,
		},
		{
			name:  "scanner error",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n    b: c\n",
			err:   "in.yaml:5: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:  "scanner error on line 1",
			input: "a: b: c\n",
			err:   "in.yaml:1: invalid YAML: mapping values are not allowed in this context",
		},
		{
			name:  "tab indentation",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n\tname: a\n",
			err:   "in.yaml:4: invalid YAML: found character that cannot start any token",
		},
		{
			name:  "parser error: key indented too far, in the second document",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nstatus:\n  hard:\n    cpu: \"1\"\n   used: {}\n",
			err:   "in.yaml:12: invalid YAML: did not find expected key",
		},
		{
			name:  "parser error on line 1",
			input: "]\n",
			err:   "in.yaml:1: invalid YAML: did not find expected node content",
		},
		{
			name:  "unclosed flow sequence",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nc: [1,\n",
			err:   "in.yaml:5: invalid YAML: did not find expected node content",
		},
		{
			name:  "old Mac line breaks",
			input: "apiVersion: v1\rkind: Namespace\rmetadata: {name: a}\r---\rapiVersion: v1\rkind: List\ritems:\r- a: 1\r - b\r",
			err:   "in.yaml:9: invalid YAML: did not find expected key",
		},
		{
			name:  "unknown anchor (the library gives no position)",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: *m\n",
			err:   "in.yaml: invalid YAML: unknown anchor 'm' referenced",
		},
		{
			name:  "control character",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: \x01}\n",
			err:   "in.yaml:3: invalid YAML: control characters are not allowed",
		},
		{
			name:  "invalid UTF-8",
			input: "apiVersion: v1\n\nkind: \xff\n",
			err:   "in.yaml:3: invalid YAML: invalid leading UTF-8 octet",
		},
		{
			name:  "concatenated JSON",
			input: "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"a\"}}\n{}\n",
			err:   "in.yaml:2: invalid YAML: did not find expected <document start>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Load("in.yaml", []byte(tt.input), typed)
			if tt.err != "" {
				if err == nil {
					t.Fatalf("no error; loaded %s", summary(objs))
				}
				if err.Error() != tt.err {
					t.Errorf("error\n got: %s\nwant: %s", err, tt.err)
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Errorf("error is %T, want *InputError", err)
				}
				if objs != nil {
					t.Errorf("objects returned with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := summary(objs); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestSyntaxErrorLine checks that parser errors point at the mistake, not at the start of the
// collection around it (where go.yaml.in/yaml/v3 puts them), however far apart the two are.
func TestSyntaxErrorLine(t *testing.T) {
	for _, at := range []int{0, 1, 7, 100, 999} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n")
			for i := 0; i < 1000; i++ {
				if i == at {
					b.WriteString(" - bad\n") // one space too far
				} else {
					b.WriteString("- {apiVersion: v1, kind: Secret}\n")
				}
			}
			_, err := Load("in.yaml", []byte(b.String()), typed)
			line := 8 + at
			if at == 0 {
				line++ // a first item indented by one space is fine; the second one is the mistake
			}
			want := fmt.Sprintf("in.yaml:%d: invalid YAML: did not find expected key", line)
			if err == nil || err.Error() != want {
				t.Errorf("got  %v\nwant %s", err, want)
			}
		})
	}
}

// TestLoadValues checks that the values that matter survive the YAML → JSON → typed trip.
func TestLoadValues(t *testing.T) {
	objs, err := Load("in.yaml", []byte(`
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: n}
status:
  hard: {cpu: 1.5, pods: 10, memory: 1e9, storage: 0.1000000000000000001}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: n}
spec: {replicas: 0x3}
`), typed)
	if err != nil {
		t.Fatal(err)
	}
	q := objs[0].Object.(*corev1.ResourceQuota)
	for name, want := range map[corev1.ResourceName]string{"cpu": "1500m", "pods": "10", "memory": "1e9", "storage": "100000001n"} {
		got := q.Status.Hard[name]
		if got.String() != want {
			t.Errorf("%s = %s, want %s", name, got.String(), want)
		}
	}
	if rs := objs[1].Object.(*appsv1.ReplicaSet); rs.Spec.Replicas == nil || *rs.Spec.Replicas != 3 {
		t.Errorf("replicas: %v", rs.Spec.Replicas)
	}
}

// TestLoadUnstructured reads custom resources the loader has no types for.
func TestLoadUnstructured(t *testing.T) {
	objs, err := Load("in.yaml", []byte(`apiVersion: serving.knative.dev/v1
kind: Revision
metadata:
  name: hello-00001
  namespace: pr-42
  labels: {serving.knative.dev/service: hello}
spec:
  containerConcurrency: 10
  timeoutSeconds: 300.5
  containers: [{image: ghcr.io/example/hello@sha256:abc}]
status:
  conditions: [{type: Ready, status: "True"}]
---
# a cluster-scoped kind, or one without a namespace: left as written
apiVersion: serving.knative.dev/v1
kind: Revision
metadata: {name: bare}
---
apiVersion: kustos.io/v1alpha1
kind: Cleaner
metadata: {name: c, namespace: pr-42}
spec: {ttl: 15d}
`), Unstructured)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(objs), "~Revision pr-42/hello-00001@1, ~Revision bare@15, ~Cleaner pr-42/c@19"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	u := objs[0].Object.(*unstructured.Unstructured)
	if u.GetAPIVersion() != "serving.knative.dev/v1" || u.GetKind() != "Revision" {
		t.Errorf("apiVersion/kind: %s %s", u.GetAPIVersion(), u.GetKind())
	}
	if u.GetLabels()["serving.knative.dev/service"] != "hello" {
		t.Errorf("labels: %v", u.GetLabels())
	}
	// Numbers are what the API machinery makes of JSON: int64 when whole, float64 otherwise.
	if v, found, err := unstructured.NestedInt64(u.Object, "spec", "containerConcurrency"); !found || err != nil || v != 10 {
		t.Errorf("containerConcurrency: %v %v %v", v, found, err)
	}
	if v, found, err := unstructured.NestedFloat64(u.Object, "spec", "timeoutSeconds"); !found || err != nil || v != 300.5 {
		t.Errorf("timeoutSeconds: %v %v %v", v, found, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" {
		t.Errorf("conditions: %v", conds)
	}
	u.DeepCopy() // panics on values the API machinery does not expect
}

// TestLoadMixed reads a kind: List of mixed kinds, some typed, some unstructured, some skipped,
// and a *List whose items leave out apiVersion and kind.
func TestLoadMixed(t *testing.T) {
	decode := func(apiVersion, kind string) runtime.Object {
		if obj := typed(apiVersion, kind); obj != nil {
			return obj
		}
		if apiVersion == "v1" {
			return nil // core kinds the command does not read
		}
		return Unstructured(apiVersion, kind)
	}
	objs, err := Load("dump.yaml", []byte(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: n}
- apiVersion: v1
  kind: Secret
  metadata: {name: s, namespace: n}
- apiVersion: serving.knative.dev/v1
  kind: Revision
  metadata: {name: r, namespace: n}
- apiVersion: serving.knative.dev/v1
  kind: RevisionList
  items:
  - metadata: {name: r2, namespace: n}
  - {kind: Route, metadata: {name: rt, namespace: n}}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: j, namespace: n}
`), decode)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(objs), "Pod n/p@4, ~Revision n/r@10, ~Revision n/r2@16, ~Route n/rt@17, Job n/j@18"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if u := objs[2].Object.(*unstructured.Unstructured); u.GetAPIVersion() != "serving.knative.dev/v1" || u.GetKind() != "Revision" {
		t.Errorf("inherited apiVersion/kind not set: %v", u.Object)
	}
	if pod := objs[0].Object.(*corev1.Pod); pod.APIVersion != "v1" || pod.Kind != "Pod" {
		t.Errorf("typed object's apiVersion/kind: %q %q", pod.APIVersion, pod.Kind)
	}
}

// TestLoadJSON reads JSON, one object and an API list response.
func TestLoadJSON(t *testing.T) {
	objs, err := Load("in.json", []byte(`{
  "apiVersion": "serving.knative.dev/v1",
  "kind": "RevisionList",
  "metadata": {"resourceVersion": "7"},
  "items": [
    {"metadata": {"name": "a", "namespace": "n"}, "spec": {"containerConcurrency": 0}},
    {"metadata": {"name": "b", "namespace": "n"}, "status": {"actualReplicas": 2}}
  ]
}
`), Unstructured)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(objs), "~Revision n/a@6, ~Revision n/b@7"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if v, _, _ := unstructured.NestedInt64(objs[1].Object.(*unstructured.Unstructured).Object, "status", "actualReplicas"); v != 2 {
		t.Errorf("actualReplicas = %d", v)
	}
}

// cleaner decodes Kustos's Cleaners typed and skips everything else.
func cleaner(apiVersion, kind string) runtime.Object {
	if apiVersion == v1alpha1.GroupVersion.String() && kind == "Cleaner" {
		return &v1alpha1.Cleaner{}
	}
	return nil
}

// TestLoadCleaner reads a typed Cleaner among other objects.
func TestLoadCleaner(t *testing.T) {
	objs, err := Load("in.yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: pr-1}\n---\napiVersion: kustos.io/v1alpha1\nkind: Cleaner\nmetadata: {name: c, namespace: pr-1}\nspec:\n  ttl: 15d\n  conditions: ['time > timestamp(\"2024-01-01T00:00:00Z\")']\n"), cleaner)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(objs), "Cleaner pr-1/c@5"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if c := objs[0].Object.(*v1alpha1.Cleaner); c.Spec.TTL != "15d" || len(c.Spec.Conditions) != 1 {
		t.Errorf("spec: %+v", c.Spec)
	}
}

// TestLoadErrors checks the messages of decoding errors, typed and unstructured.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, input string
		decode      Decoder
		err         string
	}{
		{
			name:   "typed, in the second document",
			input:  "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: n}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: n}\nspec: {backoffLimit: many}\n",
			decode: typed,
			err:    "in.yaml:5: Job n/j: spec.backoffLimit: cannot use a string as int32",
		},
		{
			name:   "Kustos's own typed Cleaner",
			input:  "apiVersion: kustos.io/v1alpha1\nkind: Cleaner\nmetadata: {name: c, namespace: pr-1}\nspec:\n  ttl: 15d\n  retry: {period: 1}\n",
			decode: cleaner,
			err:    "in.yaml:1: Cleaner pr-1/c: spec.retry.period: cannot use a number as string",
		},
		{
			name:   "unstructured metadata of the wrong type",
			input:  "apiVersion: serving.knative.dev/v1\nkind: Revision\nmetadata:\n  name: r\n  annotations: {autoscaling.knative.dev/min-scale: 1}\n",
			decode: Unstructured,
			err:    "in.yaml:1: Revision r: metadata.annotations: cannot use a number as string",
		},
		{
			name:   "unstructured metadata not a mapping",
			input:  "apiVersion: serving.knative.dev/v1\nkind: Revision\nmetadata: [r]\n",
			decode: Unstructured,
			err:    "in.yaml:1: Revision: metadata: cannot use an array as v1.ObjectMeta",
		},
		{
			name:   "unstructured name not a string",
			input:  "apiVersion: serving.knative.dev/v1\nkind: Revision\nmetadata: {name: [r]}\n",
			decode: Unstructured,
			err:    "in.yaml:1: Revision: metadata.name: cannot use an array as string",
		},
		{
			name:   "unstructured alias bomb",
			input:  "apiVersion: x.io/v1\nkind: X\nmetadata: {name: a}\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
			decode: Unstructured,
			err:    "in.yaml:1: X a: the input expands to more than 4996 bytes (too many aliases?)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Load("in.yaml", []byte(tt.input), tt.decode)
			if err == nil {
				t.Fatalf("no error; loaded %s", summary(objs))
			}
			if err.Error() != tt.err {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.err)
			}
			var ie *InputError
			if !errors.As(err, &ie) || objs != nil {
				t.Errorf("error is %T, objects %v; want *InputError and no objects", err, objs)
			}
		})
	}
}

// TestLoadSkip checks that documents the decoder skips are not decoded at all: neither their
// content nor their size counts.
func TestLoadSkip(t *testing.T) {
	var asked []string
	decode := func(apiVersion, kind string) runtime.Object {
		asked = append(asked, apiVersion+" "+kind)
		if kind == "Namespace" {
			return &corev1.Namespace{}
		}
		return nil
	}
	objs, err := Load("in.yaml", []byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: 3}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: a}}
- {apiVersion: v1, kind: Secret, data: {a: [not, base64]}}
---
apiVersion: x.io/v1
kind: WidgetList
items: [{metadata: {name: w}}]
`), decode)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(objs), "Namespace a@9"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := strings.Join(asked, ", "), "v1 Pod, v1 Namespace, v1 Secret, x.io/v1 Widget"; got != want {
		t.Errorf("decoder asked for %s, want %s (not for the Lists themselves)", got, want)
	}
}
