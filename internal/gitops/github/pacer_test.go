package github

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// sendLog is a base transport that answers 200 and records the clock's time of every request
// it is sent.
type sendLog struct {
	clock Clock
	mu    sync.Mutex
	at    []time.Time
	paths []string
}

func (l *sendLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.at = append(l.at, l.clock.Now())
	l.paths = append(l.paths, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

func (l *sendLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// maxInWindow is the largest number of times in any half-open window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	best := 0
	for i := range ts {
		n := 0
		for _, u := range ts[i:] {
			if u.Before(ts[i].Add(w)) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

func write(t *testing.T, rt http.RoundTripper, path string) error {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://github.invalid"+path, strings.NewReader(`{}`))
	_, err := roundTrip(rt, req)
	return err
}

// TestWritePacing: content-creating requests leave at the configured rate and within the
// hourly budget, on the client's clock; a write the budget would hold back longer than the
// maximum wait fails at once with a secondary *RateLimitError saying when a write is free,
// and nothing is sent for it.
func TestWritePacing(t *testing.T) {
	tests := []struct {
		name               string
		perMinute, perHour int
		writes             int
		// wantSent writes succeed; the next one fails with Reset = start + wantReset.
		wantSent  int
		wantReset time.Duration
		// maxPerMinute is the most writes any 60 seconds may see; lastAt when the last one
		// sent left.
		maxPerMinute int
		lastAt       time.Duration
	}{
		{name: "a burst of 100 spreads to 60 a minute after 15 at once", perMinute: 60, perHour: 450, writes: 100,
			wantSent: 100, maxPerMinute: 75, lastAt: 85 * time.Second},
		{name: "the default rate and budget", perMinute: DefaultWritesPerMinute, perHour: DefaultWritesPerHour, writes: 300,
			wantSent: 300, maxPerMinute: 75, lastAt: 285 * time.Second},
		{name: "the hourly budget turns into a RateLimitError at the first write's hour", perMinute: 60, perHour: 450, writes: 460,
			wantSent: 450, wantReset: time.Hour, maxPerMinute: 75, lastAt: 435 * time.Second},
		{name: "hourly budget without a per-minute rate", perMinute: 0, perHour: 10, writes: 11,
			wantSent: 10, wantReset: time.Hour, maxPerMinute: 10, lastAt: 0},
		{name: "a slow rate", perMinute: 6, perHour: 0, writes: 5,
			wantSent: 5, maxPerMinute: 5, lastAt: 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			start := clk.Now()
			log := &sendLog{clock: clk}
			rt := NewChain(WithBaseTransport(log), WithClock(clk), WithMutationInterval(0), WithCacheEntries(0),
				WithWriteRate(tt.perMinute, tt.perHour), WithMaxRateLimitWait(DefaultMaxRateLimitWait))
			sent := 0
			for i := range tt.writes {
				err := write(t, rt, "/repos/o/r/git/refs")
				if err == nil {
					sent++
					continue
				}
				var rl *RateLimitError
				if !errors.As(err, &rl) || !rl.Secondary {
					t.Fatalf("write %d: err = %v, want a secondary *RateLimitError", i+1, err)
				}
				if !errors.Is(err, ErrRateLimited) {
					t.Errorf("write %d: %v is not ErrRateLimited", i+1, err)
				}
				if got := rl.Reset.Sub(start); got != tt.wantReset {
					t.Errorf("write %d: Reset = start+%v, want start+%v", i+1, got, tt.wantReset)
				}
				break
			}
			if sent != tt.wantSent {
				t.Errorf("sent %d writes, want %d", sent, tt.wantSent)
			}
			ts := log.times()
			if len(ts) != tt.wantSent {
				t.Fatalf("the server got %d writes, want %d (a refused write must not be sent)", len(ts), tt.wantSent)
			}
			if got := maxInWindow(ts, time.Minute); got > tt.maxPerMinute {
				t.Errorf("%d writes within one minute, want at most %d", got, tt.maxPerMinute)
			}
			if got := maxInWindow(ts, time.Hour); tt.perHour > 0 && got > tt.perHour {
				t.Errorf("%d writes within one hour, want at most %d", got, tt.perHour)
			}
			if got := ts[len(ts)-1].Sub(start); got.Round(time.Millisecond) != tt.lastAt {
				t.Errorf("last write left at start+%v, want start+%v", got, tt.lastAt)
			}
			for _, d := range clk.Sleeps() {
				if d > DefaultMaxRateLimitWait {
					t.Errorf("slept %v, longer than the maximum wait", d)
				}
			}
		})
	}
}

// TestWriteBudgetFreesUp: once the hour of the oldest writes has passed, writes go again, and
// reads never wait for the write budget.
func TestWriteBudgetFreesUp(t *testing.T) {
	clk := newFakeClock()
	log := &sendLog{clock: clk}
	rt := NewChain(WithBaseTransport(log), WithClock(clk), WithMutationInterval(0), WithCacheEntries(0), WithWriteRate(0, 3))
	for range 3 {
		if err := write(t, rt, "/repos/o/r/git/trees"); err != nil {
			t.Fatal(err)
		}
	}
	deferred := metricValue(t, deferredTotal.WithLabelValues(waitWriteBudget))
	var rl *RateLimitError
	if err := write(t, rt, "/repos/o/r/git/trees"); !errors.As(err, &rl) {
		t.Fatalf("4th write: %v, want *RateLimitError", err)
	}
	if d := metricValue(t, deferredTotal.WithLabelValues(waitWriteBudget)) - deferred; d != 1 {
		t.Errorf("kustos_github_requests_deferred_total{reason=write_budget} grew by %v, want 1", d)
	}
	if got := metricValue(t, writeTokens.WithLabelValues("hour")); got != 0 {
		t.Errorf("kustos_github_write_tokens_available{window=hour} = %v, want 0", got)
	}
	req, _ := http.NewRequest("GET", "http://github.invalid/repos/o/r", http.NoBody)
	if _, err := roundTrip(rt, req); err != nil {
		t.Fatalf("a read waits for the write budget: %v", err)
	}
	// The App's token exchange is no content: it is not paced.
	tok, _ := http.NewRequest("POST", "http://github.invalid/app/installations/7/access_tokens", http.NoBody)
	if _, err := roundTrip(rt, tok); err != nil {
		t.Fatalf("the token exchange waits for the write budget: %v", err)
	}
	_ = clk.Sleep(context.Background(), rl.Reset.Sub(clk.Now()))
	if err := write(t, rt, "/repos/o/r/git/trees"); err != nil {
		t.Fatalf("write at the Reset: %v", err)
	}
	if len(log.times()) != 6 {
		t.Errorf("sent %v", log.paths)
	}
}

// gatedBase answers with answer, recording what was sent when; a request to a path with a
// release channel stays on the wire until the channel is closed.
type gatedBase struct {
	clock   Clock
	answer  func(r *http.Request) *http.Response
	mu      sync.Mutex
	sent    []string
	sentAt  []time.Time
	release map[string]chan struct{}
}

func (b *gatedBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.sent = append(b.sent, r.Method+" "+r.URL.Path)
	b.sentAt = append(b.sentAt, b.clock.Now())
	gate := b.release[r.URL.Path]
	b.mu.Unlock()
	if gate != nil {
		<-gate
	}
	resp := b.answer(r)
	resp.Request = r
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

func (b *gatedBase) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sent)
}

func secondary(retryAfter string) *http.Response {
	h := http.Header{}
	h.Set("Retry-After", retryAfter)
	h.Set("X-RateLimit-Remaining", "4000")
	return &http.Response{StatusCode: 403, Header: h,
		Body: http.NoBody}
}

// TestSecondaryPauseIsNeverShortened: a secondary-limit answer pauses every request of the
// client, reads and writes; a shorter answer that arrives later (a request that was already
// on the wire) does not shorten the pause, and nothing is sent before it ends.
func TestSecondaryPauseIsNeverShortened(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	inFlightGate := make(chan struct{})
	var calls atomic.Int32
	base := &gatedBase{clock: clk, release: map[string]chan struct{}{"/repos/o/r/pulls/1": inFlightGate}}
	base.answer = func(r *http.Request) *http.Response {
		n := calls.Add(1)
		switch {
		case r.URL.Path == "/repos/o/r/git/refs" && n <= 2:
			return secondary("600") // the long answer
		case r.URL.Path == "/repos/o/r/pulls/1":
			return secondary("10") // the short answer of the request already on the wire
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}}
	}
	rt := NewChain(WithBaseTransport(base), WithClock(clk), WithMutationInterval(0), WithCacheEntries(0),
		WithJitter(noJitter), WithMaxRateLimitWait(time.Minute))

	// A read goes on the wire and stays there.
	readDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://github.invalid/repos/o/r/pulls/1", http.NoBody)
		_, err := roundTrip(rt, req)
		readDone <- err
	}()
	for base.count() < 1 {
		time.Sleep(time.Millisecond)
	}
	// A write meets the secondary limit: 600 s is beyond the maximum wait.
	var rl *RateLimitError
	if err := write(t, rt, "/repos/o/r/git/refs"); !errors.As(err, &rl) || !rl.Secondary || !rl.Reset.Equal(start.Add(600*time.Second)) {
		t.Fatalf("write: err = %v, want secondary RateLimitError until start+600s", err)
	}
	// The read comes back with a 10 s answer: the pause stays at 600 s, so the read does not
	// go out again after 10 s but fails with the pause's end.
	close(inFlightGate)
	if err := <-readDone; !errors.As(err, &rl) || !rl.Reset.Equal(start.Add(600*time.Second)) {
		t.Fatalf("read: err = %v, want RateLimitError until start+600s (the shorter answer must not shorten the pause)", err)
	}
	// Every request, read or write, is held back until then.
	for _, m := range []string{"GET", "POST", "PATCH"} {
		req, _ := http.NewRequest(m, "http://github.invalid/repos/o/r/issues/1/labels", strings.NewReader(`{}`))
		if _, err := roundTrip(rt, req); !errors.As(err, &rl) || !rl.Reset.Equal(start.Add(600*time.Second)) {
			t.Errorf("%s during the pause: err = %v, want RateLimitError until start+600s", m, err)
		}
	}
	if got := len(base.sent); got != 2 {
		t.Fatalf("sent %v during the pause, want only the two answered requests", base.sent)
	}
	// Close to the end, a caller may wait it out: it is sent at the end, not earlier.
	_ = clk.Sleep(context.Background(), 590*time.Second)
	req, _ := http.NewRequest("GET", "http://github.invalid/repos/o/r", http.NoBody)
	if _, err := roundTrip(rt, req); err != nil {
		t.Fatal(err)
	}
	if last := base.sentAt[len(base.sentAt)-1]; last.Before(start.Add(600 * time.Second)) {
		t.Errorf("a request left at start+%v, before the pause's end", last.Sub(start))
	}
}

// TestInFlightCap: no more than the cap of requests (reads too) are on the wire at once, and a
// request holds its place until its body is closed.
func TestInFlightCap(t *testing.T) {
	var cur, peak atomic.Int32
	gate := make(chan struct{})
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-gate
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
			Body: &countingBody{onClose: func() { cur.Add(-1) }}}, nil
	})
	rt := NewChain(WithBaseTransport(base), WithClock(newFakeClock()), WithMutationInterval(0), WithCacheEntries(0), WithMaxInFlight(3))
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			method := "GET"
			if i%4 == 0 {
				method = "POST"
			}
			req, _ := http.NewRequest(method, "http://github.invalid/repos/o/r/pulls", strings.NewReader(`{}`))
			if _, err := roundTrip(rt, req); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for cur.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a fourth request would have arrived by now
	if got := cur.Load(); got != 3 {
		t.Errorf("%d requests on the wire, want the cap of 3", got)
	}
	close(gate)
	wg.Wait()
	if got := peak.Load(); got != 3 {
		t.Errorf("peak %d requests on the wire, want 3", got)
	}

	// A response whose body is still open keeps its place.
	held := NewChain(WithBaseTransport(rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r, Body: &countingBody{}}, nil
	})), WithClock(newFakeClock()), WithCacheEntries(0), WithMaxInFlight(1))
	req, _ := http.NewRequest("GET", "http://github.invalid/repos/o/r", http.NoBody)
	open, err := held.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req2, _ := http.NewRequestWithContext(ctx, "GET", "http://github.invalid/repos/o/r", http.NoBody)
	if _, err := roundTrip(held, req2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second request while the first body is open: %v, want it to wait", err)
	}
	open.Body.Close()
	if _, err := roundTrip(held, req); err != nil {
		t.Errorf("after the body was closed: %v", err)
	}
}

