package main

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
)

// seenEvent is what the watch saw of one reason about one object.
type seenEvent struct {
	seen  time.Time // when the watch delivered the first such Event
	stamp time.Time // that Event's lastTimestamp: Kustos's decision time, in whole seconds
	count int       // such Events (distinct names)
}

// eventWatcher follows every Event Kustos writes (source.component "kustos") through one list
// and watch, started before Kustos.
type eventWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	deployments map[string]map[string]*seenEvent // "namespace/name" → reason
	total       int                              // every Kustos Event seen
	other       []string                         // Events about anything but a Deployment
	err         error
}

func startEventWatcher(ctx context.Context, cs kubernetes.Interface, logf func(string, ...any)) (*eventWatcher, error) {
	sel := fields.OneTermEqualSelector("source", kustosComponent).String()
	list, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing Kustos Events: %w", err)
	}
	w := &eventWatcher{done: make(chan struct{}), deployments: map[string]map[string]*seenEvent{}}
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
		for {
			closed := w.drain(ctx, wi, &rv)
			wi.Stop()
			if !closed {
				return
			}
			// The server closed the watch: resume where it left off.
			logf("Event watch closed by the server; resuming at resourceVersion %s", rv)
			if wi, err = open(); err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("resuming the Event watch: %w", err))
				}
				return
			}
		}
	}()
	return w, nil
}

// drain handles one watch until ctx ends or it fails (false) or the server closes it (true).
func (w *eventWatcher) drain(ctx context.Context, wi watch.Interface, rv *string) bool {
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
			w.fail(fmt.Errorf("event watch failed: %v", ev.Object))
			return false
		}
		if m, isMeta := ev.Object.(metav1.Object); isMeta {
			*rv = m.GetResourceVersion()
		}
		e, isEvent := ev.Object.(*corev1.Event)
		// Kustos writes each Event once under a name derived from what it reports: a new
		// Event is an ADDED one. Bookmarks only move the resourceVersion on.
		if isEvent && ev.Type == watch.Added {
			w.note(e, now)
		}
	}
}

func (w *eventWatcher) note(e *corev1.Event, at time.Time) {
	if e.Source.Component != kustosComponent {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total++
	o := e.InvolvedObject
	if o.Kind != "Deployment" {
		if len(w.other) < 10 {
			w.other = append(w.other, fmt.Sprintf("%s about %s %s/%s", e.Reason, o.Kind, o.Namespace, o.Name))
		}
		return
	}
	key := o.Namespace + "/" + o.Name
	byReason := w.deployments[key]
	if byReason == nil {
		byReason = map[string]*seenEvent{}
		w.deployments[key] = byReason
	}
	s := byReason[e.Reason]
	if s == nil {
		s = &seenEvent{seen: at, stamp: e.LastTimestamp.Time}
		byReason[e.Reason] = s
	}
	s.count++
}

func (w *eventWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// get returns what was seen of reason about the Deployment namespace/name (zero: nothing).
func (w *eventWatcher) get(key, reason string) seenEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.deployments[key][reason]; s != nil {
		return *s
	}
	return seenEvent{}
}

// count returns the Kustos Events seen so far.
func (w *eventWatcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// tally counts, over the whole run so far, the Kustos Events about Deployments for which
// expected is false, and describes a few; others are the Events about anything else.
func (w *eventWatcher) tally(expected func(key, reason string) bool) (n int, examples, others []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, byReason := range w.deployments {
		for reason, s := range byReason {
			if expected(key, reason) {
				continue
			}
			n += s.count
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%s about Deployment %s", reason, key))
			}
		}
	}
	return n, examples, append([]string(nil), w.other...)
}

// wait polls cond until it holds (true), the watch failed, ctx ends or deadline passes.
// The times measured are taken by the watch itself, so polling costs no accuracy.
func (w *eventWatcher) wait(ctx context.Context, deadline time.Time, cond func() bool) (bool, error) {
	t := time.NewTicker(50 * time.Millisecond)
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

func (w *eventWatcher) stop() error {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil && !errors.Is(w.err, context.Canceled) {
		return w.err
	}
	return nil
}
