package recommend

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// summary renders loaded objects as "Kind namespace/name@line" for comparison.
func summary(objs []Object) string {
	var parts []string
	for _, o := range objs {
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o.Object), "*")
		kind = kind[strings.Index(kind, ".")+1:]
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
			name:  "default namespace",
			input: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\n",
			want:  "ReplicaSet default/web@1",
		},
		{
			name:  "unknown kinds and versions are skipped",
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
			want:  "StatefulSet n/db@1, StatefulSet default/db2@1",
		},
		{
			name:  "empty List",
			input: "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n",
			want:  "",
		},
		{
			name:  "events.k8s.io Event is converted",
			input: "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e, namespace: n}\nnote: hello\nregarding: {kind: Pod, name: p}\neventTime: 2024-05-01T10:00:00.000000Z\n",
			want:  "Event n/e@1",
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
			want:  "ResourceQuota default/q@1",
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
			name:  "quota without name",
			input: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: a}\n",
			err:   "in.yaml:1: ResourceQuota: metadata.name is missing",
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
			objs, err := Load("in.yaml", []byte(tt.input))
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
			_, err := Load("in.yaml", []byte(b.String()))
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
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: e, namespace: n}
note: the note
reason: FailedCreate
type: Warning
regarding: {kind: ReplicaSet, name: web}
deprecatedCount: 3
deprecatedFirstTimestamp: "2024-05-01T10:00:00Z"
deprecatedLastTimestamp: "2024-05-01T11:00:00Z"
eventTime: "2024-05-01T09:00:00.000000Z"
series: {count: 2, lastObservedTime: "2024-05-01T11:30:00.000000Z"}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: n}
spec: {replicas: 0x3}
`))
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
	ev := objs[1].Object.(*corev1.Event)
	if ev.Message != "the note" || ev.Reason != "FailedCreate" || ev.Type != "Warning" ||
		ev.InvolvedObject.Kind != "ReplicaSet" || ev.InvolvedObject.Name != "web" || ev.Count != 3 ||
		ev.FirstTimestamp.Hour() != 10 || ev.LastTimestamp.Hour() != 11 || ev.EventTime.Hour() != 9 ||
		ev.Series == nil || ev.Series.Count != 2 || ev.Series.LastObservedTime.Minute() != 30 {
		t.Errorf("converted event: %+v", ev)
	}
	if rs := objs[2].Object.(*appsv1.ReplicaSet); rs.Spec.Replicas == nil || *rs.Spec.Replicas != 3 {
		t.Errorf("replicas: %v", rs.Spec.Replicas)
	}
}
