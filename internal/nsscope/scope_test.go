package nsscope

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// namespaceLabels is a client.Reader of Namespace metadata: name → labels.
type namespaceLabels map[string]map[string]string

func (n namespaceLabels) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	l, ok := n[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, key.Name)
	}
	if l == nil {
		return errors.New("cache not synced")
	}
	obj.SetName(key.Name)
	obj.SetLabels(l)
	return nil
}

func (n namespaceLabels) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

var _ client.Reader = namespaceLabels(nil)

func TestSelects(t *testing.T) {
	namespaces := namespaceLabels{
		"team-a":  {"kustos.io/shard": "a", "tier": "gold"},
		"team-b":  {"kustos.io/shard": "b"},
		"plain":   {},
		"unknown": nil, // the reader fails
	}
	for _, tc := range []struct {
		selector  string
		namespace string
		want      bool
		wantErr   bool
	}{
		{"", "team-a", true, false},
		{"", "plain", true, false},
		{"", "missing", true, false}, // no selector: nothing is read
		{"kustos.io/shard=a", "team-a", true, false},
		{"kustos.io/shard=a", "team-b", false, false},
		{"kustos.io/shard=a", "plain", false, false},
		{"kustos.io/shard=a", "missing", false, false},
		{"kustos.io/shard=a", "", true, false}, // cluster-scoped objects
		{"kustos.io/shard=a", "unknown", false, true},
		{"kustos.io/shard!=a", "plain", true, false},
		{"kustos.io/shard in (a,b),tier=gold", "team-a", true, false},
		{"kustos.io/shard in (a,b),tier=gold", "team-b", false, false},
		{"!kustos.io/shard", "plain", true, false},
		{"!kustos.io/shard", "team-b", false, false},
	} {
		t.Run(tc.selector+"/"+tc.namespace, func(t *testing.T) {
			s, err := New(tc.selector, namespaces)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Selects(context.Background(), tc.namespace)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Selects(%q) = %v, want %v", tc.namespace, got, tc.want)
			}
		})
	}
}

func TestParseRefusesBadSelectors(t *testing.T) {
	for _, sel := range []string{"=a", "kustos.io/shard a", "a=b,", "in (x)", "key in (a", "-bad-key=x"} {
		t.Run(sel, func(t *testing.T) {
			_, err := New(sel, nil)
			if err == nil {
				t.Fatalf("New(%q): no error", sel)
			}
			if !strings.Contains(err.Error(), Flag) || !strings.Contains(err.Error(), sel) {
				t.Errorf("error %q does not name %s and the selector", err, Flag)
			}
		})
	}
}

func TestNilAndEmptySelectEverything(t *testing.T) {
	var nilScope *Scope
	empty, err := New("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Scope{"nil": nilScope, "empty": empty} {
		t.Run(name, func(t *testing.T) {
			ok, err := s.Selects(context.Background(), "any")
			if !ok || err != nil {
				t.Errorf("Selects = %v, %v; want true, nil", ok, err)
			}
			if !s.All() || s.LabelKeys() != nil || !s.Matches(nil) {
				t.Errorf("All %v, LabelKeys %v, Matches(nil) %v", s.All(), s.LabelKeys(), s.Matches(nil))
			}
		})
	}
}

func TestLabelKeys(t *testing.T) {
	s, err := New("kustos.io/shard in (a,b),tier=gold,!legacy,tier!=bronze", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.LabelKeys(), ",")
	if got != "kustos.io/shard,legacy,tier" {
		t.Errorf("LabelKeys = %s", got)
	}
}

func namespace(labels map[string]string) *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	ns.SetName("ns")
	ns.SetLabels(labels)
	return ns
}

// TestNamespacesPredicate: a Namespace that joins the selector enqueues its objects, whatever
// changed; one outside it or leaving it enqueues nothing; a selected one passes what the
// consumer's own predicate lets through.
func TestNamespacesPredicate(t *testing.T) {
	s, err := New("kustos.io/shard=a", namespaceLabels{})
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]string{"kustos.io/shard": "a"}
	b := map[string]string{"kustos.io/shard": "b"}
	aTeam := map[string]string{"kustos.io/shard": "a", "team": "x"}
	p := Namespaces(s, predicate.AnnotationChangedPredicate{})
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		annotate bool
		want     bool
	}{
		{"created selected", nil, a, false, true},
		{"created elsewhere", nil, b, false, false},
		{"relabelled b to a", b, a, false, true},
		{"relabelled a to b", a, b, false, false},
		{"unlabelled to a", map[string]string{}, a, false, true},
		{"selected, annotation changed", a, a, true, true},
		{"selected, nothing the consumer reads", a, aTeam, false, false},
		{"elsewhere, annotation changed", b, b, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			if tc.old == nil {
				got = p.Create(event.CreateEvent{Object: namespace(tc.new)})
			} else {
				o, n := namespace(tc.old), namespace(tc.new)
				if tc.annotate {
					n.SetAnnotations(map[string]string{"resizer.io/enabled": "true"})
				}
				got = p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n})
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObjectsPredicate(t *testing.T) {
	s, err := New("kustos.io/shard=a", namespaceLabels{"team-a": {"kustos.io/shard": "a"}, "team-b": {"kustos.io/shard": "b"}, "broken": nil})
	if err != nil {
		t.Fatal(err)
	}
	p := Objects(s)
	obj := func(ns string) client.Object {
		q := &corev1.ResourceQuota{}
		q.SetNamespace(ns)
		q.SetName("q")
		return q
	}
	for ns, want := range map[string]bool{"team-a": true, "team-b": false, "gone": false, "broken": true} {
		t.Run(ns, func(t *testing.T) {
			if got := p.Create(event.CreateEvent{Object: obj(ns)}); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("cluster-scoped", func(t *testing.T) {
		if !p.Create(event.CreateEvent{Object: &corev1.PersistentVolume{}}) {
			t.Error("a cluster-scoped object was filtered out")
		}
	})
	t.Run("namespace by its own labels", func(t *testing.T) {
		if p.Create(event.CreateEvent{Object: namespace(map[string]string{"kustos.io/shard": "b"})}) {
			t.Error("a Namespace of shard b passed")
		}
		if !p.Create(event.CreateEvent{Object: namespace(map[string]string{"kustos.io/shard": "a"})}) {
			t.Error("a Namespace of shard a was filtered out")
		}
	})
}

// TestLive: the stamper's Scope answers from the reader it is given (the API server), not the
// cache the detectors' Scope reads: a Namespace the cache has not seen yet is selected as soon
// as the API server has it.
func TestLive(t *testing.T) {
	cache := namespaceLabels{}
	live := namespaceLabels{"team-new": {"kustos.io/shard": "a"}}
	s, err := New("kustos.io/shard=a", cache)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Selects(context.Background(), "team-new"); ok || err != nil {
		t.Fatalf("cached Scope: %v, %v; want false (the cache has not seen it)", ok, err)
	}
	if ok, err := s.Live(live).Selects(context.Background(), "team-new"); !ok || err != nil {
		t.Fatalf("live Scope: %v, %v; want true", ok, err)
	}
	if ok, err := s.Selects(context.Background(), "team-new"); ok || err != nil {
		t.Fatalf("Live changed the Scope it was made from: %v, %v", ok, err)
	}
	var none *Scope
	if none.Live(live) != nil {
		t.Fatal("the Live of a nil Scope (every namespace) is not nil")
	}
}
