package state

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWriteLog: the log of GitHub writes in its Lease, on a real API server: read back as saved
// (rounded up to the second), empty before the first save, a hand edit refused with the entry
// it cannot read (and overwritten by the next save), and a write by someone else in between
// costing one save, not the log.
func TestWriteLog(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	sent := []time.Time{t0, t0.Add(1500 * time.Millisecond), t0.Add(time.Minute)}
	want := []time.Time{t0, t0.Add(2 * time.Second), t0.Add(time.Minute)}
	lease := func(t *testing.T, ns string) *coordinationv1.Lease {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: WriteLogLease}, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	rows := []struct {
		name string
		run  func(t *testing.T, ns string)
	}{
		{"no Lease yet: an empty log", func(t *testing.T, ns string) {
			got, err := (&WriteLog{Client: k8s, Namespace: ns}).Load(ctx)
			if err != nil || len(got) != 0 {
				t.Errorf("Load = %v, %v; want nothing", got, err)
			}
		}},
		{"saved by one life, read by the next", func(t *testing.T, ns string) {
			if err := (&WriteLog{Client: k8s, Namespace: ns}).Save(ctx, sent); err != nil {
				t.Fatal(err)
			}
			got, err := (&WriteLog{Client: k8s, Namespace: ns}).Load(ctx)
			if err != nil || !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("Load = %v, %v; want %v", got, err, want)
			}
			l := lease(t, ns)
			if l.Labels[LabelManagedBy] != ManagedByValue || l.Labels[LabelTargetNamespace] != "" || l.Annotations[AnnotationKey] != "" {
				t.Errorf("labels %v, annotations %v: a sweep could take it for a target's state", l.Labels, l.Annotations)
			}
		}},
		{"a hand edit: refused, naming the entry; the next save writes over it", func(t *testing.T, ns string) {
			w := &WriteLog{Client: k8s, Namespace: ns}
			if err := w.Save(ctx, sent); err != nil {
				t.Fatal(err)
			}
			l := lease(t, ns)
			l.Annotations[AnnotationWrites] = "1764417600 yesterday"
			if err := k8s.Update(ctx, l); err != nil {
				t.Fatal(err)
			}
			w = &WriteLog{Client: k8s, Namespace: ns}
			if _, err := w.Load(ctx); err == nil || !strings.Contains(err.Error(), `entry 2, "yesterday"`) {
				t.Fatalf("Load of a hand edit: %v", err)
			}
			if err := w.Save(ctx, sent[:1]); err != nil {
				t.Fatal(err)
			}
			if got, err := w.Load(ctx); err != nil || !slices.EqualFunc(got, want[:1], time.Time.Equal) {
				t.Errorf("after the save: %v, %v", got, err)
			}
		}},
		{"written by someone else since: one save lost, the next one lands", func(t *testing.T, ns string) {
			w := &WriteLog{Client: k8s, Namespace: ns}
			if err := w.Save(ctx, sent[:1]); err != nil {
				t.Fatal(err)
			}
			other := &WriteLog{Client: k8s, Namespace: ns}
			if _, err := other.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if err := other.Save(ctx, sent[:2]); err != nil {
				t.Fatal(err)
			}
			if err := w.Save(ctx, sent); err == nil {
				t.Fatal("a save over someone else's write succeeded")
			}
			if err := w.Save(ctx, sent); err != nil {
				t.Fatalf("the next save: %v", err)
			}
			if got, _ := other.Load(ctx); !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("log %v, want %v", got, want)
			}
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			row.run(t, newStore(t).Namespace)
		})
	}
}

// FuzzParseWrites: any annotation value is read or refused with an error, never a panic; what
// is read is the whole seconds written, in order, and writes back the same.
func FuzzParseWrites(f *testing.F) {
	for _, s := range []string{"", "1764417600 1764417601", "  1764417600\t1764417660  ", "0", "-5", "1e9", "9223372036854775807", "1764417600 x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseWrites(v)
		if err != nil {
			return
		}
		fields := strings.Fields(v)
		if len(got) != len(fields) {
			t.Fatalf("%q: %d times from %d entries", v, len(got), len(fields))
		}
		for i, tm := range got {
			if tm.Unix() <= 0 || tm.Nanosecond() != 0 {
				t.Fatalf("%q: entry %d read as %v", v, i+1, tm)
			}
		}
	})
}
