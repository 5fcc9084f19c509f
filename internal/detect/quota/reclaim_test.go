package quota

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// gauges are the series of a gauge in the registry, by the value of its one label.
func gauges(t *testing.T, name string) map[string]float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

func shrinkOf(res, current, goal, recommended string, blocked ...Gate) Shrink {
	return Shrink{Resource: corev1.ResourceName(res), Current: resource.MustParse(current),
		Goal: resource.MustParse(goal), Recommended: resource.MustParse(recommended), Blocked: blocked}
}

// TestReclaimBook: the gauges are the sums over quotas of hard − goal per resource, with the
// quotas counted, and the quotas a gate holds back per gate; replacing a quota's shrinks and
// forgetting a quota take back exactly what it added.
func TestReclaimBook(t *testing.T) {
	type want struct {
		reclaimable map[string]float64 // resource → value; absent: no series
		quotas      map[string]float64
		blocked     map[Gate]float64
	}
	type step struct {
		name          string
		namespace, qu string
		shrinks       []Shrink // nil with forget
		forget        bool
		want          want
	}
	steps := []step{
		{name: "nothing yet: the gates at 0", want: want{
			blocked: map[Gate]float64{GateWindow: 0, GateCooldown: 0, GateRecentGrow: 0, GateFailedCreate: 0}}},
		{name: "a quota held back by the window", namespace: "a", qu: "compute", shrinks: []Shrink{
			shrinkOf("requests.cpu", "10", "1250m", "7500m", GateWindow),
			shrinkOf("requests.memory", "8Gi", "2Gi", "6Gi", GateWindow)},
			want: want{reclaimable: map[string]float64{"requests.cpu": 8.75, "requests.memory": 6 << 30},
				quotas: map[string]float64{"requests.cpu": 1, "requests.memory": 1}, blocked: map[Gate]float64{GateWindow: 1}}},
		{name: "a second quota, proposable; the floor-held one gives nothing", namespace: "b", qu: "compute", shrinks: []Shrink{
			shrinkOf("requests.cpu", "4", "2", "3"),
			shrinkOf("count/pods", "10", "10", "10", GateFloor)},
			want: want{reclaimable: map[string]float64{"requests.cpu": 10.75, "requests.memory": 6 << 30},
				quotas: map[string]float64{"requests.cpu": 2, "requests.memory": 1}, blocked: map[Gate]float64{GateWindow: 1}}},
		{name: "the first quota's window completes: its gate goes", namespace: "a", qu: "compute", shrinks: []Shrink{
			shrinkOf("requests.cpu", "10", "1250m", "7500m", GateCooldown)},
			want: want{reclaimable: map[string]float64{"requests.cpu": 10.75},
				quotas: map[string]float64{"requests.cpu": 2}, blocked: map[Gate]float64{GateWindow: 0, GateCooldown: 1}}},
		{name: "the same again changes nothing", namespace: "a", qu: "compute", shrinks: []Shrink{
			shrinkOf("requests.cpu", "10", "1250m", "7500m", GateCooldown)},
			want: want{reclaimable: map[string]float64{"requests.cpu": 10.75},
				quotas: map[string]float64{"requests.cpu": 2}, blocked: map[Gate]float64{GateCooldown: 1}}},
		{name: "a quota deleted is forgotten", namespace: "a", qu: "compute", forget: true,
			want: want{reclaimable: map[string]float64{"requests.cpu": 2},
				quotas: map[string]float64{"requests.cpu": 1}, blocked: map[Gate]float64{GateCooldown: 0, GateWindow: 0}}},
		{name: "forgetting an unknown quota changes nothing", namespace: "x", qu: "y", forget: true,
			want: want{reclaimable: map[string]float64{"requests.cpu": 2}, quotas: map[string]float64{"requests.cpu": 1}}},
		{name: "the last quota grows: no series left", namespace: "b", qu: "compute", shrinks: nil,
			want: want{reclaimable: map[string]float64{}, quotas: map[string]float64{},
				blocked: map[Gate]float64{GateWindow: 0, GateCooldown: 0, GateRecentGrow: 0, GateFailedCreate: 0}}},
	}
	b := newReclaimBook()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			switch {
			case s.forget:
				b.forget(s.namespace, s.qu)
			case s.namespace != "":
				b.set(s.namespace, s.qu, s.shrinks)
			}
			reclaimable, quotas, blocked := gauges(t, "kustos_quota_reclaimable"), gauges(t, "kustos_quota_reclaimable_quotas"), gauges(t, "kustos_quota_shrink_blocked")
			if s.want.reclaimable != nil && !maps.Equal(reclaimable, s.want.reclaimable) {
				t.Errorf("kustos_quota_reclaimable %v, want %v", reclaimable, s.want.reclaimable)
			}
			if s.want.quotas != nil && !maps.Equal(quotas, s.want.quotas) {
				t.Errorf("kustos_quota_reclaimable_quotas %v, want %v", quotas, s.want.quotas)
			}
			for g, v := range s.want.blocked {
				if got, ok := blocked[string(g)]; !ok || got != v {
					t.Errorf("kustos_quota_shrink_blocked{gate=%q} = %v (present %v), want %v", g, got, ok, v)
				}
			}
		})
	}
}

// TestReclaimTotals: the totals recommend and status print, and their sentence.
func TestReclaimTotals(t *testing.T) {
	tot := ReclaimTotals{}
	tot.Add(Reclaims([]Shrink{shrinkOf("requests.cpu", "10", "1250m", "7500m", GateWindow, GateRecentGrow)}))
	tot.Add(Reclaims([]Shrink{shrinkOf("requests.cpu", "4", "2", "3", GateWindow), shrinkOf("count/pods", "10", "10", "10", GateFloor)}))
	tot.Add(Reclaims([]Shrink{shrinkOf("requests.memory", "8Gi", "2Gi", "6Gi")}))
	// Nothing used and no peak: the target is 0 and the whole hard value could go.
	tot.Add(Reclaims([]Shrink{shrinkOf("count/secrets", "10", "0", "8", GateWindow)}))
	for _, tc := range []struct {
		resource corev1.ResourceName
		want     string
	}{
		{"requests.cpu", "10750m reclaimable in 2 quotas; 1 blocked by recent-grow, 2 by window"},
		{"requests.memory", "6Gi reclaimable in 1 quota"},
		{"count/secrets", "10 reclaimable in 1 quota; 1 blocked by window"},
	} {
		t.Run(string(tc.resource), func(t *testing.T) {
			if got := tot[tc.resource].Summary(); got != tc.want {
				t.Errorf("Summary() = %q, want %q", got, tc.want)
			}
		})
	}
	if _, ok := tot["count/pods"]; ok {
		t.Error("a floor-held shrink is in the totals")
	}
	tot.Remove(Reclaims([]Shrink{shrinkOf("requests.memory", "8Gi", "2Gi", "6Gi")}))
	if got := tot.Resources(); len(got) != 2 || got[0] != "count/secrets" || got[1] != "requests.cpu" {
		t.Errorf("after Remove, resources %v", got)
	}
}
