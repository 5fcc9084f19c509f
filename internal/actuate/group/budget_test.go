package group

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// counter is the forge's count of Kustos's pull requests (Counter), which the test moves.
type counter struct {
	mu            sync.Mutex
	open, created int
	calls         int
	// listed, when set, runs after the open pull requests were read, before the count returns.
	listed func()
}

func (c *counter) OpenPullRequests(context.Context, string) ([]*gh.PullRequest, error) {
	c.mu.Lock()
	c.calls++
	prs := make([]*gh.PullRequest, c.open)
	listed := c.listed
	c.mu.Unlock()
	if listed != nil {
		listed()
	}
	return prs, nil
}

func (c *counter) set(open int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open = open
}

func (c *counter) PullRequestsCreatedSince(context.Context, string, time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.created, nil
}

func TestBudget(t *testing.T) {
	ctx := context.Background()
	now := t0
	ask := func(key string, u lifecycle.Urgency, since time.Duration) Ask {
		return Ask{Key: lifecycle.Key(key), Urgency: u, Since: t0.Add(since)}
	}
	type admit struct {
		ask Ask
		ok  bool
		why string
	}
	for _, tc := range []struct {
		name          string
		maxOpen, hour int
		open, created int
		steps         []admit
	}{
		{"room: granted, and counted before the forge's next count", 2, 0, 1, 0, []admit{
			{ask("a", lifecycle.UrgencyOther, 0), true, ""},
			{ask("b", lifecycle.UrgencyOther, 0), false, "2 of Kustos's pull requests are open (--max-open-prs=2)"},
		}},
		{"the hour's limit", 0, 3, 0, 3, []admit{
			{ask("a", lifecycle.UrgencyBlocking, 0), false, "opened 3 pull requests in the last hour (--max-new-prs-per-hour=3)"},
		}},
		{"full: every asker waits; the most urgent is first when room frees", 1, 0, 1, 0, []admit{
			{ask("pause", lifecycle.UrgencyPause, 0), false, "are open"},
			{ask("removal-late", lifecycle.UrgencyRemoval, 2*time.Minute), false, "are open"},
			{ask("removal-early", lifecycle.UrgencyRemoval, time.Minute), false, "are open"},
		}},
		{"no limit", 0, 0, 500, 500, []admit{{ask("a", lifecycle.UrgencyOther, 0), true, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &counter{open: tc.open, created: tc.created}
			b := &Budget{Counter: c, HeadPrefix: "kustos/prod/", MaxOpen: tc.maxOpen, MaxPerHour: tc.hour, Now: func() time.Time { return now }}
			for i, s := range tc.steps {
				ok, until, why, err := b.Admit(ctx, s.ask)
				if err != nil || ok != s.ok || !strings.Contains(why, s.why) || (!ok && !until.After(now)) {
					t.Fatalf("step %d (%s): ok %v until %s why %q err %v; want ok %v why %q", i, s.ask.Key, ok, until, why, err, s.ok, s.why)
				}
			}
		})
	}

	t.Run("room frees: the most urgent waiter goes first, then the longest waiting", func(t *testing.T) {
		c := &counter{open: 1}
		b := &Budget{Counter: c, MaxOpen: 1, Now: func() time.Time { return now }}
		for _, a := range []Ask{ask("pause", lifecycle.UrgencyPause, 0), ask("removal-late", lifecycle.UrgencyRemoval, 2*time.Minute),
			ask("removal-early", lifecycle.UrgencyRemoval, time.Minute)} {
			if ok, _, _, _ := b.Admit(ctx, a); ok {
				t.Fatalf("%s granted while full", a.Key)
			}
		}
		b.Released() // Kustos merged its one pull request
		done := map[lifecycle.Key]bool{}
		for _, want := range []string{"removal-early", "removal-late", "pause"} {
			var granted []string
			for _, a := range []Ask{ask("pause", lifecycle.UrgencyPause, 0), ask("removal-late", lifecycle.UrgencyRemoval, 2*time.Minute),
				ask("removal-early", lifecycle.UrgencyRemoval, time.Minute)} {
				if done[a.Key] {
					continue // it has its pull request
				}
				if ok, _, why, _ := b.Admit(ctx, a); ok {
					done[a.Key] = true
					granted = append(granted, string(a.Key))
				} else if a.Key == lifecycle.Key(want) {
					t.Fatalf("%s refused: %s", a.Key, why)
				}
			}
			if len(granted) != 1 || granted[0] != want {
				t.Fatalf("granted %v, want only %s", granted, want)
			}
			// Its pull request is opened, then merged; the forge's next count says so.
			now = now.Add(time.Second)
			b.Settled(lifecycle.Key(want))
			now = now.Add(30 * time.Second)
			c.mu.Lock()
			c.open = 0
			c.mu.Unlock()
		}
	})

	t.Run("a waiter that stops asking stops holding the others back", func(t *testing.T) {
		c := &counter{open: 1}
		b := &Budget{Counter: c, MaxOpen: 1, Now: func() time.Time { return now }}
		_, _, _, _ = b.Admit(ctx, ask("withdrawn", lifecycle.UrgencyBlocking, 0))
		c.mu.Lock()
		c.open = 0
		c.mu.Unlock()
		now = now.Add(31 * time.Second)
		if ok, _, why, _ := b.Admit(ctx, ask("other", lifecycle.UrgencyOther, 0)); ok {
			t.Fatalf("granted while a more urgent waiter asked %s ago", 31*time.Second)
		} else if !strings.Contains(why, "1 more urgent or longer waiting proposals go first") {
			t.Fatalf("why %q", why)
		}
		now = now.Add(time.Minute)
		if ok, _, why, _ := b.Admit(ctx, ask("other", lifecycle.UrgencyOther, 0)); !ok {
			t.Fatalf("refused after the withdrawn waiter stopped asking: %s", why)
		}
	})

	// A granted proposal takes a push and a call to open its pull request; a count of the forge
	// read meanwhile does not see it, and must not give its room away again.
	t.Run("a grant is held until its pull request is open before a count", func(t *testing.T) {
		type step struct {
			name string
			// at is the time of the step, from t0; open is the forge's count from then on.
			at   time.Duration
			open int
			// settle settles a's grant: before the ask, or (settleWhileListing) while the
			// forge's count is being read.
			settle, settleWhileListing bool
			ask                        string
			ok                         bool
			why                        string
		}
		for _, tc := range []struct {
			name  string
			steps []step
		}{
			{"opened after the count was read", []step{
				{name: "a is granted the last room", at: 0, open: 1, ask: "a", ok: true},
				{name: "a count while a's pull request is opening: a's room is still taken", at: 3 * time.Second, open: 1, ask: "b", why: "2 of Kustos's pull requests are open"},
				{name: "a's pull request opens between the count's read and its end", at: 6 * time.Second, open: 1, settleWhileListing: true, ask: "b", why: "2 of Kustos's pull requests are open"},
				{name: "the next count sees it, once", at: 9 * time.Second, open: 2, ask: "b", why: "2 of Kustos's pull requests are open"},
				{name: "a human closes another: room", at: 12 * time.Second, open: 1, ask: "b", ok: true},
			}},
			{"opened before the count: counted by the forge, not twice", []step{
				{name: "a is granted", at: 0, open: 0, ask: "a", ok: true},
				{name: "a's pull request is open; the forge counts it", at: 3 * time.Second, open: 1, settle: true, ask: "b", ok: true},
			}},
			{"a proposal that opened nothing gives its room back at the next count", []step{
				{name: "a is granted the last room", at: 0, open: 1, ask: "a", ok: true},
				{name: "a found its change already in the base branch", at: 3 * time.Second, open: 1, settle: true, ask: "b", ok: true},
			}},
			{"a grant never settled is given back after unsettledFor", []step{
				{name: "a is granted the last room", at: 0, open: 1, ask: "a", ok: true},
				{name: "still held", at: unsettledFor, open: 1, ask: "b", why: "2 of Kustos's pull requests are open"},
				{name: "given back", at: unsettledFor + 3*time.Second, open: 1, ask: "b", ok: true},
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				clock := t0
				c := &counter{}
				b := &Budget{Counter: c, MaxOpen: 2, Refresh: 2 * time.Second, Now: func() time.Time { return clock }}
				for _, s := range tc.steps {
					clock = t0.Add(s.at)
					c.set(s.open)
					if s.settle {
						clock = clock.Add(-time.Second)
						b.Settled("a")
						clock = clock.Add(time.Second)
					}
					c.listed = nil
					if s.settleWhileListing {
						c.listed = func() { clock = clock.Add(500 * time.Millisecond); b.Settled("a") }
					}
					ok, _, why, err := b.Admit(ctx, ask(s.ask, lifecycle.UrgencyOther, 0))
					if err != nil || ok != s.ok || !strings.Contains(why, s.why) {
						t.Fatalf("%s: %s: ok %v why %q err %v; want ok %v why %q", s.name, s.ask, ok, why, err, s.ok, s.why)
					}
				}
			})
		}
	})

	// Two proposals ask at once (four workers): the count that began first may land last, and
	// must not put back what the later one saw.
	t.Run("an older count landing after a newer one is dropped", func(t *testing.T) {
		clock := t0
		c := &counter{open: 1}
		b := &Budget{Counter: c, MaxOpen: 2, Refresh: 10 * time.Second, Now: func() time.Time { return clock }}
		if ok, _, why, _ := b.Admit(ctx, ask("a", lifecycle.UrgencyOther, 0)); !ok {
			t.Fatalf("a refused: %s", why)
		}
		clock = t0.Add(11 * time.Second)
		var newer string
		c.listed = func() {
			// Count A has read one open pull request. Meanwhile a's opens and settles, and count B
			// begins and ends, seeing it.
			c.listed = nil
			c.set(2)
			clock = t0.Add(12 * time.Second)
			b.Settled("a")
			clock = t0.Add(13 * time.Second)
			ok, _, why, _ := b.Admit(ctx, ask("c", lifecycle.UrgencyOther, 0))
			if ok {
				t.Error("c granted with two pull requests open")
			}
			newer = why
		}
		ok, _, why, err := b.Admit(ctx, ask("b", lifecycle.UrgencyOther, 0))
		if err != nil || ok || !strings.Contains(why, "2 of Kustos's pull requests are open") {
			t.Fatalf("b after the older count landed: ok %v why %q err %v; want refused, 2 open (the newer count said %q)", ok, why, err, newer)
		}
	})

	t.Run("the forge is asked at most once per Refresh", func(t *testing.T) {
		c := &counter{}
		b := &Budget{Counter: c, MaxOpen: 100, Now: func() time.Time { return now }}
		for i := 0; i < 50; i++ {
			_, _, _, _ = b.Admit(ctx, ask(string(rune('a'+i%26))+"x", lifecycle.UrgencyOther, 0))
		}
		if c.calls != 1 {
			t.Errorf("%d counts for 50 asks within 30 s", c.calls)
		}
	})
}
