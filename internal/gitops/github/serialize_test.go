package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
			req, _ := http.NewRequest(method, hs.URL+"/repos/o/r/git/refs", http.NoBody)
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
				req, _ := http.NewRequest("GET", hs.URL+"/repos/o/r", http.NoBody)
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
		req, _ := http.NewRequest("POST", "http://x/repos/o/r/git/refs", http.NoBody)
		_, _ = roundTrip(rt, req)
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://x/api/v3/app/installations/42/access_tokens", http.NoBody)
	if _, err := roundTrip(rt, req); err != nil {
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
		req, _ := http.NewRequest("POST", "http://x/a", http.NoBody)
		_, _ = roundTrip(rt, req)
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://x/b", http.NoBody)
	if _, err := roundTrip(rt, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued mutation err = %v, want deadline exceeded", err)
	}
	close(block)
}

// gateClock is a Clock whose Sleep blocks until the test opens the gate; it reports each
// sleeper on sleeping so a test knows who is waiting.
type gateClock struct {
	now      time.Time
	gate     chan struct{}
	sleeping chan time.Duration
}

func newGateClock() *gateClock {
	return &gateClock{now: time.Unix(1_800_000_000, 0), gate: make(chan struct{}), sleeping: make(chan time.Duration, 16)}
}

func (c *gateClock) Now() time.Time { return c.now }

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	select {
	case <-c.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestMutationSlotIsFreeWhileWaiting: a mutation that waits for a rate limit or a backoff
// gives the mutation slot up, so another pull request's mutation proceeds meanwhile instead of
// queueing behind the wait (up to DefaultMaxRateLimitWait).
func TestMutationSlotIsFreeWhileWaiting(t *testing.T) {
	tests := []struct {
		name string
		// first answers the first mutation's first attempt.
		first step
		// secondReachesServer: the second mutation is sent while the first waits (a backoff
		// is the first mutation's own business); after a secondary rate limit the whole
		// client pauses, so the second mutation proceeds to that shared wait instead.
		secondReachesServer bool
		wantWait            time.Duration
	}{
		{"secondary rate limit", step{code: 429, header: map[string]string{"Retry-After": "30"}}, false, 30 * time.Second},
		{"primary rate limit", step{code: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000020"}}, false, 21 * time.Second},
		{"backoff after a 502", step{code: 502}, true, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			firstCalls := 0
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path)
				st := step{code: 200}
				if r.URL.Path == "/repos/o/r/pulls/1" {
					if firstCalls == 0 {
						st = tt.first
					}
					firstCalls++
				}
				mu.Unlock()
				for k, v := range st.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(st.code)
			}))
			defer hs.Close()
			clk := newGateClock()
			rt := NewChain(WithClock(clk), WithMutationInterval(0), WithJitter(noJitter), WithBackoff(time.Second, time.Second), WithCacheEntries(0))
			do := func(method, path string) error {
				req, err := http.NewRequestWithContext(context.Background(), method, hs.URL+path, strings.NewReader(`{}`))
				if err != nil {
					return err
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
				}
				return nil
			}
			firstDone := make(chan error, 1)
			go func() { firstDone <- do("PATCH", "/repos/o/r/pulls/1") }()
			select {
			case d := <-clk.sleeping:
				if d != tt.wantWait {
					t.Errorf("first mutation waits %v, want %v", d, tt.wantWait)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the first mutation never waited")
			}
			secondDone := make(chan error, 1)
			go func() { secondDone <- do("POST", "/repos/o/r/git/trees") }()
			if tt.secondReachesServer {
				select {
				case err := <-secondDone:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(2 * time.Second):
					t.Fatal("the second mutation queued behind the first one's backoff")
				}
			} else {
				select {
				case <-clk.sleeping:
				case <-time.After(2 * time.Second):
					t.Fatal("the second mutation queued behind the first one's rate-limit wait instead of waiting for the limit itself")
				}
			}
			close(clk.gate)
			if err := <-firstDone; err != nil {
				t.Fatal(err)
			}
			if !tt.secondReachesServer {
				if err := <-secondDone; err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 3 || firstCalls != 2 {
				t.Errorf("requests %v, want the first mutation twice and the second once", seen)
			}
		})
	}
}
