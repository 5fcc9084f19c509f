package github

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimitError is returned (wrapped in *url.Error by net/http) when GitHub's primary or
// secondary rate limit would need a longer wait than the configured maximum. Reset is when a
// retry may succeed; callers requeue until then. errors.Is(err, ErrRateLimited) is true.
type RateLimitError struct {
	Reset     time.Time
	Resource  string // x-ratelimit-resource, e.g. "core"; empty for secondary limits
	Secondary bool
}

func (e *RateLimitError) Error() string {
	kind := "primary"
	if e.Secondary {
		kind = "secondary"
	}
	return fmt.Sprintf("github %s rate limit exceeded until %s", kind, e.Reset.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// RetryAt implements lifecycle.RetryAfter: a retry may succeed at Reset.
func (e *RateLimitError) RetryAt() (time.Time, bool) { return e.Reset, true }

// rateLimits remembers the last x-ratelimit-remaining/reset per resource, so that a request is
// not even sent while a known-exhausted limit has not reset.
type rateLimits struct {
	mu    sync.Mutex
	state map[string]rateState
	// pausedUntil holds every request of the client back after a secondary limit, so that
	// concurrent callers back off too instead of hammering GitHub.
	pausedUntil time.Time
}

func (r *rateLimits) pause(until time.Time) {
	r.mu.Lock()
	if until.After(r.pausedUntil) {
		r.pausedUntil = until
	}
	r.mu.Unlock()
}

type rateState struct {
	remaining int
	reset     time.Time
}

func newRateLimits() *rateLimits { return &rateLimits{state: map[string]rateState{}} }

// resourceOf guesses the rate-limit resource of a request before it is sent.
func resourceOf(req *http.Request) string {
	p := strings.TrimPrefix(req.URL.Path, "/api/v3")
	switch {
	case strings.HasPrefix(p, "/search/"):
		return "search"
	case strings.HasPrefix(p, "/graphql") || strings.HasPrefix(p, "/api/graphql"):
		return "graphql"
	}
	return "core"
}

func (r *rateLimits) observe(resp *http.Response) {
	rem, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	if err != nil {
		return
	}
	reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return
	}
	res := resp.Header.Get("X-RateLimit-Resource")
	if res == "" {
		res = "core"
	}
	r.mu.Lock()
	r.state[res] = rateState{remaining: rem, reset: time.Unix(reset, 0)}
	r.mu.Unlock()
}

// blocked reports until when req must not be sent: its resource is known to have no calls
// left (primary) or the client is backing off from a secondary limit.
func (r *rateLimits) blocked(req *http.Request, now time.Time) (limit *RateLimitError) {
	res := resourceOf(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.state[res]; ok && st.remaining <= 0 && now.Before(st.reset) {
		return &RateLimitError{Reset: st.reset, Resource: res}
	}
	if now.Before(r.pausedUntil) {
		return &RateLimitError{Reset: r.pausedUntil, Secondary: true}
	}
	return nil
}

// retryTransport retries what is safe to retry and waits out rate limits:
//
//   - 5xx and network errors: only idempotent requests (see idempotent), with capped
//     exponential backoff and jitter; a Retry-After on a 5xx is honoured. A request that never
//     left (connection refused) is retried whatever its method.
//   - primary rate limit (403/429 with x-ratelimit-remaining: 0): wait until x-ratelimit-reset
//     if that is within maxWait, else *RateLimitError. GitHub did not act on the request, so
//     any method is retried.
//   - secondary rate limit (429, 403 with Retry-After, or GitHub's "secondary rate limit"
//     message): wait Retry-After (default 60 s, doubled on each further hit) if within maxWait,
//     else *RateLimitError{Secondary: true}. Any method is retried, and every other request of
//     the client waits until the same time.
//
// A mutation gives the serializer's slot up for every one of these waits (waitOutsideSlot),
// so that one pull request's wait does not hold up the mutations of the others.
//
// Why not github.com/gofri/go-github-ratelimit (v2.0.2, evaluated 2026-11): run against a
// local server, its secondary limiter passed a 403 "You have exceeded a secondary rate limit"
// without Retry-After or x-ratelimit-reset straight through after 1 ms and 1 request (GitHub
// asks for at least a minute; this transport waits 60 s, doubling), and passed a 429 with
// Retry-After whose body is not worded like GitHub's through after 1 request (this transport
// waits Retry-After and retries). Its primary limiter never waits, only fails. It sleeps on
// time.Timer, so its waits cannot be asserted with a fake Clock as TestRetryTransport does,
// and it does not retry 5xx or network errors, so the idempotency rules below would stay
// hand-written anyway. Replaying a POST body after a wait worked in both.
type retryTransport struct {
	next   http.RoundTripper
	s      settings
	limits *rateLimits
}

func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.s.backoffBase
	for i := 0; i < attempt && d < t.s.backoffCap; i++ {
		d *= 2
	}
	if d > t.s.backoffCap {
		d = t.s.backoffCap
	}
	if t.s.jitter != nil {
		d = t.s.jitter(d)
	}
	return d
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	clock := t.s.clock
	safe := idempotent(req)
	secondaryHits := 0
	for attempt := 0; ; attempt++ {
		if rl := t.limits.blocked(req, clock.Now()); rl != nil {
			wait := rl.Reset.Sub(clock.Now())
			if !rl.Secondary {
				wait += time.Second // reset is whole seconds; do not arrive early
			}
			if wait > t.s.maxWait {
				closeBody(req)
				deferredTotal.WithLabelValues(limitReason(rl)).Inc()
				return nil, rl
			}
			waitSeconds.WithLabelValues(limitReason(rl)).Observe(wait.Seconds())
			if err := waitOutsideSlot(ctx, clock, wait); err != nil {
				closeBody(req)
				return nil, err
			}
		}
		r, err := rewind(req, attempt)
		if err != nil {
			return nil, err
		}
		resp, err := t.next.RoundTrip(r)
		last := attempt >= t.s.maxRetries
		var wait time.Duration
		var reason string
		switch {
		case err != nil:
			var paced *RateLimitError
			if errors.As(err, &paced) || errors.Is(err, ErrRefMoved) || ctx.Err() != nil || last || !(safe || neverSent(err)) {
				// The pacer underneath refused to wait that long, or the branch moved under an
				// update: requeue, do not retry.
				return nil, err
			}
			wait, reason = t.backoff(attempt), "network"
		default:
			t.limits.observe(resp)
			kind, limitWait, reset := t.classify(resp, secondaryHits)
			switch kind {
			case "":
				return resp, nil
			case "rate_limit", "secondary_rate_limit":
				errorsTotal.WithLabelValues(kind).Inc()
				if kind == "secondary_rate_limit" {
					secondaryHits++
					t.limits.pause(reset)
				}
				if limitWait > t.s.maxWait {
					drain(resp)
					deferredTotal.WithLabelValues(kind).Inc()
					return nil, &RateLimitError{Reset: reset, Resource: resp.Header.Get("X-RateLimit-Resource"), Secondary: kind == "secondary_rate_limit"}
				}
				if last {
					return resp, nil
				}
				wait, reason = limitWait, kind
				waitSeconds.WithLabelValues(kind).Observe(wait.Seconds())
			case "server_error":
				if last || !safe {
					return resp, nil
				}
				wait, reason = t.backoff(attempt), "server_error"
				if ra, ok := retryAfter(resp.Header, clock.Now()); ok && ra > wait {
					wait = ra
				}
			}
			drain(resp)
		}
		retriesTotal.WithLabelValues(reason).Inc()
		if err := waitOutsideSlot(ctx, clock, wait); err != nil {
			closeBody(req)
			return nil, err
		}
	}
}

// limitReason is the metric label of a rate-limit wait.
func limitReason(rl *RateLimitError) string {
	if rl.Secondary {
		return "secondary_rate_limit"
	}
	return "rate_limit"
}

// classify tells whether resp is a rate-limit or server error, and how long to wait.
func (t *retryTransport) classify(resp *http.Response, secondaryHits int) (kind string, wait time.Duration, reset time.Time) {
	now := t.s.clock.Now()
	code := resp.StatusCode
	switch {
	case code >= 500:
		return "server_error", 0, time.Time{}
	case code != http.StatusForbidden && code != http.StatusTooManyRequests:
		return "", 0, time.Time{}
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if sec, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			reset = time.Unix(sec, 0)
			wait = reset.Sub(now) + time.Second
			if wait < 0 {
				wait = 0
			}
			return "rate_limit", wait, reset
		}
	}
	ra, hasRA := retryAfter(resp.Header, now)
	if code == http.StatusTooManyRequests || hasRA || isSecondaryBody(resp) {
		if !hasRA {
			ra = t.s.secondaryDefault
			for i := 0; i < secondaryHits && ra < time.Hour; i++ {
				ra *= 2
			}
		}
		return "secondary_rate_limit", ra, now.Add(ra)
	}
	return "", 0, time.Time{} // a plain 403: permissions
}

