package github

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestTimeoutTransport(t *testing.T) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write([]byte("fast body"))
	}))
	defer hs.Close()
	defer close(release)
	rt := &timeoutTransport{next: http.DefaultTransport, timeout: 50 * time.Millisecond}

	req, _ := http.NewRequest("GET", hs.URL+"/slow", http.NoBody)
	start := time.Now()
	_, err := roundTrip(rt, req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}

	// The deadline stays active while the body is read and is released on Close.
	req, _ = http.NewRequest("GET", hs.URL+"/fast", http.NoBody)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "fast body" {
		t.Fatalf("body %q, %v", b, err)
	}
}

// TestTimeoutIsPerAttempt: each retry of an idempotent GET gets a fresh deadline.
func TestTimeoutIsPerAttempt(t *testing.T) {
	var calls atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			<-r.Context().Done() // hang until the client gives up
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer hs.Close()
	clk := newFakeClock()
	rt := NewChain(WithBaseTransport(http.DefaultTransport), WithClock(clk), WithRequestTimeout(50*time.Millisecond),
		WithJitter(noJitter), WithBackoff(time.Second, time.Minute), WithCacheEntries(0))
	req, _ := http.NewRequest("GET", hs.URL+"/repos/o/r", http.NoBody)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if calls.Load() != 3 {
		t.Errorf("calls = %d, want 3", calls.Load())
	}
	if got := clk.Sleeps(); !equalDurations(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("sleeps = %v", got)
	}
}

func TestBackoffSchedule(t *testing.T) {
	rt := &retryTransport{s: settings{backoffBase: time.Second, backoffCap: 3 * time.Second, jitter: noJitter}}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, w := range want {
		if got := rt.backoff(i); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i, got, w)
		}
	}
}
