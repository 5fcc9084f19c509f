package group

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Counter counts Kustos's pull requests on the forge (*github.Client): those whose head branch
// starts with headPrefix. GitHub's own count is what every replica and every restart agrees on.
type Counter interface {
	OpenPullRequests(ctx context.Context, headPrefix string) ([]*gh.PullRequest, error)
	PullRequestsCreatedSince(ctx context.Context, headPrefix string, since time.Time) (int, error)
}

// Ask is a proposal asking for room to open a new pull request.
type Ask struct {
	// Key is the target's or the group's.
	Key     lifecycle.Key
	Urgency lifecycle.Urgency
	// Since is when the proposal started waiting (its decision, its group's gathering).
	Since time.Time
}

// Budget keeps the number of Kustos's open pull requests and of those opened in the last hour
// within their limits, and gives room to the most urgent waiting proposal first (then the
// longest waiting). It is safe for concurrent use.
//
// Counts come from the forge (Counter), read at most every Refresh, plus the room this process
// granted that the forge's count may not hold yet: a grant is held until its proposal has Settled
// (its pull request was opened, or it was not) before a count began, because opening a pull
// request takes a push and a call, and a count read in between would not see it. A proposal that
// is not the most urgent waiting one is refused while another that is waits, so a proposal that
// asks often cannot overtake one that asks rarely; a waiter that has not asked for three Recheck
// intervals (its Change was withdrawn) stops holding others back. After a restart the waiters
// register again on their first look.
type Budget struct {
	Counter Counter
	// HeadPrefix is the branch prefix of Kustos's pull requests ("kustos/<cluster>/").
	HeadPrefix string
	// MaxOpen and MaxPerHour are --max-open-prs and --max-new-prs-per-hour; 0: no limit.
	MaxOpen, MaxPerHour int
	// Refresh is how long a count from the forge is trusted (default 30 s); Recheck is how soon
	// a waiting proposal asks again (default 15 s).
	Refresh, Recheck time.Duration
	Now              func() time.Time

	mu       sync.Mutex
	counted  time.Time
	open     int
	hourly   int
	granted  []grant
	released int
	waiters  map[lifecycle.Key]waiter
}

// grant is room given to the proposal key at at; settled is when its proposal ended (zero:
// still opening its pull request).
type grant struct {
	key         lifecycle.Key
	at, settled time.Time
}

// unsettledFor is how long a grant whose proposal never settled (a caller that lost it) holds
// its room. Opening one pull request takes seconds, but each of its GitHub calls may wait out a
// rate limit (go-github waits up to 90 s): a grant must not expire while its pull request is
// still being opened.
const unsettledFor = time.Hour

type waiter struct {
	ask   Ask
	asked time.Time
}

func (b *Budget) refresh() time.Duration {
	if b.Refresh <= 0 {
		return 30 * time.Second
	}
	return b.Refresh
}

func (b *Budget) recheck() time.Duration {
	if b.Recheck <= 0 {
		return 15 * time.Second
	}
	return b.Recheck
}

// Unlimited reports that the budget never refuses.
func (b *Budget) Unlimited() bool { return b == nil || (b.MaxOpen <= 0 && b.MaxPerHour <= 0) }

