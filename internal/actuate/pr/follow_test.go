package pr

import (
	"context"
	"testing"
	"time"
)

// TestClosedSince: a PR of the key's branch closed without merging after a decision counts —
// also in the decision's second, since GitHub's timestamps have whole seconds — and one closed
// before it does not.
func TestClosedSince(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	c := quotaChange("10", "12")
	decided := time.Now()
	res, err := w.Propose(ctx, c, ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, closed, err := w.ClosedSince(ctx, c, decided); err != nil || closed {
		t.Fatalf("open PR counted as closed: %v, %v", closed, err)
	}
	// Close at the start of a second, so that "now" below is in the same second as the close.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	e.s.ClosePR(owner, repoName, res.Number)
	for _, tc := range []struct {
		name  string
		since time.Time
		want  bool
	}{
		{"decided before the close", decided, true},
		{"decided in the same second, after the close", time.Now(), true},
		{"decided seconds after the close", time.Now().Add(3 * time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, closed, err := w.ClosedSince(ctx, c, tc.since)
			if err != nil || closed != tc.want || (closed && n != res.Number) {
				t.Fatalf("ClosedSince = #%d %v, %v; want %v", n, closed, err, tc.want)
			}
		})
	}
}
