package app

import (
	"math/big"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/objcache"
)

func validOptions() Options {
	return Options{
		Mode:                    ModeObserve,
		Defaults:                quota.Settings{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)},
		DefaultCooldown:         time.Hour,
		StateNamespace:          "kustos-system",
		LeaseSweepInterval:      12 * time.Hour,
		MaxConcurrentReconciles: 4,
	}
}

// validateCase changes valid options and names the flag Validate must complain about ("" for
// none).
type validateCase struct {
	name    string
	mutate  func(*Options)
	wantErr string
}

// checkValidate runs Validate on base() changed by each case.
func checkValidate(t *testing.T, base func() Options, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	checkValidate(t, validOptions, []validateCase{
		{"defaults are valid", func(*Options) {}, ""},
		{"unknown mode", func(o *Options) { o.Mode = "patch" }, `--mode="patch": want "observe", "pr" or "direct"`},
		{"pr mode needs a repository", func(o *Options) { o.Mode = "pr" }, `--mode="pr": --git-repo`},
		{"state namespace required", func(o *Options) { o.StateNamespace = "" }, "--state-namespace"},
		{"negative cooldown", func(o *Options) { o.DefaultCooldown = -time.Second }, "--cooldown"},
		{"zero sweep interval", func(o *Options) { o.LeaseSweepInterval = 0 }, "--lease-sweep-interval"},
		{"no workers", func(o *Options) { o.MaxConcurrentReconciles = 0 }, "--max-concurrent-reconciles"},
		{"trusted proxies", func(o *Options) { o.Expiry.Extension.TrustedProxies = []string{"10.0.0.0/8", "fd00::/8", "192.0.2.7"} }, ""},
		{"a trusted proxy that is no CIDR", func(o *Options) { o.Expiry.Extension.TrustedProxies = []string{"10.0.0.0/8", "ingress-nginx"} }, `--trusted-proxies: "ingress-nginx"`},
	})
}

func TestTrimObjectDropsWhatNobodyReads(t *testing.T) {
	bulky := map[string]string{corev1.LastAppliedConfigAnnotation: strings.Repeat("x", 4096), "team": "a"}
	managed := []metav1.ManagedFieldsEntry{{Manager: "argocd"}}

	t.Run("ResourceQuota keeps identity and status", func(t *testing.T) {
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a", ResourceVersion: "9", ManagedFields: managed, Annotations: bulky, Labels: bulky},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}},
			Status:     corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}, Used: corev1.ResourceList{"pods": resource.MustParse("3")}},
		}
		out, err := trimObject(q, []string{quota.AnnotationPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		packed, ok := out.(*objcache.PackedQuota)
		if !ok {
			t.Fatalf("the cache holds a %T, not a packed quota", out)
		}
		got := packed.DeepCopyObject().(*corev1.ResourceQuota) //nolint:forcetypeassert // a PackedQuota unpacks to a quota
		if got.Name != "compute" || got.Namespace != "team-a" || got.ResourceVersion != "9" || len(got.Status.Used) != 1 || len(got.Status.Hard) != 1 {
			t.Errorf("trimmed quota lost what the detector reads: %+v", got)
		}
		if got.ManagedFields != nil || got.Annotations != nil || got.Labels != nil || got.Spec.Hard != nil {
			t.Errorf("trimmed quota kept what nobody reads: %+v", got)
		}
	})

	t.Run("Namespace metadata keeps only resizer.io annotations", func(t *testing.T) {
		ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: "team-a", ManagedFields: managed, Labels: bulky,
			Annotations: map[string]string{"resizer.io/enabled": "false", corev1.LastAppliedConfigAnnotation: "{}", "owner": "x"},
		}}
		out, err := trimObject(ns, []string{quota.AnnotationPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*metav1.PartialObjectMetadata)
		if got.Name != "team-a" || len(got.Annotations) != 1 || got.Annotations["resizer.io/enabled"] != "false" || got.Labels != nil || got.ManagedFields != nil {
			t.Errorf("trimmed namespace: %+v", got)
		}
	})

	t.Run("metadata keeps the labels a detector names", func(t *testing.T) {
		d := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: "web", ManagedFields: managed, Labels: map[string]string{"kustos.io/expiration-ignore": "true", "app": "web"},
			Annotations: map[string]string{"kustos.io/ttl": "1d", "resizer.io/enabled": "false", "owner": "x"},
		}}
		out, err := trimObject(d, []string{"kustos.io/"}, []string{"kustos.io/expiration-ignore"})
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*metav1.PartialObjectMetadata)
		if len(got.Labels) != 1 || got.Labels["kustos.io/expiration-ignore"] != "true" || len(got.Annotations) != 1 || got.Annotations["kustos.io/ttl"] != "1d" {
			t.Errorf("trimmed metadata: labels %v, annotations %v", got.Labels, got.Annotations)
		}
	})

	t.Run("state Leases are packed, without managed fields and last-applied", func(t *testing.T) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "state-a-b", ManagedFields: managed,
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "resizer.io/last-modified": "2026-11-21T12:00:00Z"}}}
		out, err := trimObject(l, []string{quota.AnnotationPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		packed, ok := out.(*objcache.PackedLease)
		if !ok {
			t.Fatalf("the cache holds a %T, not a packed Lease", out)
		}
		got := packed.DeepCopyObject().(*coordinationv1.Lease) //nolint:forcetypeassert // a PackedLease unpacks to a Lease
		if got.Name != "state-a-b" || got.ManagedFields != nil || len(got.Annotations) != 1 || got.Annotations["resizer.io/last-modified"] == "" {
			t.Errorf("trimmed lease: %+v", got)
		}
	})

	t.Run("other objects lose managed fields and last-applied", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managed,
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "a"}}}
		out, err := trimObject(cm, []string{quota.AnnotationPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.ConfigMap) //nolint:forcetypeassert // returned as it came
		if got.ManagedFields != nil || len(got.Annotations) != 1 || got.Annotations["team"] != "a" {
			t.Errorf("trimmed object: %+v", got)
		}
	})
}

func TestTrimEventKeepsWhatTheDetectorReads(t *testing.T) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "7", Annotations: map[string]string{"a": "b"}},
		InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Name: "web-1", Namespace: "ns", UID: "u", FieldPath: "spec"},
		Reason:         "FailedCreate", Type: "Warning", Message: "exceeded quota: compute, …",
		FirstTimestamp: now, LastTimestamp: now, Count: 3,
		Source: corev1.EventSource{Component: "replicaset-controller", Host: "h"},
	}
	out, err := trimEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Event)
	if got.Message != ev.Message || got.Reason != ev.Reason || got.Type != ev.Type || got.InvolvedObject.Kind != "ReplicaSet" ||
		got.InvolvedObject.Name != "web-1" || !got.LastTimestamp.Equal(&ev.LastTimestamp) || got.ResourceVersion != "7" {
		t.Errorf("trimmed event lost a field the detector reads: %+v", got)
	}
	if got.Annotations != nil || got.Source.Component != "" || got.InvolvedObject.UID != "" {
		t.Errorf("trimmed event kept fields nobody reads: %+v", got)
	}
}
