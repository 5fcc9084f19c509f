package admission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// exampleCleaner is a Knative preview's Cleaner (as in docs/detectors/cleaners.md): a Knative
// service's revisions, gone 15 days after the Cleaner was created once none is left.
func exampleCleaner() *v1alpha1.Cleaner {
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview-42"},
		Spec: v1alpha1.CleanerSpec{
			TTL: "15d",
			Targets: []v1alpha1.Target{{
				Name: "revisions",
				Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "revision",
					MatchLabels: map[string]string{"serving.knative.dev/service": "preview-42"}},
			}},
			Conditions: []string{"revisions.items.size() == 0"},
		},
	}
}

// causes returns err's status causes as "field: type" strings, and fails unless err is an
// Invalid status for the Cleaner.
func causes(t *testing.T, err error, name string) []string {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid status, got %T: %v", err, err)
	}
	d := st.Status().Details
	if d == nil || d.Group != "kustos.io" || d.Kind != "Cleaner" || d.Name != name {
		t.Fatalf("status details %+v, want kustos.io Cleaner %q", d, name)
	}
	var out []string
	for _, c := range d.Causes {
		out = append(out, c.Field+": "+string(c.Type))
	}
	return out
}

func TestValidateCreate(t *testing.T) {
	v := NewCleanerValidator(Options{})
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.Cleaner)
		want   []string // causes; nil: allowed
		inMsg  string
	}{
		{name: "example", mutate: func(*v1alpha1.Cleaner) {}},
		{name: "own namespace named", mutate: func(c *v1alpha1.Cleaner) { c.Spec.Targets[0].Reference.Namespace = "team-a" }},
		{
			name:   "CEL syntax error",
			mutate: func(c *v1alpha1.Cleaner) { c.Spec.Conditions = append(c.Spec.Conditions, "revisions.items.size() >") },
			want:   []string{"spec.conditions[1]: FieldValueInvalid"},
			inMsg:  "spec.conditions[1]: Invalid value",
		},
		{
			name: "cost bomb",
			mutate: func(c *v1alpha1.Cleaner) {
				c.Spec.Conditions = []string{"revisions.items.all(a, revisions.items.all(b, revisions.items.all(c, a == b && b == c)))"}
			},
			want:  []string{"spec.conditions[0]: FieldValueInvalid"},
			inMsg: "estimated worst-case cost",
		},
		{
			name:   "not a bool",
			mutate: func(c *v1alpha1.Cleaner) { c.Spec.Conditions = []string{"revisions.items.size()"} },
			want:   []string{"spec.conditions[0]: FieldValueInvalid"},
			inMsg:  "must evaluate to a bool",
		},
		{
			name: "target not evaluated",
			mutate: func(c *v1alpha1.Cleaner) {
				c.Spec.Targets[0].IncludeWhenEvaluating = ptr.To(false)
			},
			want:  []string{"spec.conditions[0]: FieldValueInvalid"},
			inMsg: "undeclared reference to 'revisions'",
		},
		{
			name: "name and selector, bad ttl",
			mutate: func(c *v1alpha1.Cleaner) {
				c.Spec.TTL = "fortnight"
				c.Spec.Targets[0].Reference.Name = "r1"
			},
			want: []string{"spec.ttl: FieldValueInvalid", "spec.targets[0].reference: FieldValueInvalid"},
		},
		{
			name:   "other namespace",
			mutate: func(c *v1alpha1.Cleaner) { c.Spec.Targets[0].Reference.Namespace = "team-b" },
			want:   []string{"spec.targets[0].reference.namespace: FieldValueForbidden"},
			inMsg:  `a Cleaner acts only in its own namespace "team-a", not in "team-b"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := exampleCleaner()
			tc.mutate(cl)
			warnings, err := v.ValidateCreate(context.Background(), cl)
			if len(warnings) > 0 {
				t.Errorf("warnings %q, want none", warnings)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused a valid Cleaner: %v", err)
				}
				return
			}
			got := causes(t, err, cl.Name)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("causes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("message %q lacks %q", err.Error(), tc.inMsg)
			}
		})
	}
}

func TestValidateUpdateChecksTheNewObject(t *testing.T) {
	v := NewCleanerValidator(Options{})
	valid, broken := exampleCleaner(), exampleCleaner()
	broken.Spec.Conditions = []string{"revisions.items.size( == 0"}
	if _, err := v.ValidateUpdate(context.Background(), valid, broken); !apierrors.IsInvalid(err) {
		t.Errorf("valid → broken: want Invalid, got %v", err)
	}
	// A Cleaner stored before the webhook ran can be repaired, not edited into another broken one.
	if _, err := v.ValidateUpdate(context.Background(), broken, valid); err != nil {
		t.Errorf("broken → valid: %v", err)
	}
	relabelled := broken.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	if _, err := v.ValidateUpdate(context.Background(), broken, relabelled); !apierrors.IsInvalid(err) {
		t.Errorf("broken → broken: want Invalid, got %v", err)
	}
	// A Cleaner being deleted is never evaluated again: its finalizers can go.
	deleting := broken.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = nil
	if _, err := v.ValidateUpdate(context.Background(), broken, deleting); err != nil {
		t.Errorf("update of a deleted Cleaner: %v", err)
	}
	if _, err := v.ValidateDelete(context.Background(), broken); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// TestNamespaceFromTheRequest: an object without metadata.namespace is checked in the
// request's namespace.
func TestNamespaceFromTheRequest(t *testing.T) {
	v := NewCleanerValidator(Options{})
	cl := exampleCleaner()
	cl.Namespace, cl.Name = "", ""
	cl.Spec.Targets[0].Reference.Namespace = "team-b"
	ctx := cradmission.NewContextWithRequest(context.Background(), cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Namespace: "team-a", Name: "from-request", Operation: admissionv1.Create,
	}})
	_, err := v.ValidateCreate(ctx, cl)
	if got := causes(t, err, "from-request"); len(got) != 1 || got[0] != "spec.targets[0].reference.namespace: FieldValueForbidden" {
		t.Errorf("causes %q", got)
	}
	if !strings.Contains(err.Error(), `own namespace "team-a"`) {
		t.Errorf("message %q does not name the request's namespace", err.Error())
	}
}

// TestTimeout: a review that cannot get a slot within the timeout is refused with a Timeout
// status, and the slot's check still runs to its end.
func TestTimeout(t *testing.T) {
	v := NewCleanerValidator(Options{Timeout: 50 * time.Millisecond, MaxConcurrent: 1})
	v.slots <- struct{}{} // a check that does not end
	start := time.Now()
	_, err := v.ValidateCreate(context.Background(), exampleCleaner())
	if !apierrors.IsTimeout(err) {
		t.Fatalf("want a Timeout status, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the review took %s, want about the 50ms timeout", d)
	}
	if !strings.Contains(err.Error(), "team-a/preview-42") || !strings.Contains(err.Error(), "50ms") {
		t.Errorf("message %q should name the Cleaner and the timeout", err.Error())
	}
	<-v.slots
	if _, err := v.ValidateCreate(context.Background(), exampleCleaner()); err != nil {
		t.Errorf("with a free slot: %v", err)
	}
	if len(v.slots) != 0 {
		t.Errorf("a finished check kept its slot")
	}
}

func TestDefaults(t *testing.T) {
	v := NewCleanerValidator(Options{})
	if v.timeout != DefaultTimeout || cap(v.slots) < 1 {
		t.Errorf("timeout %s, slots %d", v.timeout, cap(v.slots))
	}
}
