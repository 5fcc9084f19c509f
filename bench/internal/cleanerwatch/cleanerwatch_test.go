package cleanerwatch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

func TestNote(t *testing.T) {
	w := &Watcher{cleaners: map[string]*Seen{}}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cl := func(due bool, evaluated bool) *v1alpha1.Cleaner {
		c := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		if evaluated {
			c.Status.LastEvaluation = &v1alpha1.Evaluation{Due: due, Time: metav1.NewTime(at.Truncate(time.Second))}
		}
		return c
	}
	var traced int
	w.SetTrace(func(_, _ *v1alpha1.Cleaner) { traced++ })
	w.note(watch.Added, cl(false, false), at)
	w.note(watch.Modified, cl(false, true), at.Add(time.Second))
	w.note(watch.Modified, cl(true, true), at.Add(2*time.Second))
	w.note(watch.Modified, cl(true, true), at.Add(3*time.Second))
	s := w.Get("ns/c")
	if !s.Evaluated.Equal(at.Add(time.Second)) || !s.Due.Equal(at.Add(2*time.Second)) || s.Deleted || s.Last == nil {
		t.Errorf("seen: %+v", s)
	}
	if ev, mod := w.Counts(); ev != 1 || mod != 3 || traced != 3 || !w.LastWriteAt().Equal(at.Add(3*time.Second)) {
		t.Errorf("evaluated %d, modified %d, traced %d, last write %s", ev, mod, traced, w.LastWriteAt())
	}
	w.note(watch.Deleted, cl(true, true), at.Add(4*time.Second))
	if !w.Get("ns/c").Deleted || !w.Get("ns/other").Due.IsZero() {
		t.Error("deleted, or an unknown Cleaner")
	}
}
