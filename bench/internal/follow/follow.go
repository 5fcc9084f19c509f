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
