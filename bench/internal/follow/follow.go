package follow

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Resume hands wi to drain until drain returns: false when it is done (its context ended or the
// watch failed), true when the server closed the watch, which open then reopens at *rv (the
// resourceVersion drain moved on). An error reopening goes to fail unless ctx ended. It returns
// when drain is done; run it in a goroutine of its own.
func Resume(ctx context.Context, what string, wi watch.Interface, rv *string, open func() (watch.Interface, error),
	drain func(watch.Interface) bool, fail func(error), logf func(string, ...any)) {
	for {
		closed := drain(wi)
		wi.Stop()
		if !closed {
			return
		}
		logf("%s watch closed by the server; resuming at resourceVersion %s", what, *rv)
		var err error
		if wi, err = open(); err != nil {
			if ctx.Err() == nil {
				fail(fmt.Errorf("resuming the %s watch: %w", what, err))
			}
			return
		}
	}
}

// Drain hands each event of wi, with the time the watch delivered it, to handle until ctx ends
// or the watch reports an error, which goes to fail (false), or the server closes it (true).
func Drain(ctx context.Context, what string, wi watch.Interface, fail func(error), handle func(watch.Event, time.Time)) bool {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return false
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return true
		}
		now := time.Now()
		if ev.Type == watch.Error {
			fail(fmt.Errorf("%s watch failed: %v", what, ev.Object))
			return false
		}
		handle(ev, now)
	}
}

// Until polls cond every period until it holds (true), failed returns an error, ctx ends or
// deadline passes (false, no error).
func Until(ctx context.Context, period time.Duration, deadline time.Time, failed func() error, cond func() bool) (bool, error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := failed(); err != nil {
			return false, err
		}
		if cond() {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
	}
}
