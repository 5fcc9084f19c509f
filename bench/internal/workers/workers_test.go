package workers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParallelCallsEachIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var running, most atomic.Int64
	err := Parallel(context.Background(), 1000, 8, func(_ context.Context, i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d indexes called", len(seen))
	}
	for i, n := range seen {
		if n != 1 || i < 0 || i >= 1000 {
			t.Fatalf("index %d called %d times", i, n)
		}
	}
	if most.Load() > 8 {
		t.Errorf("%d calls at once, want at most 8", most.Load())
	}
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	err := Parallel(context.Background(), 10000, 1, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() != 11 {
		t.Errorf("err %v after %d calls, want boom after 11", err, calls.Load())
	}
	if err := Parallel(context.Background(), 0, 4, nil); err != nil {
		t.Errorf("no work: %v", err)
	}
}

func TestRetry(t *testing.T) {
	busy := apierrors.NewTooManyRequests("slow down", 0)
	n := 0
	if err := Retry(context.Background(), func() error {
		n++
		if n < 3 {
			return busy
		}
		return nil
	}); err != nil || n != 3 {
		t.Errorf("transient: %v after %d calls", err, n)
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	n = 0
	if err := Retry(context.Background(), func() error { n++; return notFound }); !apierrors.IsNotFound(err) || n != 1 {
		t.Errorf("permanent: %v after %d calls", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Retry(ctx, func() error { return busy }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
