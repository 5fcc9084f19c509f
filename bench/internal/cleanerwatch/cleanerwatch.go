package cleanerwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/bench/internal/follow"
)

// Seen is what the watch saw of one Cleaner; times are when the watch delivered it.
type Seen struct {
	Evaluated time.Time   // first status with lastEvaluation
	Due       time.Time   // first status with lastEvaluation.due
	DueEval   metav1.Time // lastEvaluation.time of that status
	Deleted   bool
	Last      *v1alpha1.Cleaner // as last delivered
}

// Watcher follows every Cleaner in the cluster through one list and watch.
type Watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	cleaners  map[string]*Seen // "namespace/name"
	evaluated int
	modified  int // MODIFIED events: status writes, as Kustos writes nothing else
	lastWrite time.Time
	err       error
	// trace, when set, is called (under mu) with a Cleaner's previous and new version on
	// every status write.
	trace func(old, cl *v1alpha1.Cleaner)
}

// Start lists and then watches every Cleaner, resuming the watch where the server closed it.
func Start(ctx context.Context, c client.WithWatch, logf func(string, ...any)) (*Watcher, error) {
	var list v1alpha1.CleanerList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Cleaners: %w", err)
	}
	w := &Watcher{done: make(chan struct{}), cleaners: map[string]*Seen{}}
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
		follow.Resume(ctx, "Cleaner", wi, &rv, open, func(wi watch.Interface) bool { return w.drain(ctx, wi, &rv) }, w.fail, logf)
	}()
	return w, nil
}

// drain handles one watch until ctx ends or it fails (false) or the server closes it (true).
func (w *Watcher) drain(ctx context.Context, wi watch.Interface, rv *string) bool {
	return follow.Drain(ctx, "Cleaner", wi, w.fail, func(ev watch.Event, at time.Time) {
		cl, isCleaner := ev.Object.(*v1alpha1.Cleaner)
		if !isCleaner {
			return
		}
		*rv = cl.ResourceVersion
		if ev.Type != watch.Bookmark {
			w.note(ev.Type, cl, at)
		}
	})
}

func (w *Watcher) note(typ watch.EventType, cl *v1alpha1.Cleaner, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cl.Namespace + "/" + cl.Name
	s := w.cleaners[key]
	if s == nil {
		s = &Seen{}
		w.cleaners[key] = s
	}
	old := s.Last
	s.Last = cl
	switch typ {
	case watch.Deleted:
		s.Deleted = true
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
	if s.Evaluated.IsZero() {
		s.Evaluated = at
		w.evaluated++
	}
	if ev.Due && s.Due.IsZero() {
		s.Due, s.DueEval = at, ev.Time
	}
}

// SetTrace sets a function called (under the lock) with a Cleaner's previous and new version
// on every status write; nil: none.
func (w *Watcher) SetTrace(f func(old, cl *v1alpha1.Cleaner)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trace = f
}

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Get returns a copy of what was seen of the Cleaner namespace/name.
func (w *Watcher) Get(key string) Seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.cleaners[key]; s != nil {
		return *s
	}
	return Seen{}
}

// Counts returns the Cleaners evaluated at least once and the status writes seen so far.
func (w *Watcher) Counts() (evaluated, modified int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.evaluated, w.modified
}

// LastWriteAt returns when the watch delivered the last status write.
func (w *Watcher) LastWriteAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastWrite
}

// Wait polls cond until it holds (true), the watch failed, ctx ends or deadline passes.
// The times measured are taken by the watch itself, so polling costs no accuracy.
func (w *Watcher) Wait(ctx context.Context, deadline time.Time, cond func() bool) (bool, error) {
	return follow.Until(ctx, 20*time.Millisecond, deadline, w.failed, cond)
}

func (w *Watcher) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}
