package github

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMutationsAreSerialized(t *testing.T) {
	var inFlight, maxInFlight, getsDuringMutation atomic.Int32
	var mutating atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if mutating.Load() {
				getsDuringMutation.Add(1)
			}
			return
		}
		n := inFlight.Add(1)
		mutating.Store(true)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		mutating.Store(false)
		inFlight.Add(-1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer hs.Close()
	clk := newFakeClock()
	rt := newSerializer(http.DefaultTransport, clk, time.Second)

	var wg sync.WaitGroup
	for i := range 8 {
		method := []string{"POST", "PATCH", "PUT", "DELETE"}[i%4]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(method, hs.URL+"/repos/o/r/git/refs", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	// Reads are not held up by mutations.
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				req, _ := http.NewRequest("GET", hs.URL+"/repos/o/r", nil)
				if resp, err := rt.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if maxInFlight.Load() != 1 {
		t.Errorf("max concurrent mutations = %d, want 1", maxInFlight.Load())
	}
	if getsDuringMutation.Load() == 0 {
		t.Errorf("no GET ran while a mutation was in flight: reads are serialized too")
	}
	// 8 mutations, the first without a pause: 7 pauses of the interval (the fake clock does
	// not move between them).
	if got := clk.Sleeps(); len(got) != 7 || got[0] != time.Second {
		t.Errorf("sleeps = %v, want 7 × 1s", got)
	}
}

func TestTokenExchangeIsNotQueuedBehindMutations(t *testing.T) {
	block := make(chan struct{})
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/repos/o/r/git/refs" {
			<-block
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	rt := newSerializer(base, newFakeClock(), time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", "http://x/repos/o/r/git/refs", nil)
		rt.RoundTrip(req)
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://x/api/v3/app/installations/42/access_tokens", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatalf("token exchange queued behind a mutation: %v", err)
	}
	close(block)
	<-done
}

func TestSerializerHonoursContextWhileQueued(t *testing.T) {
	block := make(chan struct{})
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		<-block
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	rt := newSerializer(base, newFakeClock(), 0)
	go func() {
		req, _ := http.NewRequest("POST", "http://x/a", nil)
		rt.RoundTrip(req)
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://x/b", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued mutation err = %v, want deadline exceeded", err)
	}
	close(block)
}
