package github

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// memWriteLog is a WriteLog in memory (state.WriteLog keeps it in a Lease; its own test reads
// and writes the real one). loaded is closed once Load has answered.
type memWriteLog struct {
	mu     sync.Mutex
	sent   []time.Time
	loaded chan struct{}
}

func (m *memWriteLog) Load(context.Context) ([]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer close(m.loaded)
	return append([]time.Time(nil), m.sent...), nil
}

func (m *memWriteLog) Save(_ context.Context, sent []time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append([]time.Time(nil), sent...)
	return nil
}

// life runs one process's life of Kustos against s: KeepWriteLog from the start (when wl is
// set), then up to writes branch creations (the tree and commit of the set-up count too), and
// the end of the life (ctx cancelled, the log saved). It returns how many creations the client
// held back with its own ErrRateLimited.
func life(t *testing.T, c *Client, wl *memWriteLog, sha, name string, writes int) (heldBack int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if wl != nil {
		wl.loaded = make(chan struct{})
		go func() { done <- c.KeepWriteLog(ctx, wl, time.Hour, logr.Discard()) }()
		<-wl.loaded
	} else {
		done <- nil
	}
	for i := 0; i < writes; i++ {
		_, err := c.CreateRef(context.Background(), fmt.Sprintf("kustos/%s-%03d", name, i), sha)
		switch {
		case errors.Is(err, ErrRateLimited):
			heldBack++
		case err != nil:
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return heldBack
}

// TestWriteLogSpansRestarts: GitHub counts 500 writes an hour per installation, not per process.
// A Kustos restarted within the hour (a crash, an upgrade, a new leader) reads its predecessor's
// writes from the write log and keeps to the hourly budget of 450 across both lives: no
// secondary-limit answer, the writes beyond it held back by the client. Without the log, the
// second life starts with a whole hour's budget and meets GitHub's limit (the soak's first
// 20-minute run did, with ten process lives).
func TestWriteLogSpansRestarts(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "with the write log", false: "without it"}[keep], func(t *testing.T) {
			c1, s, clk, sha := limitedServerClient(t)
			var wl *memWriteLog
			if keep {
				wl = &memWriteLog{}
			}
			if held := life(t, c1, wl, sha, "first", 300); held != 0 {
				t.Fatalf("first life: %d writes held back, want none (302 of 450)", held)
			}
			// A second process on the same clock, within the hour.
			c2, err := NewClient(Config{APIURL: s.URL(), TokenFile: writeFile(t, "token2", s.Token()), Repository: "acme/gitops"}, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			held := life(t, c2, wl, sha, "second", 300)
			limited := s.SecondaryLimitedBy()[githubtest.LimitContentPerHour]
			if keep {
				if limited != 0 || held != 300-(450-302) {
					t.Errorf("second life: %d held back, %d hourly secondary-limit answers; want %d held back by the client and none from GitHub",
						held, limited, 300-(450-302))
				}
				return
			}
			if limited == 0 {
				t.Errorf("without the log the second life met no hourly limit (%d held back): the control shows nothing", held)
			}
		})
	}
}

// TestEarlierWritesSpendTheMinute: the writes of the last minute before a restart spend the new process's
// minute bucket too, so that the two lives together keep under GitHub's 80 a minute; older ones
// spend only the hourly budget, and those over an hour old nothing.
func TestEarlierWritesSpendTheMinute(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rows := []struct {
		name     string
		sent     []time.Time
		waitNext time.Duration // how long the next write waits
		hourLeft int
	}{
		{"nothing before", nil, 0, 450},
		{"60 writes in the last half minute: the bucket is spent", repeatAt(now.Add(-30*time.Second), 60), 46*time.Second + 1, 390},
		{"60 writes two minutes ago: the hour only", repeatAt(now.Add(-2*time.Minute), 60), 0, 390},
		{"450 writes 59 minutes ago: the hour is spent for a minute", repeatAt(now.Add(-59*time.Minute), 450), time.Minute, 0},
		{"writes over an hour old: nothing", repeatAt(now.Add(-61*time.Minute), 450), 0, 450},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			p := newWritePacer(DefaultWritesPerMinute, DefaultWritesPerHour)
			p.addEarlier(row.sent, now)
			if got := len(p.recent(now)); got != DefaultWritesPerHour-row.hourLeft {
				t.Errorf("%d writes in the log, want %d", got, DefaultWritesPerHour-row.hourLeft)
			}
			at, _, ok := p.reserve(now, 2*time.Minute)
			if !ok || at.Sub(now) != row.waitNext {
				t.Errorf("next write at +%v (ok %v), want +%v", at.Sub(now), ok, row.waitNext)
			}
		})
	}
}

func repeatAt(at time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = at
	}
	return out
}
