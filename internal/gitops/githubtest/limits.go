package githubtest

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// SecondaryLimits are GitHub's documented secondary rate limits ("About secondary rate
// limits"), which the server enforces on REST calls (not on Git over HTTP) by the time of
// Options.Now. A request over a limit is answered as GitHub does: 403 with the secondary-limit
// message and documentation_url, and Retry-After in seconds; it does nothing, is not counted
// in the windows, and is counted by [Server.SecondaryLimited]. For each field 0 means GitHub's
// number and a negative value turns that limit off.
type SecondaryLimits struct {
	// Concurrent is how many REST requests may be in progress at once (GitHub: 100). Over it,
	// Retry-After is 60 seconds.
	Concurrent int
	// ContentPerMinute and ContentPerHour bound content-creating requests (POST, PATCH, PUT,
	// DELETE; the App's token exchange excepted) in any minute and any hour (GitHub: 80 and
	// 500). Retry-After is when the oldest request of the window leaves it.
	ContentPerMinute int
	ContentPerHour   int
	// EndpointPointsPerMinute bounds the points spent on one endpoint (method and path
	// template) in any minute (GitHub: 900); GET, HEAD and OPTIONS cost 1 point, every other
	// method 5.
	EndpointPointsPerMinute int
}

// GitHub's numbers.
const (
	DefaultConcurrent              = 100
	DefaultContentPerMinute        = 80
	DefaultContentPerHour          = 500
	DefaultEndpointPointsPerMinute = 900
)

// Why a request was refused, as Request.Limited.
const (
	LimitConcurrent       = "concurrent"
	LimitContentPerMinute = "content_per_minute"
	LimitContentPerHour   = "content_per_hour"
	LimitEndpointPoints   = "endpoint_points"
)

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// limiter keeps the windows of SecondaryLimits.
type limiter struct {
	lim SecondaryLimits

	mu       sync.Mutex
	inFlight int
	content  []time.Time // arrival of admitted content-creating requests, oldest first
	points   map[string][]spent
	limited  map[string]int
}

type spent struct {
	at     time.Time
	points int
}

func newLimiter(l SecondaryLimits) *limiter {
	l.Concurrent = orDefault(l.Concurrent, DefaultConcurrent)
	l.ContentPerMinute = orDefault(l.ContentPerMinute, DefaultContentPerMinute)
	l.ContentPerHour = orDefault(l.ContentPerHour, DefaultContentPerHour)
	l.EndpointPointsPerMinute = orDefault(l.EndpointPointsPerMinute, DefaultEndpointPointsPerMinute)
	return &limiter{lim: l, points: map[string][]spent{}, limited: map[string]int{}}
}

func isContent(method, template string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return template != tokenExchangeTemplate
}

const tokenExchangeTemplate = "/app/installations/{installation_id}/access_tokens" //nolint:gosec // G101: an endpoint template, not a credential

// admit decides on one REST request arriving at now. When it is over a limit, reason names
// the limit and retryAfter is how long the client must wait; otherwise the request is
// counted, is in progress until done is called, and reason is "".
func (l *limiter) admit(method, template string, now time.Time) (reason string, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	content := isContent(method, template)
	cost := 5
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		cost = 1
	}
	endpoint := method + " " + template
	l.points[endpoint] = keepAfter(l.points[endpoint], now.Add(-time.Minute))
	l.content = keepTimesAfter(l.content, now.Add(-time.Hour))
	inMinute := l.content[firstAfter(l.content, now.Add(-time.Minute)):]
	switch {
	case l.lim.Concurrent > 0 && l.inFlight >= l.lim.Concurrent:
		reason, retryAfter = LimitConcurrent, time.Minute
	case content && l.lim.ContentPerMinute > 0 && len(inMinute) >= l.lim.ContentPerMinute:
		reason = LimitContentPerMinute
		retryAfter = inMinute[len(inMinute)-l.lim.ContentPerMinute].Add(time.Minute).Sub(now)
	case content && l.lim.ContentPerHour > 0 && len(l.content) >= l.lim.ContentPerHour:
		reason = LimitContentPerHour
		retryAfter = l.content[len(l.content)-l.lim.ContentPerHour].Add(time.Hour).Sub(now)
	case l.lim.EndpointPointsPerMinute > 0 && sum(l.points[endpoint])+cost > l.lim.EndpointPointsPerMinute:
		reason = LimitEndpointPoints
		// When enough of the oldest points have left the window.
		es, need := l.points[endpoint], sum(l.points[endpoint])+cost-l.lim.EndpointPointsPerMinute
		for _, e := range es {
			need -= e.points
			if need <= 0 {
				retryAfter = e.at.Add(time.Minute).Sub(now)
				break
			}
		}
	}
	if reason != "" {
		l.limited[reason]++
		return reason, max(retryAfter, time.Second)
	}
	l.inFlight++
	if content {
		l.content = append(l.content, now)
	}
	l.points[endpoint] = append(l.points[endpoint], spent{at: now, points: cost})
	return "", 0
}

// done ends an admitted request.
func (l *limiter) done() {
	l.mu.Lock()
	l.inFlight--
	l.mu.Unlock()
}

// keepTimesAfter drops the times at or before cut (ts is sorted).
func keepTimesAfter(ts []time.Time, cut time.Time) []time.Time {
	return ts[firstAfter(ts, cut):]
}

func firstAfter(ts []time.Time, cut time.Time) int {
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	return i
}

func keepAfter(es []spent, cut time.Time) []spent {
	i := 0
	for i < len(es) && !es[i].at.After(cut) {
		i++
	}
	return es[i:]
}

func sum(es []spent) int {
	n := 0
	for _, e := range es {
		n += e.points
	}
	return n
}

// secondaryLimitReply is GitHub's answer to a request over a secondary limit.
func (s *Server) secondaryLimitReply(reason string, retryAfter time.Duration) (reply, http.Header) {
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	return reply{status: http.StatusForbidden, limited: reason, v: map[string]any{
		"message":           SecondaryRateLimitMessage + "F00D:" + strconv.FormatInt(s.newID(), 16) + ".",
		"documentation_url": SecondaryRateLimitDocURL,
	}}, h
}

// SecondaryLimited is how many requests the server refused for a secondary limit.
func (s *Server) SecondaryLimited() int {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	n := 0
	for _, c := range s.lim.limited {
		n += c
	}
	return n
}

// SecondaryLimitedBy is how many requests each limit (LimitConcurrent, …) refused.
func (s *Server) SecondaryLimitedBy() map[string]int {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.lim.limited {
		out[k] = v
	}
	return out
}

// now is the server's clock (Options.Now).
func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}
