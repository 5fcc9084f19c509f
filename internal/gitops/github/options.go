package github

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Defaults of the transport chain.
const (
	DefaultRequestTimeout      = 30 * time.Second
	DefaultMaxRetries          = 4
	DefaultBackoffBase         = 500 * time.Millisecond
	DefaultBackoffCap          = 30 * time.Second
	DefaultMaxRateLimitWait    = 90 * time.Second
	DefaultSecondaryRetryAfter = 60 * time.Second
	DefaultCacheEntries        = 1000
	DefaultMutationInterval    = time.Second
	// DefaultWritesPerMinute and DefaultWritesPerHour pace content-creating requests below
	// GitHub's secondary limits of 80 a minute and 500 an hour (see writePacer: with the
	// bucket's burst of a quarter minute, at most 75 writes leave in any minute).
	DefaultWritesPerMinute = 60
	DefaultWritesPerHour   = 450
	// DefaultMaxInFlight caps the requests of one client on the wire at once (GitHub allows
	// 100 concurrent requests per App installation or token).
	DefaultMaxInFlight = 8
)

// settings configures the transport chain; Options change it.
type settings struct {
	base              http.RoundTripper
	clock             Clock
	timeout           time.Duration
	maxRetries        int
	backoffBase       time.Duration
	backoffCap        time.Duration
	jitter            func(time.Duration) time.Duration
	maxWait           time.Duration
	secondaryDefault  time.Duration
	cacheEntries      int
	mutationInterval  time.Duration
	identity          string
	credentialRecheck time.Duration
	writesPerMinute   int
	writesPerHour     int
	maxInFlight       int
}

func defaultSettings() settings {
	return settings{
		base:              http.DefaultTransport,
		clock:             realClock{},
		timeout:           DefaultRequestTimeout,
		maxRetries:        DefaultMaxRetries,
		backoffBase:       DefaultBackoffBase,
		backoffCap:        DefaultBackoffCap,
		jitter:            equalJitter,
		maxWait:           DefaultMaxRateLimitWait,
		secondaryDefault:  DefaultSecondaryRetryAfter,
		cacheEntries:      DefaultCacheEntries,
		mutationInterval:  DefaultMutationInterval,
		credentialRecheck: DefaultCredentialRecheck,
		writesPerMinute:   DefaultWritesPerMinute,
		writesPerHour:     DefaultWritesPerHour,
		maxInFlight:       DefaultMaxInFlight,
	}
}

// equalJitter returns a duration in [d/2, d].
func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1) //nolint:gosec // G404: jitter only spreads retries; it needs no unpredictability
}

// Option changes the transport chain or the client.
type Option func(*settings)

// WithBaseTransport sends requests through rt instead of http.DefaultTransport.
func WithBaseTransport(rt http.RoundTripper) Option { return func(s *settings) { s.base = rt } }

// WithClock injects the time source and sleeper (tests).
func WithClock(c Clock) Option { return func(s *settings) { s.clock = c } }

// WithRequestTimeout bounds every single attempt (default 30 s; 0 disables).
func WithRequestTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// WithMaxRetries sets how many times one request may be retried (default 4).
func WithMaxRetries(n int) Option { return func(s *settings) { s.maxRetries = n } }

// WithBackoff sets the exponential backoff's first step and cap (defaults 500 ms, 30 s).
func WithBackoff(base, maxBackoff time.Duration) Option {
	return func(s *settings) { s.backoffBase, s.backoffCap = base, maxBackoff }
}

// WithJitter replaces the jitter function (default: uniform in [d/2, d]); tests pass identity.
func WithJitter(f func(time.Duration) time.Duration) Option {
	return func(s *settings) { s.jitter = f }
}

// WithMaxRateLimitWait bounds how long one request may wait for a rate limit to reset before
// failing with *RateLimitError (default 90 s; 0 never waits).
func WithMaxRateLimitWait(d time.Duration) Option { return func(s *settings) { s.maxWait = d } }

// WithCacheEntries bounds the ETag cache (default 1000; 0 disables conditional requests).
func WithCacheEntries(n int) Option { return func(s *settings) { s.cacheEntries = n } }

// WithMutationInterval sets the pause between two mutations of one client (default 1 s, as
// GitHub's best practices ask).
func WithMutationInterval(d time.Duration) Option {
	return func(s *settings) { s.mutationInterval = d }
}

// WithWriteRate paces the client's content-creating requests (every method but GET, HEAD
// and OPTIONS; the App's token exchange excepted): at most perMinute a minute, with a burst of
// a quarter of that, and at most perHour in any hour (defaults 60 and 450, below GitHub's
// secondary limits of 80 and 500). A write that would wait for the hourly budget longer than
// the maximum rate-limit wait fails with *RateLimitError{Secondary: true} whose Reset is when
// a write is free. 0 turns that limit off (tests, or a GitHub Enterprise Server without
// secondary limits); NewClient refuses negative values.
func WithWriteRate(perMinute, perHour int) Option {
	return func(s *settings) { s.writesPerMinute, s.writesPerHour = perMinute, perHour }
}

// WithMaxInFlight caps how many requests (reads too) the client has on the wire at once
// (default 8; 0 turns the cap off). NewClient refuses a negative value.
func WithMaxInFlight(n int) Option { return func(s *settings) { s.maxInFlight = n } }

// WithCredentialRecheck sets how long a refusal of the App's credentials by the token
// endpoint is remembered before the exchange is tried again (default 1 min).
func WithCredentialRecheck(d time.Duration) Option {
	return func(s *settings) { s.credentialRecheck = d }
}

// WithCacheIdentity names the credentials for the ETag cache key (NewClient sets it from the
// Config; without it the SHA-256 of the Authorization header is used).
func WithCacheIdentity(id string) Option { return func(s *settings) { s.identity = id } }

// NewChain returns the resilience chain over the base transport, outermost first:
// serialize mutations → ETag cache → retries and rate limits → pacing (write budget, requests
// in flight, the secondary-limit pause) → per-attempt timeout → metrics → base. Credentials go
// on top of it (see NewClient). It panics on a negative rate or cap (NewClient returns an
// error instead).
func NewChain(opts ...Option) http.RoundTripper {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		panic(err)
	}
	return s.chain(newWritePacer(s.writesPerMinute, s.writesPerHour))
}

// validate refuses settings no request could be paced by.
func (s settings) validate() error {
	switch {
	case s.writesPerMinute < 0 || s.writesPerHour < 0:
		return fmt.Errorf("github: write rate %d a minute, %d an hour: must not be negative (0 turns a limit off)", s.writesPerMinute, s.writesPerHour)
	case s.maxInFlight < 0:
		return fmt.Errorf("github: %d requests in flight: must not be negative (0 turns the cap off)", s.maxInFlight)
	}
	return nil
}

func (s settings) chain(pacer *writePacer) http.RoundTripper {
	limits := newRateLimits()
	var rt http.RoundTripper = &instrumented{next: s.base}
	rt = &timeoutTransport{next: rt, timeout: s.timeout}
	rt = &refGuard{next: rt} // under every wait: the branch is read right before its update
	rt = newPacedTransport(rt, s, pacer, limits)
	rt = &retryTransport{next: rt, s: s, limits: limits}
	if s.cacheEntries > 0 {
		rt = newETagCache(rt, s.cacheEntries, s.identity)
	}
	return newSerializer(rt, s.clock, s.mutationInterval)
}
