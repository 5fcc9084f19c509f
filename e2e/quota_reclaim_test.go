package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/state"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

// registryGauge is the value of the gauge name's series whose label is value, from the
// registry /metrics serves; ok is false when there is no such series.
func registryGauge(t *testing.T, name, label, value string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestReclaimableFromLeaseWindow: a quota of 10Gi of requests.ephemeral-storage using 1Gi
// could give back 10Gi − 1280Mi (1Gi × 1.25, in Mi) = 8960Mi, which kustos_quota_reclaimable
// says in bytes from the first look on. While the window the state Lease keeps is incomplete
// (days one and two) the shrink counts as held back by window; on the third day the window is
// complete and nothing holds it back. `kustos status` prints the same total from the Lease.
func TestReclaimableFromLeaseWindow(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	ns := newNamespace(t, "reclaim-lease", map[string]string{quota.AnnotationWindow: "1d"})
	const res = corev1.ResourceRequestsEphemeralStorage
	newQuota(t, ns, "storage", rl(string(res), "10Gi"))
	newPod(t, ns, "p1", rl("ephemeral-storage", "1Gi"))
	waitUsed(t, ns, "storage", res, "1Gi")
	const want = 8960 << 20

	peaks := func() string {
		var l coordinationv1.Lease
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-storage"}, &l); err != nil {
			return ""
		}
		return l.Annotations[state.BagPrefix+"peak.requests.ephemeral-storage"]
	}
	for day := 0; day < 3; day++ {
		offset := time.Duration(day) * 24 * time.Hour
		k := startKustos(t, func(o *app.Options) {
			o.StateNamespace = stateNS
			o.Now = func() time.Time { return time.Now().Add(offset) }
			// Only this test's quota: the gauges are the sums over what this Kustos serves.
			o.NamespaceSelector = corev1.LabelMetadataName + "=" + ns
		})
		eventually(t, fmt.Sprintf("the Lease holds the peak of day %d", day), func() bool { return strings.Count(peaks(), ",") == day })
		wantWindow := 1.0
		if day == 2 {
			wantWindow = 0
		}
		eventually(t, "the reclaim gauges", func() bool {
			v, ok := registryGauge(t, "kustos_quota_reclaimable", "resource", string(res))
			n, _ := registryGauge(t, "kustos_quota_reclaimable_quotas", "resource", string(res))
			w, _ := registryGauge(t, "kustos_quota_shrink_blocked", "gate", string(quota.GateWindow))
			return ok && v == want && n == 1 && w == wantWindow
		})
		if v, ok := registryGauge(t, "kustos_quota_shrink_blocked", "gate", string(quota.GateCooldown)); !ok || v != 0 {
			t.Errorf("kustos_quota_shrink_blocked{gate=cooldown} = %v (present %v), want 0", v, ok)
		}
		if day == 2 {
			totals, err := statusreport.GatherReclaim(context.Background(), k8s, stateNS, nil, time.Now().Add(offset))
			if err != nil {
				t.Fatal(err)
			}
			tot := totals[res]
			// The shrink just reported is on record in the Lease: from now on its cooldown holds
			// the next one back, as the controller's next look says too.
			if tot == nil || tot.Reclaimable.Value() != want || tot.Quotas != 1 || tot.Blocked[quota.GateWindow] != 0 {
				t.Errorf("kustos status totals of %s: %+v, want 8960Mi in one quota, not blocked by window", res, tot)
			}
		}
		k.stop()
	}
}

// TestStatusReclaimFromPrometheus: `kustos status --prometheus-url` sizes the quotas from the
// window Prometheus holds, as the controller does with it. A quota of 10Gi of requests.storage
// (one 1Gi claim) whose 15 days of history in Prometheus peak at 2Gi has a target of 2Gi × 1.25
// = 2560Mi and gives back 10Gi − 2560Mi = 7680Mi, held back by no gate; without Prometheus, with
// no Lease keeping a window, the same quota counts as held back by window.
func TestStatusReclaimFromPrometheus(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	ns := newNamespace(t, "reclaim-prom", nil)
	const res = corev1.ResourceRequestsStorage
	end := historyEnd()
	h := &promtest.History{}
	peakAt := utcMidnight(end.Add(-peakDaysAgo * 24 * time.Hour)).Add(12 * time.Hour)
	for at := end.Add(-15 * 24 * time.Hour); !at.After(end); at = at.Add(historyStep) {
		used := float64(1 << 30)
		if !at.Before(peakAt) && !at.After(peakAt.Add(30*time.Minute)) {
			used = 2 << 30
		}
		h.Add("kube_resourcequota", "gauge", map[string]string{"namespace": ns, "resourcequota": "storage", "resource": string(res), "type": "used"},
			promtest.Sample{At: at, Value: used})
	}
	prom := promtest.Start(t, promtest.Options{History: h})
	newQuota(t, ns, "storage", rl(string(res), "10Gi"))
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: rl("storage", "1Gi")},
		},
	}
	if err := k8s.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, ns, "storage", res, "1Gi")

	for _, tc := range []struct {
		name        string
		url         string
		reclaimable int64
		window      int
	}{
		{"prometheus", prom.URL, 7680 << 20, 0},
		{"no window", "", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := cli.WindowSource{Access: activity.Access{URL: tc.url}}
			history, err := src.History()
			if err != nil {
				t.Fatal(err)
			}
			totals, err := statusreport.GatherReclaim(context.Background(), k8s, stateNS, history, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			tot := totals[res]
			if tot == nil || tot.Quotas != 1 || tot.Blocked[quota.GateWindow] != tc.window ||
				(tc.reclaimable >= 0 && tot.Reclaimable.Value() != tc.reclaimable) {
				t.Errorf("totals of %s: %+v, want %d bytes in one quota, %d blocked by window", res, tot, tc.reclaimable, tc.window)
			}
		})
	}
}
