package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// seen is what the watch saw of one Cleaner; times are when the watch delivered it.
type seen struct {
	evaluated time.Time   // first status with lastEvaluation
	due       time.Time   // first status with lastEvaluation.due
	dueEval   metav1.Time // lastEvaluation.time of that status
	deleted   bool
	last      *v1alpha1.Cleaner // as last delivered
}

// watcher follows every Cleaner in the cluster through one list and watch.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	cleaners  map[string]*seen // "namespace/name"
	evaluated int
	modified  int // MODIFIED events: status writes, as Kustos writes nothing else
	lastWrite time.Time
	err       error
	// trace, when set, is called (under mu) with a Cleaner's previous and new version on
	// every status write.
	trace func(old, cl *v1alpha1.Cleaner)
}

func startWatcher(ctx context.Context, c client.WithWatch, logf func(string, ...any)) (*watcher, error) {
	var list v1alpha1.CleanerList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Cleaners: %w", err)
	}
	w := &watcher{done: make(chan struct{}), cleaners: map[string]*seen{}}
	now := time.Now()
	for i := range list.Items {
		w.note(watch.Added, &list.Items[i], now)
	}
	ctx, w.cancel = context.WithCancel(ctx)
	rv := list.ResourceVersion
	open := func() (watch.Interface, error) {
		return c.Watch(ctx, &v1alpha1.CleanerList{}, &client.ListOptions{
			Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	wi, err := open()
	if err != nil {
		w.cancel()
		return nil, fmt.Errorf("watching Cleaners: %w", err)
	}
	go func() {
		defer close(w.done)
		for {
			closed := w.drain(ctx, wi, &rv)
			wi.Stop()
			if !closed {
				return
			}
			logf("Cleaner watch closed by the server; resuming at resourceVersion %s", rv)
			if wi, err = open(); err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("resuming the Cleaner watch: %w", err))
				}
				return
			}
		}
	}()
	return w, nil
}

// drain handles one watch until ctx ends or it fails (false) or the server closes it (true).
func (w *watcher) drain(ctx context.Context, wi watch.Interface, rv *string) bool {
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
			w.fail(fmt.Errorf("cleaner watch failed: %v", ev.Object))
			return false
		}
		cl, isCleaner := ev.Object.(*v1alpha1.Cleaner)
		if !isCleaner {
			continue
		}
		*rv = cl.ResourceVersion
		if ev.Type != watch.Bookmark {
			w.note(ev.Type, cl, now)
		}
	}
}

func (w *watcher) note(typ watch.EventType, cl *v1alpha1.Cleaner, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cl.Namespace + "/" + cl.Name
	s := w.cleaners[key]
	if s == nil {
		s = &seen{}
		w.cleaners[key] = s
	}
	old := s.last
	s.last = cl
	switch typ {
	case watch.Deleted:
		s.deleted = true
		return
	case watch.Modified:
		w.modified++
		w.lastWrite = at
		if w.trace != nil && old != nil {
			w.trace(old, cl)
		}
	}
	ev := cl.Status.LastEvaluation
	if ev == nil {
		return
	}
	if s.evaluated.IsZero() {
		s.evaluated = at
		w.evaluated++
	}
	if ev.Due && s.due.IsZero() {
		s.due, s.dueEval = at, ev.Time
	}
}

func (w *watcher) setTrace(f func(old, cl *v1alpha1.Cleaner)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trace = f
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// get returns a copy of what was seen of the Cleaner namespace/name.
func (w *watcher) get(key string) seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.cleaners[key]; s != nil {
		return *s
	}
	return seen{}
}

// counts returns the Cleaners evaluated at least once and the status writes seen so far.
func (w *watcher) counts() (evaluated, modified int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.evaluated, w.modified
}

// lastWriteAt returns when the watch delivered the last status write.
func (w *watcher) lastWriteAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastWrite
}

// wait polls cond until it holds (true), the watch failed, ctx ends or deadline passes.
// The times measured are taken by the watch itself, so polling costs no accuracy.
func (w *watcher) wait(ctx context.Context, deadline time.Time, cond func() bool) (bool, error) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		if err != nil {
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

func (w *watcher) stop() {
	w.cancel()
	<-w.done
}
