package github

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"
)

// fakeClock records sleeps and advances time by them instead of sleeping.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func noJitter(d time.Duration) time.Duration { return d }

// osWriteFileTime writes content to path and sets its modification time to mtime, so that a
// reader that caches by modification time sees the change.
func osWriteFileTime(path, content string, mtime time.Time) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Chtimes(path, mtime, mtime)
}

// roundTrip sends req and closes the body of any response, for calls whose answer a test does
// not read (it expects an error, or runs the call in a goroutine). It returns the status (0
// without a response) and the error.
func roundTrip(rt http.RoundTripper, req *http.Request) (int, error) {
	resp, err := rt.RoundTrip(req)
	if resp == nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, err
}
