package github

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// serializer lets one mutation (any method but GET/HEAD/OPTIONS) of a client run at a time and
// spaces mutations by interval, as GitHub's REST best practices ask. Reads and the App's
// token exchange are not held up.
//
// The slot is held while a mutation is on the wire, not while it waits to be retried: the
// retry layer underneath gives it up for every wait (rate-limit reset, Retry-After, backoff)
// through waitOutsideSlot and takes it again, with the interval, before the next attempt. A
// mutation waiting up to DefaultMaxRateLimitWait for a limit therefore does not stall the
// mutations of every other pull request behind it.
type serializer struct {
	next     http.RoundTripper
	clock    Clock
	interval time.Duration
	slot     chan struct{}

	mu      sync.Mutex
	lastEnd time.Time
}

func newSerializer(next http.RoundTripper, clock Clock, interval time.Duration) *serializer {
	return &serializer{next: next, clock: clock, interval: interval, slot: make(chan struct{}, 1)}
}

func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// acquire takes the slot and then waits out the interval since the last mutation ended.
func (s *serializer) acquire(ctx context.Context) error {
	select {
	case s.slot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	last := s.lastEnd
	s.mu.Unlock()
	if !last.IsZero() && s.interval > 0 {
		if wait := last.Add(s.interval).Sub(s.clock.Now()); wait > 0 {
			if err := s.clock.Sleep(ctx, wait); err != nil {
				s.release()
				return err
			}
		}
	}
	return nil
}

// release records when the mutation stopped using the slot and frees it.
func (s *serializer) release() {
	s.mu.Lock()
	s.lastEnd = s.clock.Now()
	s.mu.Unlock()
	<-s.slot
}

// heldSlot travels in a mutation's request context so that the layers underneath can give the
// slot up while they wait. It is used only by the goroutine running that request.
type heldSlot struct {
	s    *serializer
	held bool
}

type slotKey struct{}

// waitOutsideSlot sleeps d on clock. When ctx belongs to a mutation holding the serializer's
// slot, the slot is released for the sleep and taken again (with the mutation interval)
// afterwards, so other mutations run meanwhile.
func waitOutsideSlot(ctx context.Context, clock Clock, d time.Duration) error {
	h, _ := ctx.Value(slotKey{}).(*heldSlot)
	if h == nil || !h.held {
		return clock.Sleep(ctx, d)
	}
	h.held = false
	h.s.release()
	if err := clock.Sleep(ctx, d); err != nil {
		return err
	}
	if err := h.s.acquire(ctx); err != nil {
		return err
	}
	h.held = true
	return nil
}

func (s *serializer) RoundTrip(req *http.Request) (*http.Response, error) {
	if isRead(req.Method) || isTokenExchange(req) {
		return s.next.RoundTrip(req)
	}
	ctx := req.Context()
	if err := s.acquire(ctx); err != nil {
		closeBody(req)
		return nil, err
	}
	h := &heldSlot{s: s, held: true}
	defer func() {
		if h.held {
			s.release()
		}
	}()
	return s.next.RoundTrip(req.WithContext(context.WithValue(ctx, slotKey{}, h)))
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// isTokenExchange reports the App's installation-token request: it changes nothing in a
// repository, and a read that needs a fresh token must not queue behind a mutation.
func isTokenExchange(req *http.Request) bool {
	return req.Method == http.MethodPost && endpointTemplate(req.URL.Path) == tokenExchangeEndpoint
}

// tokenExchangeEndpoint is the endpoint template of the installation-token exchange (not a
// credential).
const tokenExchangeEndpoint = "/app/installations/:number/access_tokens" //nolint:gosec // G101: an endpoint template, not a credential
