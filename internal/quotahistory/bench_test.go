package quotahistory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

func source(b *testing.B, u string) *quotahistory.Prometheus {
	b.Helper()
	p, err := quotahistory.NewPrometheus(activity.Access{URL: u}, quotahistory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkWindow: 10,000 quotas × 4 resources, 15 days of kube-state-metrics history (two
// samples a day and one two minutes ago: the backfill of a 30-second scrape would be 1.7
// billion samples) in a real Prometheus. "first" is a source's first refresh, every closed day
// and today for every quota (queries/op counts the requests); "hourly" a refresh an hour on,
// today only; "lookup" one quota's Window served from memory.
func BenchmarkWindow(b *testing.B) {
	const quotas, window = 10_000, 14 * day
	resources := []string{"requests.cpu", "limits.cpu", "requests.memory", "limits.memory"}
	now := time.Now().Truncate(time.Second)
	var h promtest.History
	for i := range quotas {
		for j, res := range resources {
			var samples []promtest.Sample
			for at := now.Add(-15 * day); at.Before(now); at = at.Add(12 * time.Hour) {
				v := float64(i%7+j) / 4
				if j >= 2 {
					v = float64((i%7+j)<<28) + float64(at.Unix()%3<<20)
				}
				samples = append(samples, promtest.Sample{At: at, Value: v})
			}
			samples = append(samples, promtest.Sample{At: now.Add(-2 * time.Minute), Value: samples[0].Value})
			h.Add("kube_resourcequota", "gauge", map[string]string{
				"namespace": fmt.Sprintf("tenant-%05d", i), "resourcequota": "compute", "resource": res, "type": "used",
				"job": "kube-state-metrics", "instance": "10.0.0.1:8080",
			}, samples...)
		}
	}
	setup := time.Now()
	s := promtest.Start(b, promtest.Options{History: &h})
	b.Logf("backfill and start: %s", time.Since(setup).Round(time.Second))
	ctx := context.Background()

	b.Run("first", func(b *testing.B) {
		var queries int64
		// The heap's high-water mark over a refresh, above what was live before it: what a
		// refresh adds to the controller's memory for a moment.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, peak := ms.HeapAlloc, ms.HeapAlloc
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}()
		var p *quotahistory.Prometheus
		for b.Loop() {
			p = source(b, s.URL)
			if w := p.Window(ctx, "tenant-00042", "compute", window, now); !w.Complete {
				b.Fatal(w.Incomplete)
			}
			queries += p.Queries()
		}
		close(stop)
		<-done
		// What a source holds after its first refresh.
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc-min(ms.HeapAlloc, base))/(1<<20), "held-MiB")
		runtime.KeepAlive(p)
		b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
		b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MiB")
	})
	b.Run("hourly", func(b *testing.B) {
		p := source(b, s.URL)
		p.Window(ctx, "tenant-00042", "compute", window, now)
		p.Window(ctx, "tenant-00042", "compute", window, now.Add(-61*time.Minute))
		before, i := p.Queries(), 0
		for b.Loop() {
			// Back and forth an hour: each call refreshes; the closed days are all read.
			p.Window(ctx, "tenant-00042", "compute", window, now.Add(-time.Duration(i%2)*61*time.Minute))
			i++
		}
		b.ReportMetric(float64(p.Queries()-before)/float64(b.N), "queries/op")
	})
	b.Run("lookup", func(b *testing.B) {
		p := source(b, s.URL)
		p.Window(ctx, "tenant-00000", "compute", window, now)
		names := make([]string, quotas)
		for i := range names {
			names[i] = fmt.Sprintf("tenant-%05d", i)
		}
		i := 0
		for b.Loop() {
			if w := p.Window(ctx, names[i%quotas], "compute", window, now); !w.Complete {
				b.Fatal(w.Incomplete)
			}
			i++
		}
		if p.Queries() != 5 {
			b.Errorf("%d queries, want 5", p.Queries())
		}
	})
}

// BenchmarkWindowDense: what Prometheus's reading of every sample costs at a scrape's density:
// 25 quotas × 4 resources with a sample every minute for 15 days (2.16 million samples). "first"
// is a source's first refresh of a 14-day window (samples/s is Prometheus's throughput, which
// scales it to a real cluster's series and scrape interval); "hourly" a refresh an hour on.
func BenchmarkWindowDense(b *testing.B) {
	const quotas, window, every = 25, 14 * day, time.Minute
	resources := []string{"requests.cpu", "limits.cpu", "requests.memory", "limits.memory"}
	now := time.Now().Truncate(time.Second)
	var h promtest.History
	samplesPerSeries := 0
	for i := range quotas {
		for j, res := range resources {
			var samples []promtest.Sample
			for at := now.Add(-15 * day); at.Before(now); at = at.Add(every) {
				samples = append(samples, promtest.Sample{At: at, Value: float64(i+j+int(at.Unix()/3600%5)) / 4})
			}
			samplesPerSeries = len(samples)
			h.Add("kube_resourcequota", "gauge", map[string]string{
				"namespace": fmt.Sprintf("tenant-%05d", i), "resourcequota": "compute", "resource": res, "type": "used",
				"job": "kube-state-metrics", "instance": "10.0.0.1:8080",
			}, samples...)
		}
	}
	s := promtest.Start(b, promtest.Options{History: &h})
	ctx := context.Background()
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			p := source(b, s.URL)
			if w := p.Window(ctx, "tenant-00003", "compute", window, now); !w.Complete {
				b.Fatal(w.Incomplete)
			}
		}
		// The range queries read the window's days and the day before it: 15 days of samples
		// plus part of a 16th.
		read := float64(quotas*len(resources)) * float64(samplesPerSeries)
		b.ReportMetric(read/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
	})
	b.Run("hourly", func(b *testing.B) {
		p := source(b, s.URL)
		p.Window(ctx, "tenant-00003", "compute", window, now)
		p.Window(ctx, "tenant-00003", "compute", window, now.Add(-61*time.Minute))
		i := 0
		for b.Loop() {
			if w := p.Window(ctx, "tenant-00003", "compute", window, now.Add(-time.Duration(i%2)*61*time.Minute)); !w.Complete {
				b.Fatal(w.Incomplete)
			}
			i++
		}
	})
}