// isSecondaryBody peeks at a 403 body for GitHub's secondary-limit wording, restoring the body.
func isSecondaryBody(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if err != nil {
		return false
	}
	s := strings.ToLower(string(b))
	return strings.Contains(s, "secondary rate limit") || strings.Contains(s, "abuse detection")
}

// retryAfter parses Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// rewind returns the request for one attempt with a fresh body.
func rewind(req *http.Request, attempt int) (*http.Request, error) {
	if attempt == 0 || req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("github: cannot retry a request whose body cannot be replayed")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // only to reuse the connection
	_ = resp.Body.Close()
}

// neverSent reports errors after which the server cannot have seen the request.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// idempotentEndpoints lists the non-read requests the PR actuator makes whose repetition has
// no further effect, by method and endpoint template. Everything else (creating commits, refs,
// pull requests; merging) is never repeated after a 5xx or a dropped connection: the caller
// re-reads state and decides.
var idempotentEndpoints = map[string]bool{
	"PATCH /repos/:owner/:repo/git/refs/:ref":          true, // set a ref to a given SHA
	"DELETE /repos/:owner/:repo/git/refs/:ref":         true, // a repeat gets 422, DeleteRef treats it as done
	"PATCH /repos/:owner/:repo/pulls/:number":          true, // set title/body/state
	"POST /repos/:owner/:repo/issues/:number/labels":   true, // set union
	"PUT /repos/:owner/:repo/issues/:number/labels":    true, // replace
	"POST /repos/:owner/:repo/git/trees":               true, // content-addressed: same input, same SHA
	"DELETE /repos/:owner/:repo/issues/:number/labels": true,
	"POST " + tokenExchangeEndpoint:                    true, // a second token is harmless
}

func idempotent(req *http.Request) bool {
	if isRead(req.Method) {
		return true
	}
	return idempotentEndpoints[req.Method+" "+endpointTemplate(req.URL.Path)]
}
