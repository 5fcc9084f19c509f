package quota

import (
	"slices"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/metrics"
)

// Reclaim is what one resource of one quota could give back: its hard value less the window's
// target raised to the floor (the Goal its shrinks step towards), and the gates that hold the
// shrink back now. The step does not count: it only spreads the same amount over proposals.
type Reclaim struct {
	Resource corev1.ResourceName
	Amount   resource.Quantity
	Blocked  []Gate
}

// Reclaims are the reclaims of a quota's shrinks, by resource; a shrink the floor holds back
// entirely gives nothing back and is left out.
func Reclaims(shrinks []Shrink) []Reclaim {
	var out []Reclaim
	for _, sh := range shrinks {
		if sh.Goal.Cmp(sh.Current) >= 0 {
			continue
		}
		amount := sh.Current.DeepCopy()
		amount.Sub(sh.Goal)
		out = append(out, Reclaim{Resource: sh.Resource, Amount: amount, Blocked: slices.Clone(sh.Blocked)})
	}
	return out
}

// ReclaimTotal is one resource's reclaims summed over quotas: the amount, how many quotas add
// to it, and how many of those a gate holds back, per gate.
type ReclaimTotal struct {
	Reclaimable resource.Quantity
	Quotas      int
	Blocked     map[Gate]int
}

// ReclaimTotals are the totals per resource; a resource no quota adds to has no entry.
type ReclaimTotals map[corev1.ResourceName]*ReclaimTotal

// Add adds one quota's reclaims.
func (t ReclaimTotals) Add(rs []Reclaim) { t.apply(rs, 1) }

// Remove takes back what Add added for the same reclaims.
func (t ReclaimTotals) Remove(rs []Reclaim) { t.apply(rs, -1) }

func (t ReclaimTotals) apply(rs []Reclaim, sign int) {
	for _, r := range rs {
		tot := t[r.Resource]
		if tot == nil {
			if sign < 0 {
				continue
			}
			tot = &ReclaimTotal{Blocked: map[Gate]int{}}
			t[r.Resource] = tot
		}
		if sign > 0 {
			tot.Reclaimable.Add(r.Amount)
		} else {
			tot.Reclaimable.Sub(r.Amount)
		}
		tot.Quotas += sign
		for _, g := range r.Blocked {
			tot.Blocked[g] += sign
			if tot.Blocked[g] <= 0 {
				delete(tot.Blocked, g)
			}
		}
		if tot.Quotas <= 0 {
			delete(t, r.Resource)
		}
	}
}

// Resources are the totals' resources, sorted.
func (t ReclaimTotals) Resources() []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(t))
	for r := range t {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Summary is the totals of one resource as a sentence part, for people:
// "184 reclaimable in 61 quotas; 40 blocked by window, 2 by cooldown".
func (tot *ReclaimTotal) Summary() string {
	s := tot.Reclaimable.String() + " reclaimable in " + strconv.Itoa(tot.Quotas) + " quota"
	if tot.Quotas != 1 {
		s += "s"
	}
	gates := make([]string, 0, len(tot.Blocked))
	for g := range tot.Blocked {
		gates = append(gates, string(g))
	}
	sort.Strings(gates)
	for i, g := range gates {
		if i == 0 {
			s += "; " + strconv.Itoa(tot.Blocked[Gate(g)]) + " blocked by " + g
		} else {
			s += ", " + strconv.Itoa(tot.Blocked[Gate(g)]) + " by " + g
		}
	}
	return s
}

// blockingGates are the gates that hold a shrink back while something is left to give back;
// their series of kustos_quota_shrink_blocked exist from the start, at 0.
var blockingGates = []Gate{GateWindow, GateRecentGrow, GateCooldown, GateFailedCreate}

// reclaimBook keeps each quota's reclaims, and their totals, for the metrics: the gauges are
// per resource and per gate, never per quota, so a cluster of many quotas adds no series. An
// update costs the quota's own resources, whatever the number of quotas.
type reclaimBook struct {
	mu     sync.Mutex
	quotas map[string][]Reclaim // namespace/name
	totals ReclaimTotals
	// gates counts the quotas with a reclaim some resource of which the gate holds back.
	gates map[Gate]int
}

// newReclaimBook starts the book empty, and so the gauges: they are this process's view.
func newReclaimBook() *reclaimBook {
	metrics.QuotaReclaimable.Reset()
	metrics.QuotaReclaimableQuotas.Reset()
	metrics.QuotaShrinkBlocked.Reset()
	for _, g := range blockingGates {
		metrics.QuotaShrinkBlocked.WithLabelValues(string(g)).Set(0)
	}
	return &reclaimBook{quotas: map[string][]Reclaim{}, totals: ReclaimTotals{}, gates: map[Gate]int{}}
}

// set replaces what the quota could give back with what its latest shrinks say.
func (b *reclaimBook) set(namespace, name string, shrinks []Shrink) {
	b.replace(namespace+"/"+name, Reclaims(shrinks))
}

// forget drops the quota: deleted, out of scope, or not sized any more.
func (b *reclaimBook) forget(namespace, name string) { b.replace(namespace+"/"+name, nil) }

func (b *reclaimBook) replace(key string, rs []Reclaim) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.quotas[key]
	if sameReclaims(old, rs) {
		return
	}
	touched := map[corev1.ResourceName]bool{}
	for _, r := range old {
		touched[r.Resource] = true
	}
	for _, r := range rs {
		touched[r.Resource] = true
	}
	b.totals.Remove(old)
	b.totals.Add(rs)
	oldGates, newGates := gatesOf(old), gatesOf(rs)
	for g := range oldGates {
		b.gates[g]--
	}
	for g := range newGates {
		b.gates[g]++
	}
	if len(rs) == 0 {
		delete(b.quotas, key)
	} else {
		b.quotas[key] = rs
	}

	for r := range touched {
		if tot := b.totals[r]; tot != nil {
			metrics.QuotaReclaimable.WithLabelValues(string(r)).Set(tot.Reclaimable.AsApproximateFloat64())
			metrics.QuotaReclaimableQuotas.WithLabelValues(string(r)).Set(float64(tot.Quotas))
			continue
		}
		metrics.QuotaReclaimable.DeleteLabelValues(string(r))
		metrics.QuotaReclaimableQuotas.DeleteLabelValues(string(r))
	}
	for _, set := range []map[Gate]bool{oldGates, newGates} {
		for g := range set {
			metrics.QuotaShrinkBlocked.WithLabelValues(string(g)).Set(float64(b.gates[g]))
			if b.gates[g] <= 0 {
				delete(b.gates, g)
			}
		}
	}
}

func gatesOf(rs []Reclaim) map[Gate]bool {
	out := map[Gate]bool{}
	for _, r := range rs {
		for _, g := range r.Blocked {
			out[g] = true
		}
	}
	return out
}

func sameReclaims(a, b []Reclaim) bool {
	return slices.EqualFunc(a, b, func(x, y Reclaim) bool {
		return x.Resource == y.Resource && x.Amount.Cmp(y.Amount) == 0 && slices.Equal(x.Blocked, y.Blocked)
	})
}
