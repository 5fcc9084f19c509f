package lifecycle

import (
	"fmt"
	"strconv"
	"time"
)

// BagReader reads a detector's state from its bag (View.Bag): times in RFC 3339, counts as
// decimal numbers. An entry it cannot read reads as zero and is named in Bad ("key=value"), so
// that the detector can say so and go on: the worst a lost entry may do is repeat a message,
// never act sooner.
type BagReader struct {
	Bag map[string]string
	Bad []string
}

// Time is the time under key (zero when absent or unreadable).
func (r *BagReader) Time(key string) time.Time {
	v, ok := r.Bag[key]
	if !ok || v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		r.Bad = append(r.Bad, fmt.Sprintf("%s=%q", key, Clip(v, 40)))
		return time.Time{}
	}
	return t.UTC()
}

// Count is the count under key, 0 to limit (0 when absent or unreadable).
func (r *BagReader) Count(key string, limit int) int {
	v, ok := r.Bag[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > limit {
		r.Bad = append(r.Bad, fmt.Sprintf("%s=%q", key, Clip(v, 40)))
		return 0
	}
	return n
}

// BagWriter writes a detector's state as a bag; zero values are left out.
type BagWriter map[string]string

// Time writes t under key unless it is zero.
func (w BagWriter) Time(key string, t time.Time) {
	if !t.IsZero() {
		w[key] = t.UTC().Format(time.RFC3339Nano)
	}
}

// Count writes n under key unless it is zero.
func (w BagWriter) Count(key string, n int) {
	if n != 0 {
		w[key] = strconv.Itoa(n)
	}
}
