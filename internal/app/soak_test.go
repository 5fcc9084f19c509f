package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/internal/actuate/observe"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

// soakReplica is the identity of the soak's one replica.
const soakReplica = "soak-replica"

// The soak: many quotas, each recommended, merged and recommended again round after round over
// simulated time, through the real quota Reconciler, change pipeline and observe Recorder, with
// the API server and GitHub replaced by the in-memory fakes of soak_fakes_test.go. What Kustos
// remembers must not grow with time: the Recorder's written Event names and the Reconciler's
// reported entries are bounded LRUs, and a quota's kustos_recommended_value series is deleted
// when its PR is merged. The heap after the last round must stay within 1.1× of the heap after
// the first (which already holds every quota, Lease and PR once); see BenchmarkSoak for RSS.

const (
	soakQuota    = "compute"
	soakResource = corev1.ResourceCPU
	soakCooldown = 60 * time.Minute
	// soakMaxRatio is the most heap and RSS may grow from the base round to the last.
	soakMaxRatio = 1.1
)

// soakWorld is Kustos in process with its fakes and a clock the soak moves.
type soakWorld struct {
	cluster *soakCluster
	store   *pipelinetest.MemStore
	forge   *soakForge
	events  *soakEvents
	rec     *quota.Reconciler
	reqs    []reconcile.Request
	start   time.Time
	now     time.Time
}

func newSoakWorld(n int) *soakWorld {
	w := &soakWorld{cluster: newSoakCluster(), store: pipelinetest.NewMemStore(), forge: newSoakForge(),
		events: newSoakEvents(), start: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	w.now = w.start
	for i := range n {
		ns := fmt.Sprintf("soak-%05d", i)
		w.cluster.add(ns, soakQuota, soakResource, resource.MustParse("10"))
		w.reqs = append(w.reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: soakQuota}})
	}
	recorder := &observe.Recorder{Client: w.events, Component: "kustos", Instance: "soak", Log: logr.Discard()}
	pl := &pipeline.Pipeline{
		Detector:  quota.DetectorName,
		Vocab:     quota.Vocabulary(),
		Store:     w.store.As(soakReplica),
		Actuator:  w.forge,
		Proposals: w.forge,
		Reporter:  recorder,
		Identity:  soakReplica,
		Log:       logr.Discard(),
	}
	w.rec = &quota.Reconciler{
		Cache:           w.cluster,
		Live:            w.cluster,
		Pipeline:        pl,
		Reporter:        recorder,
		Defaults:        validOptions().Defaults, // 80% threshold, +20%
		DefaultCooldown: soakCooldown,
		AutoMerge:       true,
		Now:             func() time.Time { return w.now },
		Log:             logr.Discard(),
	}
	// Series left by other tests of the package would count against this soak.
	metrics.RecommendedValue.Reset()
	return w
}

// soakRound is what one round did.
type soakRound struct {
	opened, merged               int // PRs
	proposedEvents, mergedEvents int // Events the Recorder created
	// seriesOpen is the number of kustos_recommended_value series once every quota has an open
	// recommendation; series once every PR is merged.
	seriesOpen, series int
	// locked is the number of Leases still naming a PR or a pending decision after the round.
	locked int
	// recommend and merge are the wall times of the two passes over every quota.
	recommend, merge time.Duration
}

