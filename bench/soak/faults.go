package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// Fault kinds, as the report counts them.
const (
	faultGitHub5xx       = "github-5xx"
	faultGitHubSlow      = "github-slow"
	faultGitHubSecondary = "github-secondary-limit"
	faultReplicaKill     = "replica-sigkill"
	faultMailDown        = "mail-down"
)

// faults injects a random fault every few seconds until ctx ends: a GitHub fault on one
// endpoint or on all of them for a while (one at a time), or a replica killed with SIGKILL and
// restarted after a moment.
type faults struct {
	gh       *githubtest.Server
	smtp     *smtpProxy
	prom     *labs // the labs' Prometheus, behind its proxy (lab.go); nil: no Prometheus faults
	replicas []*replica
	logf     func(string, ...any)

	mu       sync.Mutex
	rng      *rand.Rand
	counts   map[string]int
	lastKill time.Time
	last     time.Time // when the last fault ended
}

func newFaults(gh *githubtest.Server, replicas []*replica, smtp *smtpProxy, seed uint64, logf func(string, ...any)) *faults {
	return &faults{gh: gh, smtp: smtp, replicas: replicas, logf: logf, rng: rand.New(rand.NewPCG(seed, seed^0xfa17)), counts: map[string]int{}}
}

func (f *faults) dur(lo, hi int) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Duration(lo+f.rng.IntN(hi-lo+1)) * time.Second
}

func (f *faults) intn(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

func (f *faults) count(kind string) {
	f.mu.Lock()
	f.counts[kind]++
	f.mu.Unlock()
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// run injects faults until ctx (which has a deadline) ends; it returns once every fault is over and every replica is
// running again.
// A run of any length has at least one kill: once half of the faults' time has gone without
// one, the next fault is one.
func (f *faults) run(ctx context.Context, restart func(*replica)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	deadline, _ := ctx.Deadline()
	for sleep(ctx, f.dur(5, 15)) {
		r := f.intn(100)
		overdue := f.lastKill.IsZero() && time.Since(start) > deadline.Sub(start)/2
		switch {
		case overdue || r < 25 && time.Since(f.lastKill) > 20*time.Second:
			rep := f.replicas[f.intn(len(f.replicas))]
			down := f.dur(1, 8)
			f.logf("fault: SIGKILL replica %d, restarted after %s", rep.id, down)
			f.count(faultReplicaKill)
			f.lastKill = time.Now()
			rep.kill()
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(down) // not ctx: the replica comes back even when the faults end
				restart(rep)
				f.ended()
			}()
		case r >= 88 && f.smtp != nil:
			// The owners' mail server goes away: every SMTP connection cut, new ones too.
			hold := f.dur(3, 15)
			f.logf("fault: %s for %s", faultMailDown, hold)
			f.count(faultMailDown)
			f.smtp.setDown(true)
			sleep(ctx, hold)
			f.smtp.setDown(false)
			f.ended()
		case r >= 78 && f.prom != nil:
			f.promFault(ctx, r >= 83)
		default:
			spec := githubtest.FaultSpec{PathPattern: endpoints[f.intn(len(endpoints))], Times: -1}
			kind := faultGitHub5xx
			switch r % 3 {
			case 0:
				spec.Status = []int{500, 502, 503}[f.intn(3)]
			case 1:
				kind, spec.Delay = faultGitHubSlow, time.Duration(500+f.intn(2500))*time.Millisecond
			case 2:
				kind, spec.Status, spec.RetryAfter = faultGitHubSecondary, 403, f.dur(1, 5)
				if f.intn(2) == 0 {
					spec.Status = 429
				}
			}
			hold := f.dur(3, 15)
			f.logf("fault: %s on %s for %s (status %d, delay %s)", kind, spec.PathPattern, hold, spec.Status, spec.Delay)
			f.count(kind)
			f.gh.Inject(spec)
			sleep(ctx, hold)
			f.gh.ClearFaults()
			f.ended()
		}
	}
}

func (f *faults) ended() {
	f.mu.Lock()
	f.last = time.Now()
	f.mu.Unlock()
}

func (f *faults) lastEnded() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *faults) countsCopy() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}
