package kevents

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWatcherNoteGetTally(t *testing.T) {
	w := &Watcher{objects: map[string]map[string]map[string]*Seen{}}
	at := time.Now()
	ev := func(name, ns, obj, kind, reason, component string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: obj},
			Reason:         reason, Source: corev1.EventSource{Component: component}, LastTimestamp: metav1.NewTime(at.Truncate(time.Second))}
	}
	w.note(ev("a.1", "sched", "due-000", "Deployment", "ExpiryWarning", Component), at)
	w.note(ev("a.2", "sched", "due-000", "Deployment", "ExpiryDue", Component), at.Add(time.Second))
	w.note(ev("a.3", "sched", "due-000", "Deployment", "ExpiryDue", Component), at.Add(2*time.Second))
	w.note(ev("b.1", "expiry-001", "env-00001", "Deployment", "ExpiryWarning", Component), at)
	w.note(ev("c.1", "default", "expiry-001", "Namespace", "InvalidExpiryMetadata", Component), at)
	w.note(ev("d.1", "expiry-002", "env-00002", "Deployment", "ExpiryWarning", "kubelet"), at) // not Kustos's
	if w.Count() != 5 {
		t.Errorf("count %d, want 5", w.Count())
	}
	due := w.Get("Deployment", "sched/due-000", "ExpiryDue")
	if due.Count != 2 || !due.Seen.Equal(at.Add(time.Second)) || !due.Stamp.Equal(at.Truncate(time.Second)) {
		t.Errorf("due: %+v", due)
	}
	if w.Get("Deployment", "expiry-002/env-00002", "ExpiryWarning").Count != 0 {
		t.Error("an Event by another component was counted")
	}
	if w.Get("Namespace", "sched/due-000", "ExpiryDue").Count != 0 {
		t.Error("the kind is part of the key")
	}
	if got := w.ByReason(); got["ExpiryDue"] != 2 || got["ExpiryWarning"] != 2 || got["InvalidExpiryMetadata"] != 1 || len(got) != 3 {
		t.Errorf("by reason: %v", got)
	}
	n, examples := w.Tally(func(kind, key, _ string) bool { return kind == "Deployment" && strings.HasPrefix(key, "sched/") })
	if n != 2 || len(examples) != 2 || !strings.Contains(strings.Join(examples, ";"), "Deployment expiry-001/env-00001") ||
		!strings.Contains(strings.Join(examples, ";"), "InvalidExpiryMetadata about Namespace default/expiry-001") {
		t.Errorf("tally: %d %q", n, examples)
	}
}