// round recommends every quota (a PR opens), then a minute later looks at each again (its PR
// is merged) and syncs the merged value into the quota's status, with usage grown to 90% of it
// so the next round recommends again. Rounds are the cooldown and a few minutes apart.
//
// Every quota is recommended before any is merged, as in a cluster where many PRs wait for
// review at once: at the peak each quota has an open PR, a locked Lease and a series. Merging
// each quota right after recommending it would never hold more than one series at a time.
func (w *soakWorld) round(ctx context.Context, i int) (soakRound, error) {
	var st soakRound
	opened0, merged0 := w.forge.counts()
	proposed0, mergedEv0 := w.events.count(quota.ReasonQuotaResizeProposed), w.events.count(quota.ReasonQuotaResizeMerged)

	w.now = w.start.Add(time.Duration(i) * (soakCooldown + 5*time.Minute))
	began := time.Now()
	for _, req := range w.reqs {
		if _, err := w.rec.Reconcile(ctx, req); err != nil {
			return st, fmt.Errorf("round %d: recommending %s: %w", i+1, req.NamespacedName, err)
		}
	}
	st.recommend = time.Since(began)
	st.seriesOpen = countSeries(metrics.RecommendedValue)

	w.now = w.now.Add(time.Minute)
	began = time.Now()
	for _, req := range w.reqs {
		if _, err := w.rec.Reconcile(ctx, req); err != nil {
			return st, fmt.Errorf("round %d: merging %s: %w", i+1, req.NamespacedName, err)
		}
		if err := w.sync(req.NamespacedName); err != nil {
			return st, fmt.Errorf("round %d: %w", i+1, err)
		}
	}
	st.merge = time.Since(began)
	st.series = countSeries(metrics.RecommendedValue)

	opened, merged := w.forge.counts()
	st.opened, st.merged = opened-opened0, merged-merged0
	st.proposedEvents = w.events.count(quota.ReasonQuotaResizeProposed) - proposed0
	st.mergedEvents = w.events.count(quota.ReasonQuotaResizeMerged) - mergedEv0
	st.locked = w.store.Count(func(r state.Record) bool { return r.Holder != "" || r.Pending != "" })
	return st, nil
}

// sync is the GitOps tool and the quota controller after a merge: the merged value becomes
// status.hard.
func (w *soakWorld) sync(nn types.NamespacedName) error {
	fields, ok := w.forge.mergedFields(lifecycle.NewKey(quota.DetectorName, nn.Namespace, nn.Name))
	if !ok {
		return fmt.Errorf("%s: no merged PR", nn)
	}
	for _, f := range fields {
		if len(f.Path) != 3 || f.Path[0] != "spec" || f.Path[1] != "hard" {
			return fmt.Errorf("%s: PR edits %v, not spec.hard", nn, f.Path)
		}
		q, err := resource.ParseQuantity(f.To)
		if err != nil {
			return fmt.Errorf("%s: PR sets %s to %q: %w", nn, f.Path[2], f.To, err)
		}
		if err := w.cluster.setHard(nn, corev1.ResourceName(f.Path[2]), q); err != nil {
			return err
		}
	}
	return nil
}

