package quotahistory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

const day = 24 * time.Hour

// ksm adds kube-state-metrics' kube_resourcequota series of one quota's resource: hourly
// samples of value base from `from` to `to` (both before now), `to` included, with peak at peakAt when it is
// not zero. instance tells two kube-state-metrics replicas apart.
func ksm(h *promtest.History, ns, quota, res, typ, instance string, from, to time.Time, base, peak float64, peakAt time.Time) {
	var samples []promtest.Sample
	for at := from; at.Before(to); at = at.Add(time.Hour) {
		samples = append(samples, promtest.Sample{At: at, Value: base})
	}
	samples = append(samples, promtest.Sample{At: to, Value: base})
	if !peakAt.IsZero() {
		samples = append(samples, promtest.Sample{At: peakAt, Value: peak})
	}
	h.Add("kube_resourcequota", "gauge", map[string]string{
		"namespace": ns, "resourcequota": quota, "resource": res, "type": typ,
		"job": "kube-state-metrics", "instance": instance,
	}, samples...)
}

// counter is a reverse proxy in front of Prometheus that counts the queries it forwards and,
// when warn is set, adds a warning to each answer, as Thanos's querier does when a store did not
// answer.
type counter struct {
	queries atomic.Int64
	warn    atomic.Pointer[string]
	// failAt, when set, is the number of the query answered 503 instead of forwarded.
	failAt atomic.Int64
}

