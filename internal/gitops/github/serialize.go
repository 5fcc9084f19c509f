package github

import (
	"net/http"
	"sync"
	"time"
)

// serializer lets one mutation (any method but GET/HEAD/OPTIONS) of a client run at a time and
// spaces mutations by interval, as GitHub's REST best practices ask. Reads and the App's
// token exchange are not held up.
// The slot is held across the retries and rate-limit waits underneath it.
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

func (s *serializer) RoundTrip(req *http.Request) (*http.Response, error) {
	if isRead(req.Method) || isTokenExchange(req) {
		return s.next.RoundTrip(req)
	}
	ctx := req.Context()
	select {
	case s.slot <- struct{}{}:
	case <-ctx.Done():
		closeBody(req)
		return nil, ctx.Err()
	}
	defer func() {
		s.mu.Lock()
		s.lastEnd = s.clock.Now()
		s.mu.Unlock()
		<-s.slot
	}()
	s.mu.Lock()
	last := s.lastEnd
	s.mu.Unlock()
	if !last.IsZero() && s.interval > 0 {
		if wait := last.Add(s.interval).Sub(s.clock.Now()); wait > 0 {
			if err := s.clock.Sleep(ctx, wait); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	}
	return s.next.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// isTokenExchange reports the App's installation-token request: it changes nothing in a
// repository, and a read that needs a fresh token must not queue behind a mutation.
func isTokenExchange(req *http.Request) bool {
	return req.Method == http.MethodPost && endpointTemplate(req.URL.Path) == tokenExchangeEndpoint
}

const tokenExchangeEndpoint = "/app/installations/:number/access_tokens"