// check says what is wrong with a round: every quota got exactly one PR, opened and merged,
// with one Event each; no series is left for a merged recommendation and none ever exceeds one
// per quota; no Lease stays locked.
func (st soakRound) check(n int) error {
	var bad []string
	if st.opened != n || st.merged != n {
		bad = append(bad, fmt.Sprintf("%d PRs opened and %d merged, want %d each", st.opened, st.merged, n))
	}
	if st.proposedEvents != n || st.mergedEvents != n {
		bad = append(bad, fmt.Sprintf("%d %s and %d %s Events, want %d each", st.proposedEvents, quota.ReasonQuotaResizeProposed,
			st.mergedEvents, quota.ReasonQuotaResizeMerged, n))
	}
	if st.seriesOpen > n {
		bad = append(bad, fmt.Sprintf("series grew: %d kustos_recommended_value series for %d quotas", st.seriesOpen, n))
	}
	if st.series != 0 {
		bad = append(bad, fmt.Sprintf("series not deleted on merge: %d kustos_recommended_value series left with no open recommendation", st.series))
	}
	if st.locked != 0 {
		bad = append(bad, fmt.Sprintf("%d Leases still locked", st.locked))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// soakMem is the memory in use after a round.
type soakMem struct {
	heap, rss uint64 // bytes
}

func (m soakMem) String() string {
	return fmt.Sprintf("heap %.1f MiB, RSS %.1f MiB", mib(m.heap), mib(m.rss))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// measureMem collects garbage twice (the second sweeps what finalizers of the first freed) and
// reads the heap in use and the process's resident set. RSS bounds the memory from above; the
// scavenger returns free pages to the OS at its own pace, which made RSS wander by ±10% from
// round to round with a flat heap, so every free page is returned first (FreeOSMemory): what is
// left resident is what the process holds.
func measureMem() (soakMem, error) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := readRSS()
	return soakMem{heap: ms.HeapAlloc, rss: rss}, err
}

// readRSS reads VmRSS from /proc/self/status.
func readRSS() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// countSeries counts the series a collector exports now (what testutil.CollectAndCount counts;
// testutil's module is not a requirement of this one).
func countSeries(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}

// soakReport is a whole soak.
type soakReport struct {
	rounds []soakRound
	mem    []soakMem // after each round
	wall   time.Duration
	// hardBefore and hardAfter are the first quota's status.hard before and after the soak.
	hardBefore, hardAfter resource.Quantity
}

// ratio is the heap or RSS after the last round over that after round base (1-based).
func (r soakReport) ratio(base int, of func(soakMem) uint64) float64 {
	return float64(of(r.mem[len(r.mem)-1])) / float64(of(r.mem[base-1]))
}

func heapOf(m soakMem) uint64 { return m.heap }
func rssOf(m soakMem) uint64  { return m.rss }

// runSoak runs rounds rounds over n quotas and fails tb at the first round that is wrong.
func runSoak(tb testing.TB, n, rounds int) soakReport {
	tb.Helper()
	ctx := context.Background()
	began := time.Now()
	w := newSoakWorld(n)
	rep := soakReport{hardBefore: w.cluster.hard(w.reqs[0].NamespacedName, soakResource)}
	// A benchmark's log is cut to its first lines unless -v: keep room for its summary.
	_, bench := tb.(*testing.B)
	logRounds := !bench || testing.Verbose()
	for i := range rounds {
		st, err := w.round(ctx, i)
		if err != nil {
			tb.Fatal(err)
		}
		if err := st.check(n); err != nil {
			tb.Fatalf("round %d of %d quotas: %v", i+1, n, err)
		}
		m, err := measureMem()
		if err != nil {
			tb.Fatalf("reading memory: %v", err)
		}
		rep.rounds, rep.mem = append(rep.rounds, st), append(rep.mem, m)
		if logRounds {
			tb.Logf("round %2d: %s; %d PRs opened and merged; %d series open, %d after merge; recommend %s, merge %s",
				i+1, m, st.opened, st.seriesOpen, st.series, st.recommend.Round(time.Millisecond), st.merge.Round(time.Millisecond))
		}
	}
	rep.hardAfter = w.cluster.hard(w.reqs[0].NamespacedName, soakResource)
	rep.wall = time.Since(began)
	runtime.KeepAlive(w) // the world is what round 1 and the last round measure
	return rep
}

// TestSoakSmall is the soak at a size go test runs every time: every round opens and merges
// exactly one PR per quota, a quota's series goes away when its PR is merged, and no Lease stays
// locked. The heap at this size is too small for a ratio to mean anything; BenchmarkSoak checks it.
func TestSoakSmall(t *testing.T) {
	const n, rounds = 200, 5
	rep := runSoak(t, n, rounds)
	if rep.hardAfter.Cmp(rep.hardBefore) <= 0 {
		t.Errorf("status.hard did not grow over %d merged rounds: %s → %s", rounds, rep.hardBefore.String(), rep.hardAfter.String())
	}
	t.Logf("%d quotas × %d rounds in %s; hard %s → %s; heap ratio %.3f (not checked at this size)",
		n, rounds, rep.wall.Round(time.Millisecond), rep.hardBefore.String(), rep.hardAfter.String(), rep.ratio(1, heapOf))
}

// BenchmarkSoak is the soak of defect 5: 10,000 quotas, each recommended, merged and
// recommended again 20 times over simulated time. It fails when the heap after the last round
// is more than 1.1× that after the first, when the RSS after the last round is more than 1.1×
// that after the second, or when kustos_recommended_value keeps series that no open
// recommendation needs.
//
//	go test -run '^$' -bench BenchmarkSoak -benchtime 1x -benchmem ./internal/app/
//
// Why RSS from the second round: round 1 allocates every per-quota object (Lease record, PR,
// Event name) once, densely; from round 2 on each round replaces them among the round's
// garbage, and Go's collector does not move objects, so the spans they sit in stay partly used.
// With HeapAlloc identical to the kilobyte, RSS rises by 6–10% in round 2 and is flat after
// that. rss-ratio (over round 1) is reported too.
//
// -short soaks 1,000 quotas. They write 2,000 Events a round, so the Recorder's bounded memory
// of Event names (16,384) fills only in round 9: until then the heap grows by design, and both
// ratios are taken from round 10 to round 20 instead.
func BenchmarkSoak(b *testing.B) {
	n, rounds, heapBase, rssBase := 10000, 20, 1, 2
	if testing.Short() {
		n, heapBase, rssBase = 1000, 10, 10
	}
	var rep soakReport
	for b.Loop() {
		rep = runSoak(b, n, rounds)
	}
	first, last := rep.mem[0], rep.mem[len(rep.mem)-1]
	heapRatio, rssRatio := rep.ratio(heapBase, heapOf), rep.ratio(rssBase, rssOf)
	b.ReportMetric(mib(rep.mem[heapBase-1].heap), fmt.Sprintf("heap-round%d-MiB", heapBase))
	b.ReportMetric(mib(last.heap), fmt.Sprintf("heap-round%d-MiB", rounds))
	b.ReportMetric(heapRatio, "heap-ratio")
	b.ReportMetric(mib(first.rss), "rss-round1-MiB")
	if rssBase != 1 {
		b.ReportMetric(mib(rep.mem[rssBase-1].rss), fmt.Sprintf("rss-round%d-MiB", rssBase))
	}
	b.ReportMetric(mib(last.rss), fmt.Sprintf("rss-round%d-MiB", rounds))
	b.ReportMetric(rep.ratio(1, rssOf), "rss-ratio")
	b.ReportMetric(rssRatio, fmt.Sprintf("rss-ratio-from-round%d", rssBase))
	b.ReportMetric(float64(rep.rounds[len(rep.rounds)-1].series), fmt.Sprintf("series-round%d", rounds))
	b.ReportMetric(float64(rep.rounds[len(rep.rounds)-1].seriesOpen), fmt.Sprintf("series-open-round%d", rounds))
	b.ReportMetric(rep.wall.Seconds(), "soak-s")
	b.Logf("%d quotas × %d rounds (%d reconciles) in %s; hard %s → %s; round 1: %s; round %d: %s",
		n, rounds, 2*n*rounds, rep.wall.Round(time.Millisecond), rep.hardBefore.String(), rep.hardAfter.String(),
		first, rounds, last)

	var grew []string
	if heapRatio > soakMaxRatio {
		grew = append(grew, fmt.Sprintf("heap grew %.3f× from round %d (%.1f → %.1f MiB)",
			heapRatio, heapBase, mib(rep.mem[heapBase-1].heap), mib(last.heap)))
	}
	if rssRatio > soakMaxRatio {
		grew = append(grew, fmt.Sprintf("RSS grew %.3f× from round %d (%.1f → %.1f MiB)",
			rssRatio, rssBase, mib(rep.mem[rssBase-1].rss), mib(last.rss)))
	}
	for i, st := range rep.rounds {
		if st.seriesOpen > n || st.series > 0 {
			grew = append(grew, fmt.Sprintf("series grew: round %d left %d kustos_recommended_value series (%d with every PR open) for %d quotas",
				i+1, st.series, st.seriesOpen, n))
			break
		}
	}
	if len(grew) > 0 {
		b.Fatalf("memory is not flat over %d rounds (limit %.1f×): %s", rounds, soakMaxRatio, strings.Join(grew, "; "))
	}
}
