package extension

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/lru"
)

// limiter is a token bucket per key (perMinute requests a minute, refilled continuously),
// keeping at most size buckets, least recently used first out. A forgotten bucket starts full
// again: the bound can only let a client through early, never refuse one.
type limiter struct {
	perMinute float64
	mu        sync.Mutex // makes read-refill-write one step; lru.Cache locks each call only
	buckets   *lru.Cache
}

func newLimiter(perMinute, size int) *limiter {
	return &limiter{perMinute: float64(perMinute), buckets: lru.New(size)}
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take spends one request of key's at now; refused, it says how long until the next is
// allowed (whole seconds, at least one: what Retry-After says).
func (l *limiter) take(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := bucket{tokens: l.perMinute, at: now}
	if v, ok := l.buckets.Get(key); ok {
		b = v.(bucket)
		if now.After(b.at) {
			b.tokens = min(l.perMinute, b.tokens+now.Sub(b.at).Minutes()*l.perMinute)
			b.at = now
		}
	}
	if b.tokens >= 1 {
		b.tokens--
		l.buckets.Add(key, b)
		return true, 0
	}
	l.buckets.Add(key, b)
	wait := math.Ceil((1 - b.tokens) / l.perMinute * 60)
	return false, time.Duration(max(1, wait)) * time.Second
}
