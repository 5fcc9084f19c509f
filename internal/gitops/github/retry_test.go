package github

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// step is one scripted server answer.
type step struct {
	code   int
	header map[string]string
	body   string
}

// scripted serves the steps in order (the last one repeats) and records the bodies it got.
type scripted struct {
	mu     sync.Mutex
	steps  []step
	calls  int
	bodies []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	st := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	for k, v := range st.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(st.code)
	_, _ = io.WriteString(w, st.body)
}

func TestRetryTransport(t *testing.T) {
	clk := newFakeClock()
	now := clk.Now()
	reset := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	ok := step{code: 200, body: "ok"}
	tests := []struct {
		name       string
		method     string
		path       string
		steps      []step
		wantCalls  int
		wantCode   int
		wantSleeps []time.Duration
		wantRL     *RateLimitError
	}{
		{"GET 5xx retried with backoff", "GET", "/repos/o/r/pulls/1",
			[]step{{code: 500}, {code: 502}, ok}, 3, 200, []time.Duration{time.Second, 2 * time.Second}, nil},
		{"GET 5xx gives up after max retries", "GET", "/repos/o/r",
			[]step{{code: 503}}, 4, 503, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, nil},
		{"backoff is capped", "GET", "/repos/o/r",
			[]step{{code: 500}, {code: 500}, {code: 500}, {code: 500}}, 4, 500, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, nil},
		{"5xx Retry-After longer than backoff wins", "GET", "/repos/o/r",
			[]step{{code: 503, header: map[string]string{"Retry-After": "10"}}, ok}, 2, 200, []time.Duration{10 * time.Second}, nil},
		{"POST 5xx never retried", "POST", "/repos/o/r/pulls",
			[]step{{code: 502}, ok}, 1, 502, nil, nil},
		{"POST git/commits 5xx never retried", "POST", "/repos/o/r/git/commits",
			[]step{{code: 500}, ok}, 1, 500, nil, nil},
		{"PUT merge 5xx never retried", "PUT", "/repos/o/r/pulls/3/merge",
			[]step{{code: 502}, ok}, 1, 502, nil, nil},
		{"PATCH pull (idempotent edit) retried", "PATCH", "/repos/o/r/pulls/3",
			[]step{{code: 503}, ok}, 2, 200, []time.Duration{time.Second}, nil},
		{"PATCH ref retried", "PATCH", "/repos/o/r/git/refs/heads/kustos/quota/a/b",
			[]step{{code: 500}, ok}, 2, 200, []time.Duration{time.Second}, nil},
		{"POST labels retried", "POST", "/repos/o/r/issues/3/labels",
			[]step{{code: 500}, ok}, 2, 200, []time.Duration{time.Second}, nil},
		{"POST token exchange retried", "POST", "/app/installations/42/access_tokens",
			[]step{{code: 502}, {code: 201}}, 2, 201, []time.Duration{time.Second}, nil},
		{"429 Retry-After honoured, POST too", "POST", "/repos/o/r/pulls",
			[]step{{code: 429, header: map[string]string{"Retry-After": "7"}}, {code: 201}}, 2, 201, []time.Duration{7 * time.Second}, nil},
		{"403 with Retry-After is secondary", "GET", "/repos/o/r",
			[]step{{code: 403, header: map[string]string{"Retry-After": "3"}}, ok}, 2, 200, []time.Duration{3 * time.Second}, nil},
		{"secondary message without Retry-After waits 60s then doubles", "POST", "/repos/o/r/git/trees",
			[]step{
				{code: 403, body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`},
				{code: 403, body: `{"message":"You have exceeded a secondary rate limit."}`}, {code: 201}},
			3, 201, []time.Duration{60 * time.Second, 120 * time.Second}, nil},
		{"primary limit waits until reset", "POST", "/repos/o/r/git/refs",
			[]step{{code: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(30 * time.Second)}}, {code: 201}},
			2, 201, []time.Duration{31 * time.Second}, nil},
		{"primary limit too far: typed error", "GET", "/repos/o/r",
			[]step{{code: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(time.Hour), "X-RateLimit-Resource": "core"}}},
			1, 0, nil, &RateLimitError{Reset: now.Add(time.Hour), Resource: "core"}},
		{"secondary Retry-After too long: typed error", "GET", "/repos/o/r",
			[]step{{code: 429, header: map[string]string{"Retry-After": "3600"}}},
			1, 0, nil, &RateLimitError{Reset: now.Add(time.Hour), Secondary: true}},
		{"plain 403 (permissions) not retried", "GET", "/repos/o/r",
			[]step{{code: 403, body: `{"message":"Resource not accessible by integration"}`}}, 1, 403, nil, nil},
		{"404 not retried", "GET", "/repos/o/r/git/ref/heads/x", []step{{code: 404}}, 1, 404, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			srv := &scripted{steps: tt.steps}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			rt := &retryTransport{next: http.DefaultTransport, limits: newRateLimits(), s: settings{
				clock: c, maxRetries: 3, backoffBase: time.Second, backoffCap: 4 * time.Second,
				jitter: noJitter, maxWait: 2 * time.Minute, secondaryDefault: time.Minute,
			}}
			req, _ := http.NewRequest(tt.method, hs.URL+tt.path, strings.NewReader(`{"k":"v"}`))
			resp, err := rt.RoundTrip(req)
			if tt.wantRL != nil {
				var rl *RateLimitError
				if !errors.As(err, &rl) || !rl.Reset.Equal(tt.wantRL.Reset) || rl.Secondary != tt.wantRL.Secondary || rl.Resource != tt.wantRL.Resource {
					t.Fatalf("err = %#v, want %#v", err, tt.wantRL)
				}
				if !errors.Is(err, ErrRateLimited) {
					t.Error("RateLimitError is not ErrRateLimited")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.wantCode {
					t.Errorf("code = %d, want %d", resp.StatusCode, tt.wantCode)
				}
			}
			if srv.calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", srv.calls, tt.wantCalls)
			}
			if got := c.Sleeps(); !equalDurations(got, tt.wantSleeps) {
				t.Errorf("sleeps = %v, want %v", got, tt.wantSleeps)
			}
			for i, b := range srv.bodies {
				if b != `{"k":"v"}` {
					t.Errorf("attempt %d body %q: body not replayed", i, b)
				}
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRetryNetworkErrors(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name      string
		method    string
		err       error
		wantCalls int
	}{
		{"GET reset connection retried", "GET", io.ErrUnexpectedEOF, 3},
		{"POST reset connection not retried", "POST", io.ErrUnexpectedEOF, 1},
		{"POST never sent (dial) retried", "POST", dialErr, 3},
		{"PUT merge never sent retried", "PUT", dialErr, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			base := rtFunc(func(*http.Request) (*http.Response, error) { calls++; return nil, tt.err })
			rt := &retryTransport{next: base, limits: newRateLimits(), s: settings{
				clock: newFakeClock(), maxRetries: 2, backoffBase: time.Second, backoffCap: time.Minute, jitter: noJitter,
			}}
			req, _ := http.NewRequest(tt.method, "http://gh.invalid/repos/o/r/pulls/1/merge", http.NoBody)
			if _, err := roundTrip(rt, req); !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// TestRateLimitPreflight: once GitHub said remaining=0, no request is sent until the reset.
func TestRateLimitPreflight(t *testing.T) {
	c := newFakeClock()
	resetAt := c.Now().Add(time.Hour)
	srv := &scripted{steps: []step{{code: 200, header: map[string]string{
		"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(resetAt.Unix(), 10), "X-RateLimit-Resource": "core"}}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rt := &retryTransport{next: http.DefaultTransport, limits: newRateLimits(), s: settings{clock: c, maxRetries: 3, maxWait: time.Minute, jitter: noJitter}}
	req, _ := http.NewRequest("GET", hs.URL+"/repos/o/r", http.NoBody)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, err = roundTrip(rt, req)
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.Reset.Equal(resetAt) {
		t.Fatalf("second call err = %v, want RateLimitError until %v", err, resetAt)
	}
	if srv.calls != 1 {
		t.Fatalf("calls = %d, want 1 (second call must not reach GitHub)", srv.calls)
	}
	// With a longer allowed wait, the call waits out the reset and goes through.
	rt.s.maxWait = 2 * time.Hour
	resp, err = rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := c.Sleeps(); len(got) != 1 || got[0] != time.Hour+time.Second {
		t.Errorf("sleeps = %v, want [1h0m1s]", got)
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	srv := &scripted{steps: []step{{code: 503}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rt := &retryTransport{next: http.DefaultTransport, limits: newRateLimits(), s: settings{
		clock: realClock{}, maxRetries: 10, backoffBase: time.Hour, backoffCap: time.Hour, jitter: noJitter}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/repos/o/r", http.NoBody)
	start := time.Now()
	if _, err := roundTrip(rt, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second || srv.calls != 1 {
		t.Fatalf("took %v with %d calls", time.Since(start), srv.calls)
	}
}

func TestEqualJitterRange(t *testing.T) {
	for range 1000 {
		if d := equalJitter(10 * time.Second); d < 5*time.Second || d > 10*time.Second {
			t.Fatalf("jitter %v outside [5s,10s]", d)
		}
	}
}

// TestSecondaryLimitPausesTheWholeClient: after a secondary limit, other requests of the same
// client wait too (or fail fast with the typed error) instead of hitting GitHub.
func TestSecondaryLimitPausesTheWholeClient(t *testing.T) {
	c := newFakeClock()
	srv := &scripted{steps: []step{{code: 429, header: map[string]string{"Retry-After": "30"}}, {code: 200}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rt := &retryTransport{next: http.DefaultTransport, limits: newRateLimits(), s: settings{
		clock: c, maxRetries: 3, maxWait: 10 * time.Second, jitter: noJitter, secondaryDefault: time.Minute}}
	req, _ := http.NewRequest("GET", hs.URL+"/repos/o/r/pulls/1", http.NoBody)
	_, err := roundTrip(rt, req)
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.Secondary || !rl.Reset.Equal(c.Now().Add(30*time.Second)) {
		t.Fatalf("first: err = %v", err)
	}
	req2, _ := http.NewRequest("POST", hs.URL+"/repos/o/r/git/trees", http.NoBody)
	if _, err := roundTrip(rt, req2); !errors.As(err, &rl) || !rl.Secondary {
		t.Fatalf("second: err = %v, want secondary RateLimitError without a call", err)
	}
	if srv.calls != 1 {
		t.Fatalf("calls = %d, want 1", srv.calls)
	}
	rt.s.maxWait = time.Minute // now a caller may wait it out
	resp, err := rt.RoundTrip(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := c.Sleeps(); !equalDurations(got, []time.Duration{30 * time.Second}) || srv.calls != 2 {
		t.Errorf("sleeps = %v calls = %d", got, srv.calls)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", 0, false},
		{"12", 12 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
		{"-3", 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.value != "" {
			h.Set("Retry-After", tt.value)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/repos/o/r": "core", "/api/v3/search/issues": "search", "/search/code": "search", "/graphql": "graphql",
	} {
		req, _ := http.NewRequest("GET", "http://x"+path, http.NoBody)
		if got := resourceOf(req); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", path, got, want)
		}
	}
}
