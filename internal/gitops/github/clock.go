package github

import (
	"context"
	"time"
)

// Clock is the time source and sleeper of the transport chain; tests inject a fake one so
// backoff and rate-limit waits are asserted, not slept.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() in the latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
