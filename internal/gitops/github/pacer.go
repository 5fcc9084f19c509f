package github

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// writePacer keeps the client's content-creating requests (every method but GET, HEAD and
// OPTIONS, except the App's token exchange) under GitHub's secondary limits of 80 a minute
// and 500 an hour, so that Kustos on its own never meets them:
//
//   - a token bucket of perMinute tokens a minute holding at most burst: in any 60 seconds at
//     most perMinute + burst writes leave (defaults 60 + 15 = 75);
//   - an hourly budget of perHour writes in any 60 minutes (default 450), as a log of the
//     send times of the last perHour writes: a bucket refilling by the hour would let a
//     burst of two hours' worth through within one.
//
// Every attempt takes a write (GitHub counts retries too). A write is reserved for a time
// (now, or later when the budget is spent) and the caller waits until then, so writers are
// served in the order they came. A reservation further away than the client's maximum
// rate-limit wait is not taken: the request fails with *RateLimitError{Secondary: true}
// whose Reset is when a write will be free, and its caller requeues until then instead of
// holding a worker for many minutes.
type writePacer struct {
	perMinute int // 0: no per-minute bucket
	perHour   int // 0: no hourly budget
	burst     float64

	mu     sync.Mutex
	tokens float64   // of the minute bucket at last (negative: reserved ahead)
	last   time.Time // when tokens was computed
	sent   []time.Time
}

// writeBurst is the bucket's capacity for perMinute writes a minute: a quarter of a minute's
// writes (15 of 60), so that perMinute + burst stays below GitHub's 80 with the default rate.
func writeBurst(perMinute int) float64 {
	if perMinute <= 0 {
		return 0
	}
	return float64(max(1, perMinute/4))
}

func newWritePacer(perMinute, perHour int) *writePacer {
	if perMinute <= 0 && perHour <= 0 {
		return nil
	}
	b := writeBurst(perMinute)
	return &writePacer{perMinute: max(0, perMinute), perHour: max(0, perHour), burst: b, tokens: b}
}

// Reasons of a pacing wait, as metric labels.
const (
	waitWriteRate   = "write_rate"   // the per-minute bucket
	waitWriteBudget = "write_budget" // the hourly budget
	waitInFlight    = "in_flight"    // the cap on concurrent requests
)

// reserve takes one write to be sent at the returned time (now or later). When that is more
// than maxWait away, nothing is taken and ok is false; at is still when a write will be free.
// reason names the limit that set at ("" when at is now).
func (p *writePacer) reserve(now time.Time, maxWait time.Duration) (at time.Time, reason string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tokens := p.refill(now)
	at = now
	if p.perMinute > 0 && tokens < 1 {
		rate := float64(p.perMinute) / float64(time.Minute)
		at, reason = now.Add(time.Duration((1-tokens)/rate)+1), waitWriteRate
	}
	if p.perHour > 0 && len(p.sent) >= p.perHour {
		// Writes are reserved in order, so sent is sorted: the write perHour back must be an
		// hour old when this one leaves.
		if free := p.sent[len(p.sent)-p.perHour].Add(time.Hour); free.After(at) {
			at, reason = free, waitWriteBudget
		}
	}
	if at.Sub(now) > maxWait {
		p.gauges(now, tokens)
		return at, reason, false
	}
	p.tokens, p.last = tokens-1, now // below 1 until refilled: later writers wait behind this one
	p.sent = append(p.sent, at)
	if p.perHour > 0 && len(p.sent) > p.perHour {
		p.sent = append(p.sent[:0], p.sent[len(p.sent)-p.perHour:]...)
	} else if p.perHour == 0 {
		p.sent = p.sent[:0]
	}
	p.gauges(now, p.tokens)
	return at, reason, true
}

// addEarlier adds the writes of an earlier life of Kustos (sent, read from the write log) to the
// pacer, as if this process had sent them: the hourly log keeps the last perHour of both, and
// the minute bucket gives up a token for each of them sent in the last minute.
func (p *writePacer) addEarlier(sent []time.Time, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lastMinute := 0
	for _, t := range sent {
		if !t.After(now.Add(-time.Hour)) {
			continue
		}
		p.sent = append(p.sent, t)
		if t.After(now.Add(-time.Minute)) {
			lastMinute++
		}
	}
	slices.SortFunc(p.sent, func(a, b time.Time) int { return a.Compare(b) })
	if p.perHour > 0 && len(p.sent) > p.perHour {
		p.sent = append(p.sent[:0], p.sent[len(p.sent)-p.perHour:]...)
	} else if p.perHour == 0 {
		p.sent = p.sent[:0]
	}
	if p.perMinute > 0 && lastMinute > 0 {
		p.tokens, p.last = p.refill(now)-float64(lastMinute), now
	}
	p.gauges(now, p.refill(now))
}