func (c *counter) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(resp *http.Response) error {
		w := c.warn.Load()
		if w == nil {
			return nil
		}
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return err
		}
		resp.Body.Close()
		body["warnings"] = []string{*w}
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/query") {
			if n := c.queries.Add(1); n == c.failAt.Load() {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// inDay: at is in the day (start, start+1d], as Prometheus's ranges are open on the left.
func inDay(start, at time.Time) bool { return start.Before(at) && !start.Add(day).Before(at) }

func newSource(t *testing.T, u string, o quotahistory.Options) *quotahistory.Prometheus {
	t.Helper()
	p, err := quotahistory.NewPrometheus(activity.Access{URL: u}, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrometheus asks a real Prometheus, holding backfilled kube-state-metrics history, about
// quotas whose history covers the window, starts inside it, has a gap, has no series at all.
func TestPrometheus(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	from, to := now.Add(-16*day), now.Add(-2*time.Minute)
	var h promtest.History
	// team-a: 16 days of history; cpu peaks at 2.5 cores 4.5 days ago, memory at 3Gi 2.5 days
	// ago. A second kube-state-metrics replica reports the same quota lower, and the hard
	// limit is higher than any use: neither is the peak.
	cpuPeakAt, memPeakAt := now.Add(-5*day+12*time.Hour), now.Add(-3*day+12*time.Hour)
	ksm(&h, "team-a", "compute", "requests.cpu", "used", "ksm-0", from, to, 0.25, 2.5, cpuPeakAt)
	ksm(&h, "team-a", "compute", "requests.cpu", "used", "ksm-1", from, to, 0.25, 2.0, cpuPeakAt)
	ksm(&h, "team-a", "compute", "requests.cpu", "hard", "ksm-0", from, to, 10, 0, time.Time{})
	ksm(&h, "team-a", "compute", "requests.memory", "used", "ksm-0", from, to, 1<<30, 3<<30, memPeakAt)
	ksm(&h, "team-a", "compute", "pods", "used", "ksm-0", from, to, 3, 0, time.Time{})
	// A resource taken out of the quota 3 days ago: kube-state-metrics stopped reporting it.
	ksm(&h, "team-a", "compute", "count/configmaps", "used", "ksm-0", from, now.Add(-3*day), 7, 0, time.Time{})
	// team-b: a quota created a week ago.
	ksm(&h, "team-b", "compute", "requests.cpu", "used", "ksm-0", now.Add(-7*day), to, 0.1, 0, time.Time{})
	// team-c: no samples for two days, 9 to 7 days ago (kube-state-metrics was down).
	ksm(&h, "team-c", "compute", "requests.cpu", "used", "ksm-0", from, now.Add(-9*day-time.Hour), 0.1, 0, time.Time{})
	ksm(&h, "team-c", "compute", "requests.cpu", "used", "ksm-0", now.Add(-7*day+time.Hour), to, 0.1, 0, time.Time{})
	// Many more quotas, for the query count.
	const bulk = 50
	for i := range bulk {
		ksm(&h, fmt.Sprintf("bulk-%02d", i), "q", "requests.cpu", "used", "ksm-0", from, to, float64(i)/10, 0, time.Time{})
	}
	s := promtest.Start(t, promtest.Options{History: &h})
	var c counter
	proxy := c.start(t, s.URL)
	ctx := context.Background()
	const window = 14 * day
	start := now.Add(-window)

	t.Run("complete", func(t *testing.T) {
		p := newSource(t, proxy, quotahistory.Options{})
		w := p.Window(ctx, "team-a", "compute", window, now)
		if !w.Complete || w.Incomplete != "" {
			t.Fatalf("Complete=%v Incomplete=%q, want complete", w.Complete, w.Incomplete)
		}
		if !w.Start.Equal(start) || !w.End.Equal(now) {
			t.Errorf("window [%s, %s], want [%s, %s]", w.Start, w.End, start, now)
		}
		for res, want := range map[corev1.ResourceName]struct {
			value string
			at    time.Time
		}{
			"requests.cpu":    {"2500m", cpuPeakAt},
			"requests.memory": {"3Gi", memPeakAt},
			"pods":            {"3", time.Time{}},
		} {
			pk, ok := w.Peaks[res]
			if !ok {
				t.Errorf("%s: no peak", res)
				continue
			}
			if pk.Value.Cmp(resource.MustParse(want.value)) != 0 || pk.Value.String() != want.value {
				t.Errorf("%s: peak %s, want %s", res, pk.Value.String(), want.value)
			}
			// The day that held the peak: (At, At+1d].
			if !want.at.IsZero() && !inDay(pk.At, want.at) {
				t.Errorf("%s: peak at %s, want the day holding %s", res, pk.At, want.at)
			}
		}
		if _, ok := w.Peaks["count/configmaps"]; ok || len(w.Peaks) != 3 {
			t.Errorf("peaks %v: want requests.cpu, requests.memory and pods (count/configmaps left the quota)", w.Peaks)
		}
		// 15 UTC days: the one holding the window's start to today's.
		d := p.Daily(ctx, "team-a", "compute", window, now)
		if len(d.Days) != 15 || !d.Days[0].Start.Equal(start.Add(-time.Minute).Truncate(day)) {
			t.Fatalf("%d days from %s, want 15 from the UTC day holding %s", len(d.Days), d.Days[0].Start, start)
		}
		for i, dd := range d.Days {
			cpu, ok := dd.Peaks["requests.cpu"]
			if !ok && i == len(d.Days)-1 && now.Sub(dd.Start) < 3*time.Minute {
				continue // today began a moment ago: no sample yet
			}
			want := "250m"
			if inDay(dd.Start, cpuPeakAt) {
				want = "2500m"
			}
			if cpu.String() != want {
				t.Errorf("day %d (%s): cpu %s, want %s", i, dd.Start, cpu.String(), want)
			}
		}
		// The Window carries the same days per resource, for the chart a pull request draws,
		// without a lookup of its own: the days that hold a sample, oldest first.
		for res := range w.Peaks {
			var want []quotahistory.DayPeak
			for _, dd := range d.Days {
				if v, ok := dd.Peaks[res]; ok {
					want = append(want, quotahistory.DayPeak{Day: dd.Start, Value: v})
				}
			}
			got := w.Days[res]
			if len(got) != len(want) || len(got) < 14 {
				t.Fatalf("%s: %d days in the Window, want %d (Daily's), at least 14", res, len(got), len(want))
			}
			for i := range got {
				if !got[i].Day.Equal(want[i].Day) || got[i].Value.Cmp(want[i].Value) != 0 {
					t.Errorf("%s day %d: %s %s, want %s %s", res, i, got[i].Day, got[i].Value.String(), want[i].Day, want[i].Value.String())
				}
			}
		}
		if _, ok := w.Days["count/configmaps"]; ok {
			t.Error("count/configmaps left the quota: no days of it")
		}
	})

	for _, tc := range []struct {
		name, ns, quota string
		want            []string
	}{
		{"history starts inside the window", "team-b", "compute", []string{"requests.cpu", "begins only between " + now.Add(-7*day).Truncate(day).UTC().Format(time.RFC3339), "window starts " + start.UTC().Format(time.RFC3339)}},
		{"gap", "team-c", "compute", []string{"requests.cpu", "no samples between"}},
		{"no series", "team-x", "compute", []string{"no usage history", `namespace "team-x"`, `resourcequota "compute"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newSource(t, proxy, quotahistory.Options{})
			w := p.Window(ctx, tc.ns, tc.quota, window, now)
			if w.Complete {
				t.Fatalf("complete, want incomplete: %+v", w)
			}
			t.Logf("Incomplete: %s", w.Incomplete)
			for _, s := range tc.want {
				if !strings.Contains(w.Incomplete, s) {
					t.Errorf("Incomplete = %q, want it to say %q", w.Incomplete, s)
				}
			}
		})
	}

	t.Run("queries per refresh, whatever the number of quotas", func(t *testing.T) {
		p := newSource(t, proxy, quotahistory.Options{Refresh: time.Hour})
		before := c.queries.Load()
		var wg sync.WaitGroup
		for i := range bulk {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := p.Window(ctx, fmt.Sprintf("bulk-%02d", i), "q", window, now.Add(time.Duration(i)*time.Second))
				if !w.Complete {
					t.Errorf("bulk-%02d: %s", i, w.Incomplete)
				}
			}()
		}
		wg.Wait()
		// The 15 closed days (the day before the window's and 14 more) four at a time, then
		// today.
		if n := c.queries.Load() - before; n != 5 {
			t.Errorf("%d queries for %d quotas, want 5", n, bulk)
		}
		// Another window length is another question (8 closed days: 2 + 1); the first one's
		// answer is still kept.
		p.Window(ctx, "team-a", "compute", 7*day, now)
		p.Window(ctx, "team-a", "compute", window, now.Add(59*time.Minute))
		if n := c.queries.Load() - before; n != 8 {
			t.Errorf("%d queries after a second window length, want 8", n)
		}
		// Past the refresh interval, only today is read again (and yesterday, if it closed
		// since): the closed days are kept.
		later := now.Add(61 * time.Minute)
		want := int64(9)
		if later.Add(-time.Minute).Truncate(day) != now.Add(-time.Minute).Truncate(day) {
			want++
		}
		w := p.Window(ctx, "team-a", "compute", window, later)
		if n := c.queries.Load() - before; n != want {
			t.Errorf("%d queries after the refresh interval, want %d", n, want)
		}
		if cpu := w.Peaks["requests.cpu"]; !w.Complete || cpu.Value.String() != "2500m" || !inDay(cpu.At, cpuPeakAt) {
			t.Errorf("after the second refresh: %+v, want complete with the cpu peak of the first", w)
		}
	})

	t.Run("a refresh that fails half-way keeps what it read", func(t *testing.T) {
		p := newSource(t, proxy, quotahistory.Options{})
		c.failAt.Store(c.queries.Load() + 3) // the third chunk of closed days
		defer c.failAt.Store(0)
		w := p.Window(ctx, "team-a", "compute", window, now)
		if w.Complete || !strings.Contains(w.Incomplete, "503") {
			t.Errorf("Complete=%v Incomplete=%q, want Prometheus's 503", w.Complete, w.Incomplete)
		}
		before := c.queries.Load()
		w = p.Window(ctx, "team-a", "compute", window, now.Add(5*time.Minute))
		if cpu := w.Peaks["requests.cpu"]; !w.Complete || cpu.Value.String() != "2500m" {
			t.Errorf("after Retry: %+v, want complete with the cpu peak", w)
		}
		// The third and fourth chunks, and today.
		if n := c.queries.Load() - before; n != 3 {
			t.Errorf("%d queries after Retry, want 3", n)
		}
	})

	t.Run("query refused", func(t *testing.T) {
		p := newSource(t, proxy, quotahistory.Options{Selector: `kube_resourcequota{type="used"`})
		w := p.Window(ctx, "team-a", "compute", window, now)
		t.Logf("Incomplete: %s", w.Incomplete)
		if w.Complete || !strings.Contains(w.Incomplete, "query failed") || !strings.Contains(w.Incomplete, "bad_data") {
			t.Errorf("Complete=%v Incomplete=%q, want Prometheus's refusal", w.Complete, w.Incomplete)
		}
	})

	t.Run("partial answer", func(t *testing.T) {
		warning := "store 10.0.0.7:10901 did not answer: " + strings.Repeat("x", 500)
		c.warn.Store(&warning)
		defer c.warn.Store(nil)
		var logged strings.Builder
		p := newSource(t, proxy, quotahistory.Options{Log: funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})})
		w := p.Window(ctx, "team-a", "compute", window, now)
		// The reason reaches Events in the tenant's namespace: a warning can name the stores
		// behind Prometheus, so its words go to Kustos's log only.
		if w.Complete || !strings.Contains(w.Incomplete, "partial") || strings.Contains(w.Incomplete, "10.0.0.7") {
			t.Errorf("Complete=%v Incomplete=%q, want a partial answer without the warning's words", w.Complete, w.Incomplete)
		}
		if !strings.Contains(logged.String(), "store 10.0.0.7:10901 did not answer") || len(logged.String()) > 1000 {
			t.Errorf("log %q, want the warning, clipped", logged.String())
		}
		// The partial answer serves every quota until Retry (5m): one query, not one per quota,
		// to a Prometheus that is struggling; then it is asked again.
		before := c.queries.Load()
		p.Window(ctx, "team-b", "compute", window, now.Add(4*time.Minute))
		if n := c.queries.Load() - before; n != 0 {
			t.Errorf("%d queries within Retry of a partial answer, want 0", n)
		}
		c.warn.Store(nil)
		if w := p.Window(ctx, "team-a", "compute", window, now.Add(5*time.Minute)); !w.Complete {
			t.Errorf("after Retry, with a whole answer: %s", w.Incomplete)
		}
		if n := c.queries.Load() - before; n != 5 {
			t.Errorf("%d queries after Retry, want 5 (the closed days again, and today)", n)
		}
	})
}

// TestUnreachable: nothing listens at the URL; every quota's window is incomplete and says so,
// without the URL's password, and Kustos's log says it once for the operator (no Event or pull
// request carries an incomplete window's reason).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logged strings.Builder
	p := newSource(t, "http://kustos:s3cret@"+addr, quotahistory.Options{Timeout: 5 * time.Second,
		Log: funcr.New(func(_, args string) { logged.WriteString(args + "\n") }, funcr.Options{})})
	now := time.Now()
	w := p.Window(context.Background(), "team-a", "compute", 14*day, now)
	// Answered from the failed refresh until Retry: not logged again.
	p.Window(context.Background(), "team-b", "compute", 14*day, now.Add(time.Minute))
	if n := strings.Count(logged.String(), "Prometheus unreachable"); n != 1 {
		t.Errorf("log says Prometheus is unreachable %d times, want once:\n%s", n, logged.String())
	}
	if strings.Contains(logged.String(), "s3cret") {
		t.Errorf("log holds the password:\n%s", logged.String())
	}
	if w.Complete || !strings.Contains(w.Incomplete, "unreachable") {
		t.Errorf("Complete=%v Incomplete=%q, want unreachable", w.Complete, w.Incomplete)
	}
	t.Logf("Incomplete: %s", w.Incomplete)
	if strings.Contains(w.Incomplete, "s3cret") {
		t.Errorf("Incomplete = %q holds the password", w.Incomplete)
	}
}
