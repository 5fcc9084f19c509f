package recommend

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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

// TestLoad covers what Load adds to manifest.Load (whose own tests cover the input format): the
// kinds read, the Event conversion, required names and the default namespace.
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
			name:  "every kind read",
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- {apiVersion: v1, kind: ResourceQuota, metadata: {name: q}}\n- {apiVersion: v1, kind: Event, metadata: {name: e}}\n- {apiVersion: events.k8s.io/v1, kind: Event, metadata: {name: e2}}\n- {apiVersion: v1, kind: ReplicationController, metadata: {name: rc}}\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n- {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs}}\n- {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: ss}}\n- {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds}}\n- {apiVersion: batch/v1, kind: Job, metadata: {name: j}}\n- {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l}}\n",
			want:  "Namespace a@4, ResourceQuota default/q@5, Event default/e@6, Event default/e2@7, ReplicationController default/rc@8, Pod default/p@9, ReplicaSet default/rs@10, StatefulSet default/ss@11, DaemonSet default/ds@12, Job default/j@13, Lease default/l@14",
		},
		{
			name:  "unknown kinds and versions are skipped",
			input: "apiVersion: v1\nkind: ConfigMap\ndata: {a: 1}\n---\napiVersion: example.com/v1\nkind: Widget\nspec: [1, 2]\n---\napiVersion: apps/v1beta2\nkind: ReplicaSet\nspec: nonsense\n",
			want:  "",
		},
		{
			name:  "typed List items inherit kind",
			input: `{"apiVersion": "apps/v1", "kind": "StatefulSetList", "items": [{"metadata": {"name": "db", "namespace": "n"}}, {"kind": "StatefulSet", "metadata": {"name": "db2"}}]}`,
			want:  "StatefulSet n/db@1, StatefulSet default/db2@1",
		},
		{
			name:  "events.k8s.io Event is converted",
			input: "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e, namespace: n}\nnote: hello\nregarding: {kind: Pod, name: p}\neventTime: 2024-05-01T10:00:00.000000Z\n",
			want:  "Event n/e@1",
		},
		{
			name:  "quota without name",
			input: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: a}\n",
			err:   "in.yaml:1: ResourceQuota: metadata.name is missing",
		},
		{
			name:  "namespace without name, in a typed List",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: NamespaceList\nitems:\n- metadata: {name: b}\n- metadata: {labels: {x: y}}\n",
			err:   "in.yaml:9: Namespace: metadata.name is missing",
		},
		{
			name:  "other kinds may lack a name",
			input: "apiVersion: v1\nkind: Pod\nmetadata: {namespace: a}\n",
			want:  "Pod a/@1",
		},
		{
			name:  "errors of the reader pass through",
			input: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web, namespace: n}\nspec: {replicas: \"3\"}\n",
			err:   "in.yaml:1: ReplicaSet n/web: spec.replicas: cannot use a string as int32",
		},
		{
			name:  "syntax errors of the reader pass through",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n\tname: a\n",
			err:   "in.yaml:4: invalid YAML: found character that cannot start any token",
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

// TestLoadEvent checks that the fields of an events.k8s.io/v1 Event survive the conversion.
func TestLoadEvent(t *testing.T) {
	objs, err := Load("in.yaml", []byte(`
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
`))
	if err != nil {
		t.Fatal(err)
	}
	ev := objs[0].Object.(*corev1.Event)
	if ev.APIVersion != "v1" || ev.Kind != "Event" ||
		ev.Message != "the note" || ev.Reason != "FailedCreate" || ev.Type != "Warning" ||
		ev.InvolvedObject.Kind != "ReplicaSet" || ev.InvolvedObject.Name != "web" || ev.Count != 3 ||
		ev.FirstTimestamp.Hour() != 10 || ev.LastTimestamp.Hour() != 11 || ev.EventTime.Hour() != 9 ||
		ev.Series == nil || ev.Series.Count != 2 || ev.Series.LastObservedTime.Minute() != 30 {
		t.Errorf("converted event: %+v", ev)
	}
}
