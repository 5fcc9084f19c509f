package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/promrun"
	"github.com/kustos-dev/kustos/bench/internal/workers"
)

// churnKeep is how many churn tenants live at a time: each tick creates one and deletes the one
// created churnKeep ticks before.
const churnKeep = 6

// maxGrowth is how much Kustos's heap after GC may grow from the first sixth of the churn to
// its end (issue 19: 10% from minute 5 to minute 30).
const maxGrowth = 0.10

// heapSample is Kustos's heap after GC at an offset into the churn.
type heapSample struct {
	at   time.Duration
	live float64 // bytes
}

type churnResult struct {
	ticks, created, deleted int
	heap                    []heapSample
	end                     kustosproc.Sample
}

// growth compares the heap after GC early in the churn with its end: the median of the
// readings from a sixth of the churn to a third (minutes 5 to 10 of 30) against the median of
// the readings in its last sixth (the end's: at its offset), the relative growth and whether
// there was something to compare. One reading is the heap marked live at the last collection,
// with whatever a check cycle had in flight then: at 10,000 tenants readings 20% apart follow
// each other with no trend (docs/performance.md), so single readings would judge the noise.
func growth(samples []heapSample, churn time.Duration) (ref, end heapSample, g float64, ok bool) {
	refFrom, refTo, endFrom := churn/6, churn/3, churn-churn/6
	var early, late []float64
	for _, s := range samples {
		switch {
		case s.at >= refFrom && s.at < refTo:
			early = append(early, s.live)
		case s.at >= endFrom:
			late = append(late, s.live)
		}
	}
	if len(early) == 0 || len(late) == 0 {
		return ref, end, 0, false
	}
	ref = heapSample{at: refFrom, live: median(early)}
	end = heapSample{at: samples[len(samples)-1].at, live: median(late)}
	if ref.live <= 0 {
		return ref, end, 0, false
	}
	return ref, end, end.live/ref.live - 1, true
}

// median is the middle of xs (the mean of the two middle ones for an even count); xs is sorted
// in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// heapEvery is how often the heap is read during churn: -heap-every, but at least six times.
func heapEvery(o options) time.Duration { return min(o.heapEvery, o.churn/6) }

// tenant is one churn namespace: a quota, five Deployments (one expiry target, one inactivity
// target, three ordinary) and a Cleaner over one of the ordinary ones.
type tenant struct {
	ns     string
	deps   []*appsv1.Deployment
	target promrun.Active
}

func churnTenant(k int) tenant {
	ns := fmt.Sprintf("churn-%05d", k)
	t := tenant{ns: ns}
	s := shape{namespaces: 1}
	for i := 0; i < 5; i++ {
		// Indexes 1 and 2 are an expiry and an inactivity target (roleOf).
		d := s.deployment(i, time.Now().Add(30*24*time.Hour))
		d.Namespace = ns
		t.deps = append(t.deps, d)
	}
	src := promrun.SourceNginx
	if k%2 == 1 {
		src = promrun.SourceBastion
	}
	t.target = promrun.Active{Target: promrun.Target{Namespace: ns, Name: t.deps[2].Name}, Source: src}
	return t
}

func (t tenant) cleaner() client.Object {
	s := shape{namespaces: 1, ordinary: []int{0}}
	cl := s.cleaner(0)
	cl.Namespace = t.ns
	return cl
}

// churn creates and deletes tenants every -churn-tick for -churn, switches the activity of a
// standing inactivity target each tick, and reads Kustos's heap after GC every heapEvery.
func churn(ctx context.Context, o options, s shape, cs kubernetes.Interface, c client.Client, exp *promrun.Exporter,
	pl *poller, k *kustosproc.Process, logf func(string, ...any)) (churnResult, error) {
	var r churnResult
	every := heapEvery(o)
	logf("churn for %s: a tenant (namespace, quota, 5 Deployments, a Cleaner) created and one deleted every %s, %d alive; heap read every %s",
		o.churn, o.churnTick, churnKeep, every)
	start := time.Now()
	tick := time.NewTicker(o.churnTick)
	defer tick.Stop()
	heapTick := time.NewTicker(every)
	defer heapTick.Stop()
	_, standing := s.activity()
	var alive []tenant
	for time.Since(start) < o.churn {
		if err := k.Running(); err != nil {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-heapTick.C:
			h := pl.last().heap
			if !h.ok {
				return r, fmt.Errorf("no %s in Kustos's metrics", metricHeapLive)
			}
			r.heap = append(r.heap, heapSample{at: time.Since(start), live: h.live})
			logf("  churn %s: heap after GC %s; %d tenants created, %d deleted", time.Since(start).Round(time.Second), h, r.created, r.deleted)
		case <-tick.C:
			t := churnTenant(r.ticks)
			r.ticks++
			if err := createTenant(ctx, cs, c, t, o.Workers); err != nil {
				return r, err
			}
			exp.Add(t.target.Target)
			exp.SetActive(t.target, true)
			alive = append(alive, t)
			r.created++
			if len(alive) > churnKeep {
				old := alive[0]
				alive = alive[1:]
				exp.Remove(old.target.Target)
				if err := deleteTenant(ctx, cs, c, old); err != nil {
					return r, err
				}
				r.deleted++
			}
			if len(standing) > 0 {
				a := standing[r.ticks%len(standing)]
				exp.SetActive(a, r.ticks%2 == 0) // on and off again: activity changing
			}
		}
	}
	h := pl.last().heap
	if h.ok {
		r.heap = append(r.heap, heapSample{at: time.Since(start), live: h.live})
	}
	var err error
	r.end, err = k.Sample()
	return r, err
}

func createTenant(ctx context.Context, cs kubernetes.Interface, c client.Client, t tenant, parallel int) error {
	if _, err := objects.CreateQuotas(ctx, cs, []string{t.ns}, 1); err != nil {
		return err
	}
	if err := objects.CreateDeployments(ctx, cs, t.deps, parallel); err != nil {
		return err
	}
	return create(ctx, c, t.cleaner())
}

// deleteTenant deletes what is in the namespace, then the namespace; no controller-manager runs,
// so the bench finalizes the empty namespace itself, as the namespace controller would.
func deleteTenant(ctx context.Context, cs kubernetes.Interface, c client.Client, t tenant) error {
	ignore := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	var errs []error
	errs = append(errs, ignore(c.Delete(ctx, t.cleaner())))
	for _, d := range t.deps {
		errs = append(errs, ignore(cs.AppsV1().Deployments(t.ns).Delete(ctx, d.Name, metav1.DeleteOptions{})))
	}
	errs = append(errs, ignore(cs.CoreV1().ResourceQuotas(t.ns).Delete(ctx, objects.QuotaName, metav1.DeleteOptions{})))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting tenant %s: %w", t.ns, err)
	}
	if err := workers.Retry(ctx, func() error {
		return ignore(cs.CoreV1().Namespaces().Delete(ctx, t.ns, metav1.DeleteOptions{}))
	}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", t.ns, err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, t.ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", t.ns, err)
	}
	ns.Spec.Finalizers = []corev1.FinalizerName{}
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", t.ns, err)
	}
	return nil
}