type countingBody struct{ onClose func() }

func (b *countingBody) Read([]byte) (int, error) { return 0, errors.New("not read in this test") }

func (b *countingBody) Close() error {
	if b.onClose != nil {
		b.onClose()
	}
	return nil
}

func TestPacingOptionsAreChecked(t *testing.T) {
	for _, o := range []Option{WithWriteRate(-1, 10), WithWriteRate(10, -1), WithMaxInFlight(-2)} {
		_, err := NewClient(Config{APIURL: "http://github.invalid/", TokenFile: writeFile(t, "token", testToken), Repository: "acme/gitops"}, o)
		if err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("err = %v, want a negative value refused", err)
		}
	}
}

// TestSecondaryPauseCoversTheTokenExchange: the App's installation-token request (which Git
// over HTTPS uses too) goes through the same pause: a secondary-limit answer to it holds back
// the REST calls, and nothing more reaches GitHub before the pause ends.
func TestSecondaryPauseCoversTheTokenExchange(t *testing.T) {
	s, _, keyFile := appServer(t, githubtest.Options{})
	clk := newFakeClock()
	c, err := NewClient(appConfig(s, keyFile), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	s.Inject(githubtest.FaultSpec{Method: "POST", PathPattern: tokenEndpoint, Status: 403, RetryAfter: 10 * time.Minute})
	ctx := context.Background()
	if _, err := c.GitToken(ctx); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("GitToken: %v, want ErrRateLimited", err)
	}
	if _, err := c.DefaultBranch(ctx); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("a REST read during the pause: %v, want ErrRateLimited", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests reached GitHub during the pause, want only the refused token request: %+v", n, s.Requests())
	}
	_ = clk.Sleep(ctx, 10*time.Minute)
	if _, err := c.DefaultBranch(ctx); err != nil {
		t.Fatalf("after the pause: %v", err)
	}
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.GetCounter().GetValue()
	}
	return d.GetGauge().GetValue()
}
