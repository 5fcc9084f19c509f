package lifecycle

import (
	"reflect"
	"testing"
	"time"
)

func TestBagRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 30, 0, 123, time.FixedZone("CET", 3600))
	w := BagWriter{}
	w.Time("at", at)
	w.Time("never", time.Time{})
	w.Count("n", 3)
	w.Count("zero", 0)
	if want := (BagWriter{"at": "2026-11-25T08:30:00.000000123Z", "n": "3"}); !reflect.DeepEqual(w, want) {
		t.Fatalf("written %v, want %v (zero values left out, times in UTC)", w, want)
	}
	r := BagReader{Bag: w}
	if got := r.Time("at"); !got.Equal(at) || r.Count("n", 10) != 3 || !r.Time("never").IsZero() || r.Count("zero", 10) != 0 || len(r.Bad) != 0 {
		t.Fatalf("read back %s %d, bad %v", got, r.Count("n", 10), r.Bad)
	}
}

func TestBagReaderBadEntries(t *testing.T) {
	r := BagReader{Bag: map[string]string{"t": "yesterday", "n": "-1", "big": "1001", "word": "many"}}
	if !r.Time("t").IsZero() || r.Count("n", 10) != 0 || r.Count("big", 1000) != 0 || r.Count("word", 10) != 0 {
		t.Fatal("an unreadable entry does not read as zero")
	}
	want := []string{`t="yesterday"`, `n="-1"`, `big="1001"`, `word="many"`}
	if !reflect.DeepEqual(r.Bad, want) {
		t.Fatalf("bad = %v, want %v", r.Bad, want)
	}
}