// Admit asks room for a new pull request. ok: open it now (the room is taken); otherwise why
// says what is full, in a sentence for an Event, and until when to wait before asking again.
func (b *Budget) Admit(ctx context.Context, a Ask) (ok bool, until time.Time, why string, err error) {
	if b.Unlimited() {
		return true, time.Time{}, "", nil
	}
	now := b.now()
	if err := b.count(ctx, now); err != nil {
		return false, time.Time{}, "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters == nil {
		b.waiters = map[lifecycle.Key]waiter{}
	}
	b.waiters[a.Key] = waiter{ask: a, asked: now}
	for k, w := range b.waiters {
		if now.Sub(w.asked) > 3*b.recheck() {
			delete(b.waiters, k)
		}
	}
	until = now.Add(b.recheck())
	open := b.open + len(b.granted) - b.released
	hourly := b.hourly + len(b.granted)
	room := -1
	if b.MaxOpen > 0 {
		room = b.MaxOpen - open
		if room <= 0 {
			return false, until, fmt.Sprintf("%d of Kustos's pull requests are open (--max-open-prs=%d)", open, b.MaxOpen), nil
		}
	}
	if b.MaxPerHour > 0 {
		if r := b.MaxPerHour - hourly; room < 0 || r < room {
			room = r
		}
		if room <= 0 {
			return false, until, fmt.Sprintf("Kustos opened %d pull requests in the last hour (--max-new-prs-per-hour=%d)", hourly, b.MaxPerHour), nil
		}
	}
	if ahead := b.ahead(a); ahead >= room {
		return false, until, fmt.Sprintf("%d more urgent or longer waiting proposals go first", ahead), nil
	}
	delete(b.waiters, a.Key)
	b.granted = append(b.granted, grant{key: a.Key, at: now})
	return true, time.Time{}, "", nil
}

// Settled records that the proposal key, admitted before, has ended: its pull request is open
// (and in the forge's next count), or it was not opened. Call it once per admission, whatever
// the outcome; a key without an unsettled grant is ignored.
func (b *Budget) Settled(key lifecycle.Key) {
	if b.Unlimited() {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.granted {
		if g := &b.granted[i]; g.key == key && g.settled.IsZero() {
			g.settled = now
			return
		}
	}
}

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// ahead counts the waiters that go before a: more urgent, or as urgent and waiting longer.
func (b *Budget) ahead(a Ask) int {
	ws := make([]Ask, 0, len(b.waiters))
	for _, w := range b.waiters {
		ws = append(ws, w.ask)
	}
	sort.Slice(ws, func(i, j int) bool { return before(ws[i], ws[j]) })
	for i, w := range ws {
		if w.Key == a.Key {
			return i
		}
	}
	return len(ws)
}

func before(x, y Ask) bool {
	if x.Urgency != y.Urgency {
		return x.Urgency < y.Urgency
	}
	if !x.Since.Equal(y.Since) {
		return x.Since.Before(y.Since)
	}
	return x.Key < y.Key
}

// Released records that Kustos closed or merged one of its pull requests: its room is free
// before the forge's next count says so.
func (b *Budget) Released() {
	if b.Unlimited() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open+len(b.granted)-b.released > 0 {
		b.released++
	}
}

// count reads the forge's counts when the last ones are older than Refresh.
func (b *Budget) count(ctx context.Context, now time.Time) error {
	b.mu.Lock()
	fresh := !b.counted.IsZero() && now.Sub(b.counted) < b.refresh()
	b.mu.Unlock()
	if fresh {
		return nil
	}
	prs, err := b.Counter.OpenPullRequests(ctx, b.HeadPrefix)
	if err != nil {
		return fmt.Errorf("counting open pull requests: %w", err)
	}
	open := len(prs)
	hourly := 0
	if b.MaxPerHour > 0 {
		if hourly, err = b.Counter.PullRequestsCreatedSince(ctx, b.HeadPrefix, now.Add(-time.Hour)); err != nil {
			return fmt.Errorf("counting pull requests opened in the last hour: %w", err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.counted) {
		// A count that began later landed first: it saw at least as much as this one, and the
		// grants it dropped are in it, not in this one.
		return nil
	}
	b.counted, b.open, b.hourly, b.released = now, open, hourly, 0
	// Room whose proposal settled before the count began is in it (or its pull request was never
	// opened); room still opening its pull request, or settled while counting, is not yet.
	kept := b.granted[:0]
	for _, g := range b.granted {
		settledBefore := !g.settled.IsZero() && g.settled.Before(now)
		lost := g.settled.IsZero() && now.Sub(g.at) > unsettledFor
		if !settledBefore && !lost {
			kept = append(kept, g)
		}
	}
	b.granted = kept
	return nil
}
