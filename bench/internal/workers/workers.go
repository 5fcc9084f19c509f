// Package workers is the parallel setup the control-plane benchmarks share: thousands of
// objects created by a bounded number of concurrent requests, retrying what a loaded API
// server answers with.
package workers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Parallel calls fn for 0..n-1 on up to workers goroutines and returns the first error; after
// an error, no new calls start.
func Parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// Retry calls call up to 10 times while it fails with what a loaded API server answers with
// (too many requests, timeouts, internal errors, unavailable), waiting 100 ms more each time.
func Retry(ctx context.Context, call func() error) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		err = call()
		if err == nil || !Transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return err
}

// Transient: the API server may well accept the same request a moment later.
func Transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}