// recent returns the send times of the writes of the hour before now and of those reserved
// after it: what the write log keeps.
func (p *writePacer) recent(now time.Time) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Time
	for _, t := range p.sent {
		if t.After(now.Add(-time.Hour)) {
			out = append(out, t)
		}
	}
	return out
}

// refill returns the minute bucket's tokens at now.
func (p *writePacer) refill(now time.Time) float64 {
	if p.perMinute <= 0 {
		return 1
	}
	if p.last.IsZero() {
		return p.tokens
	}
	elapsed := now.Sub(p.last)
	if elapsed <= 0 {
		return p.tokens
	}
	t := p.tokens + float64(elapsed)*float64(p.perMinute)/float64(time.Minute)
	return min(t, p.burst)
}

// gauges publishes the writes available now, by window. Called with p.mu held.
func (p *writePacer) gauges(now time.Time, tokens float64) {
	if p.perMinute > 0 {
		writeTokens.WithLabelValues("minute").Set(float64(max(0, int(tokens))))
	}
	if p.perHour > 0 {
		used := 0
		for _, t := range p.sent {
			if t.After(now.Add(-time.Hour)) {
				used++
			}
		}
		writeTokens.WithLabelValues("hour").Set(float64(max(0, p.perHour-used)))
	}
}

// isWrite reports a content-creating request: what the pacer spends a write on.
func isWrite(req *http.Request) bool { return !isRead(req.Method) && !isTokenExchange(req) }

// pacedTransport sits under the retry layer, so that every attempt is paced: writes wait for
// the writePacer, and every request (reads too) for one of maxInFlight places on the wire
// (GitHub allows 100 concurrent requests; a client keeps to a few). After those waits it looks
// again at the client's secondary-limit pause, which another request may have set meanwhile:
// nothing leaves before the pause ends.
type pacedTransport struct {
	next   http.RoundTripper
	clock  Clock
	pacer  *writePacer   // nil: writes are not paced
	slots  chan struct{} // nil: no cap on concurrent requests
	limits *rateLimits
	// maxWait bounds each wait, as for rate limits (settings.maxWait).
	maxWait time.Duration
}

func newPacedTransport(next http.RoundTripper, s settings, pacer *writePacer, limits *rateLimits) *pacedTransport {
	t := &pacedTransport{next: next, clock: s.clock, pacer: pacer, limits: limits, maxWait: s.maxWait}
	if s.maxInFlight > 0 {
		t.slots = make(chan struct{}, s.maxInFlight)
	}
	return t
}

func (t *pacedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.pacer != nil && isWrite(req) {
		now := t.clock.Now()
		at, reason, ok := t.pacer.reserve(now, t.maxWait)
		if !ok {
			closeBody(req)
			deferredTotal.WithLabelValues(reason).Inc()
			return nil, &RateLimitError{Reset: at, Secondary: true}
		}
		if d := at.Sub(now); d > 0 {
			waitSeconds.WithLabelValues(reason).Observe(d.Seconds())
			if err := waitOutsideSlot(ctx, t.clock, d); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	}
	var waited time.Time // the end of the pause already waited for
	for {
		release, err := t.acquire(ctx)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		rl := t.limits.blocked(req, t.clock.Now())
		if rl == nil || !rl.Reset.After(waited) {
			resp, err := t.next.RoundTrip(req)
			if err != nil {
				release()
				return nil, err
			}
			resp.Body = &releaseOnClose{ReadCloser: resp.Body, release: release}
			return resp, nil
		}
		release()
		reason := limitReason(rl)
		wait := rl.Reset.Sub(t.clock.Now())
		if !rl.Secondary {
			wait += time.Second // reset is whole seconds; do not arrive early
		}
		if wait > t.maxWait {
			closeBody(req)
			deferredTotal.WithLabelValues(reason).Inc()
			return nil, rl
		}
		waitSeconds.WithLabelValues(reason).Observe(wait.Seconds())
		if err := waitOutsideSlot(ctx, t.clock, wait); err != nil {
			closeBody(req)
			return nil, err
		}
		waited = rl.Reset
	}
}

// acquire takes a place on the wire; release gives it back (once).
func (t *pacedTransport) acquire(ctx context.Context) (release func(), err error) {
	if t.slots == nil {
		inFlight.Inc()
		var once sync.Once
		return func() { once.Do(inFlight.Dec) }, nil
	}
	select {
	case t.slots <- struct{}{}:
	default:
		start := t.clock.Now()
		select {
		case t.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		waitSeconds.WithLabelValues(waitInFlight).Observe(t.clock.Now().Sub(start).Seconds())
	}
	inFlight.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			inFlight.Dec()
			<-t.slots
		})
	}, nil
}

// releaseOnClose gives the request's place on the wire back when its body is read to the end
// or closed: a response is in flight until GitHub has sent all of it.
type releaseOnClose struct {
	io.ReadCloser
	release func()
}

func (r *releaseOnClose) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		r.release()
	}
	return n, err
}

func (r *releaseOnClose) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}
