package follow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

func TestResume(t *testing.T) {
	ctx := context.Background()
	rv := "1"
	opened := 0
	var logged []string
	logf := func(f string, a ...any) { logged = append(logged, f) }
	var failed error
	drains := 0
	// The server closes the first two watches; the third is drained to its end.
	Resume(ctx, "Event", watch.NewEmptyWatch(), &rv, func() (watch.Interface, error) {
		opened++
		return watch.NewEmptyWatch(), nil
	}, func(watch.Interface) bool {
		drains++
		rv = strings.Repeat("1", drains+1)
		return drains < 3
	}, func(err error) { failed = err }, logf)
	if drains != 3 || opened != 2 || len(logged) != 2 || failed != nil {
		t.Errorf("drains %d, opened %d, logged %d, failed %v", drains, opened, len(logged), failed)
	}
	boom := errors.New("refused")
	Resume(ctx, "Cleaner", watch.NewEmptyWatch(), &rv, func() (watch.Interface, error) { return nil, boom },
		func(watch.Interface) bool { return true }, func(err error) { failed = err }, logf)
	if !errors.Is(failed, boom) || !strings.Contains(failed.Error(), "resuming the Cleaner watch") {
		t.Errorf("a reopen that failed: %v", failed)
	}
}

func TestUntil(t *testing.T) {
	ctx := context.Background()
	none := func() error { return nil }
	n := 0
	if ok, err := Until(ctx, time.Millisecond, time.Now().Add(time.Minute), none, func() bool { n++; return n == 3 }); !ok || err != nil || n != 3 {
		t.Errorf("holds on the third poll: %v %v %d", ok, err, n)
	}
	if ok, err := Until(ctx, time.Millisecond, time.Now().Add(5*time.Millisecond), none, func() bool { return false }); ok || err != nil {
		t.Errorf("deadline: %v %v", ok, err)
	}
	boom := errors.New("watch failed")
	if ok, err := Until(ctx, time.Millisecond, time.Now().Add(time.Minute), func() error { return boom }, func() bool { return true }); ok || !errors.Is(err, boom) {
		t.Errorf("failed: %v %v", ok, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Until(cctx, time.Millisecond, time.Now().Add(time.Minute), none, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestDrain(t *testing.T) {
	ctx := context.Background()
	fw := watch.NewFake()
	go func() {
		fw.Add(nil)
		fw.Modify(nil)
		fw.Stop() // the server closes it
	}()
	var types []watch.EventType
	if closed := Drain(ctx, "Event", fw, func(error) { t.Error("failed") }, func(ev watch.Event, at time.Time) {
		if at.IsZero() {
			t.Error("no delivery time")
		}
		types = append(types, ev.Type)
	}); !closed || len(types) != 2 || types[0] != watch.Added || types[1] != watch.Modified {
		t.Errorf("closed %v, events %v", closed, types)
	}

	fw = watch.NewFake()
	go fw.Error(nil)
	var failed error
	if closed := Drain(ctx, "Cleaner", fw, func(err error) { failed = err }, func(watch.Event, time.Time) {}); closed ||
		failed == nil || !strings.Contains(failed.Error(), "Cleaner watch failed") {
		t.Errorf("an error: closed %v, %v", closed, failed)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if Drain(cctx, "Event", watch.NewFake(), func(error) {}, func(watch.Event, time.Time) {}) {
		t.Error("cancelled: closed")
	}
}
