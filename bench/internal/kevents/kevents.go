package kevents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/follow"
)

// Component is the source.component of the Events Kustos writes.
const Component = "kustos"

// Seen is what the watch saw of one reason about one object.
type Seen struct {
	Seen  time.Time // when the watch delivered the first such Event
	Stamp time.Time // that Event's lastTimestamp: Kustos's decision time, in whole seconds
	Count int       // such Events (distinct names)
}

// Watcher follows every Event Kustos writes (source.component "kustos") through one list and
// watch, started before Kustos.
type Watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	objects map[string]map[string]map[string]*Seen // kind → "namespace/name" → reason
	total   int                                    // every Kustos Event seen
	err     error
}

// Start lists and then watches Kustos's Events in all namespaces, resuming the watch where the
// server closed it.
func Start(ctx context.Context, cs kubernetes.Interface, logf func(string, ...any)) (*Watcher, error) {
	sel := fields.OneTermEqualSelector("source", Component).String()
	list, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing Kustos Events: %w", err)
	}
	w := &Watcher{done: make(chan struct{}), objects: map[string]map[string]map[string]*Seen{}}
	now := time.Now()
	for i := range list.Items {
		w.note(&list.Items[i], now)
	}
	ctx, w.cancel = context.WithCancel(ctx)
	rv := list.ResourceVersion
	open := func() (watch.Interface, error) {
		return cs.CoreV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	wi, err := open()
	if err != nil {
		w.cancel()
		return nil, fmt.Errorf("watching Kustos Events: %w", err)
	}
	go func() {
		defer close(w.done)
		follow.Resume(ctx, "Event", wi, &rv, open, func(wi watch.Interface) bool { return w.drain(ctx, wi, &rv) }, w.fail, logf)
	}()
	return w, nil
}

// drain handles one watch until ctx ends or it fails (false) or the server closes it (true).
func (w *Watcher) drain(ctx context.Context, wi watch.Interface, rv *string) bool {
	return follow.Drain(ctx, "Event", wi, w.fail, func(ev watch.Event, at time.Time) {
		if m, isMeta := ev.Object.(metav1.Object); isMeta {
			*rv = m.GetResourceVersion()
		}
		e, isEvent := ev.Object.(*corev1.Event)
		// Kustos writes each Event once under a name derived from what it reports: a new
		// Event is an ADDED one. Bookmarks only move the resourceVersion on.
		if isEvent && ev.Type == watch.Added {
			w.note(e, at)
		}
	})
}

func (w *Watcher) note(e *corev1.Event, at time.Time) {
	if e.Source.Component != Component {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total++
	o := e.InvolvedObject
	byKey := w.objects[o.Kind]
	if byKey == nil {
		byKey = map[string]map[string]*Seen{}
		w.objects[o.Kind] = byKey
	}
	key := o.Namespace + "/" + o.Name
	byReason := byKey[key]
	if byReason == nil {
		byReason = map[string]*Seen{}
		byKey[key] = byReason
	}
	s := byReason[e.Reason]
	if s == nil {
		s = &Seen{Seen: at, Stamp: e.LastTimestamp.Time}
		byReason[e.Reason] = s
	}
	s.Count++
}

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Get returns what was seen of reason about the object of kind at key, "namespace/name"
// (zero: nothing).
func (w *Watcher) Get(kind, key, reason string) Seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.objects[kind][key][reason]; s != nil {
		return *s
	}
	return Seen{}
}

// Count returns the Kustos Events seen so far.
func (w *Watcher) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// Tally counts, over the whole run so far, the Kustos Events for which expected (of the
// object's kind, "namespace/name" and the reason) is false, and describes up to five of them.
func (w *Watcher) Tally(expected func(kind, key, reason string) bool) (n int, examples []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for kind, byKey := range w.objects {
		for key, byReason := range byKey {
			for reason, s := range byReason {
				if expected(kind, key, reason) {
					continue
				}
				n += s.Count
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%s about %s %s", reason, kind, key))
				}
			}
		}
	}
	return n, examples
}

// Wait polls cond until it holds (true), the watch failed, ctx ends or deadline passes.
// The times measured are taken by the watch itself, so polling costs no accuracy.
func (w *Watcher) Wait(ctx context.Context, deadline time.Time, cond func() bool) (bool, error) {
	return follow.Until(ctx, 50*time.Millisecond, deadline, w.failed, cond)
}

func (w *Watcher) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch and returns its error, if it failed.
func (w *Watcher) Stop() error {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil && !errors.Is(w.err, context.Canceled) {
		return w.err
	}
	return nil
}

// ByReason counts the Kustos Events seen so far by reason.
func (w *Watcher) ByReason() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, byKey := range w.objects {
		for _, byReason := range byKey {
			for reason, s := range byReason {
				out[reason] += s.Count
			}
		}
	}
	return out
}
