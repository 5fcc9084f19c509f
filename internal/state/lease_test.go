package state

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestLeaseName(t *testing.T) {
	long := strings.Repeat("q", 253)
	cases := []struct {
		name string
		key  lifecycle.Key
		want string
	}{
		{"namespace-resizer convention for quotas", lifecycle.NewKey("quota", "team-a", "compute"), "state-team-a-compute"},
		{"other detectors carry their name", lifecycle.NewKey("expiry", "team-a", "preview"), "state-expiry-team-a-preview"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeaseName(tc.key); got != tc.want {
				t.Errorf("LeaseName(%s) = %s, want %s", tc.key, got, tc.want)
			}
		})
	}
	t.Run("too long gets a hash suffix and stays a valid, unique name", func(t *testing.T) {
		a := LeaseName(lifecycle.NewKey("quota", "team-a", long))
		b := LeaseName(lifecycle.NewKey("quota", "team-a", long[:252]+"r"))
		if len(a) > 253 || a == b {
			t.Errorf("names %q and %q: want distinct names of at most 253 characters", a, b)
		}
		if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
			t.Errorf("%q is not a valid Lease name: %v", a, errs)
		}
	})
}

func TestSplitKey(t *testing.T) {
	d, ns, n := SplitKey("quota/team-a/compute")
	if d != "quota" || ns != "team-a" || n != "compute" {
		t.Errorf("SplitKey = %q %q %q", d, ns, n)
	}
	if d, ns, n := SplitKey("broken"); d != "broken" || ns != "" || n != "" {
		t.Errorf("SplitKey(broken) = %q %q %q", d, ns, n)
	}
}

func TestParseLease(t *testing.T) {
	lm := time.Date(2026, 11, 21, 12, 0, 0, 500, time.UTC)
	holder := "pr-12"
	ours := func(annotations map[string]string) *coordinationv1.Lease {
		a := map[string]string{AnnotationKey: "quota/team-a/compute"}
		for k, v := range annotations {
			a[k] = v
		}
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "state-team-a-compute", Labels: map[string]string{LabelManagedBy: ManagedByValue}, Annotations: a},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
	}
	t.Run("state lease", func(t *testing.T) {
		r, ok, err := ParseLease(ours(map[string]string{AnnotationLastModified: lm.Format(time.RFC3339Nano)}))
		if err != nil || !ok {
			t.Fatalf("ParseLease: ok=%v err=%v", ok, err)
		}
		if !r.LastModified.Equal(lm) || r.Holder != "pr-12" || r.Key != "quota/team-a/compute" {
			t.Errorf("record = %+v", r)
		}
	})
	t.Run("someone else's lease", func(t *testing.T) {
		_, ok, err := ParseLease(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kustos"}})
		if ok || err != nil {
			t.Errorf("leader-election lease taken as state: ok=%v err=%v", ok, err)
		}
	})
	t.Run("hand-edited timestamp is a precise error", func(t *testing.T) {
		_, _, err := ParseLease(ours(map[string]string{AnnotationLastModified: "yesterday"}))
		if err == nil || !strings.Contains(err.Error(), `resizer.io/last-modified="yesterday"`) {
			t.Errorf("err = %v, want one naming the annotation and value", err)
		}
	})
}

// TestNewIdentity: the pod name (kustos without one) and a suffix that differs between two
// processes of the same pod.
func TestNewIdentity(t *testing.T) {
	a, b := NewIdentity("kustos-7d9f-abcde"), NewIdentity("kustos-7d9f-abcde")
	if !strings.HasPrefix(a, "kustos-7d9f-abcde-") || len(a) != len("kustos-7d9f-abcde-")+6 || a == b {
		t.Errorf("identities %q and %q, want the pod name and two different 6-character suffixes", a, b)
	}
	if id := NewIdentity(""); !strings.HasPrefix(id, "kustos-") {
		t.Errorf("without a pod name: %q, want kustos-…", id)
	}
}
