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
	faultGitHubTimeout   = "github-timeout"
	faultReplicaKill     = "replica-sigkill"
	faultMailDown        = "mail-down"
)

// githubTimeout is how long Kustos waits for one GitHub request (its default).
const githubTimeout = 30 * time.Second

// faults injects a random fault every few seconds until ctx ends: a GitHub fault on one
// endpoint or on all of them for a while (one at a time), or a replica killed with SIGKILL and
// restarted after a moment, or the API server restarted.
type faults struct {
	gh       *githubtest.Server
	smtp     *smtpProxy
	prom     *labs // the labs' Prometheus, behind its proxy (lab.go); nil: no Prometheus faults
	replicas []*replica
	api      *apiServer // nil: no API server restarts
	// apiEvery, when set (-api-restart-every), makes an API server restart the next fault
	// once that long has passed since the last one began (or since the faults began), so that
	// a short run has several; zero: restarts only as drawn, at most every apiRestartEvery.
	apiEvery time.Duration
	logf     func(string, ...any)

	// witness is the replica the kills spare from witnessFrom on (half-way through the faults),
	// so that one life spans the second half and the settle period: long enough for the heap
	// rule, which a leak needs time to show against. The other replicas are still killed.
	witness     *replica
	witnessFrom time.Time

	mu       sync.Mutex
	rng      *rand.Rand
	counts   map[string]int
	lastKill time.Time
	lastAPI  time.Time // when the last API server restart began
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
// one, the next fault is one; and, with f.api, at least one API server restart, once two
// thirds (with a witness: a third) have gone without one.
func (f *faults) run(ctx context.Context, restart func(*replica)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	deadline, _ := ctx.Deadline()
	for sleep(ctx, f.dur(5, 15)) {
		r := f.intn(100)
		overdue := f.lastKill.IsZero() && time.Since(start) > deadline.Sub(start)/2
		switch {
		case !overdue && f.apiRestartDue(time.Now(), start, deadline, r):
			down := f.dur(1, 10)
			f.logf("fault: %s, down for %s", faultAPIServerRestart, down)
			f.count(faultAPIServerRestart)
			f.lastAPI = time.Now()
			if err := f.api.outage(ctx, down); err != nil {
				f.logf("fault: %s: %v", faultAPIServerRestart, err)
			}
			f.logf("fault: %s: serving again after %s", faultAPIServerRestart, time.Since(f.lastAPI).Round(100*time.Millisecond))
			f.ended()
		case overdue || r < 25 && time.Since(f.lastKill) > 20*time.Second:
			rep := f.victim(time.Now())
			if rep == nil {
				continue
			}
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
			switch r % 4 {
			case 0:
				spec.Status = []int{500, 502, 503}[f.intn(3)]
			case 1:
				kind, spec.Delay = faultGitHubSlow, time.Duration(500+f.intn(2500))*time.Millisecond
			case 2:
				kind, spec.Status, spec.RetryAfter = faultGitHubSecondary, 403, f.dur(1, 5)
				if f.intn(2) == 0 {
					spec.Status = 429
				}
			case 3:
				// One or two requests outlast Kustos's 30 s request timeout; the server then
				// carries them out all the same, so a write's answer is lost, not the write.
				kind, spec.Delay, spec.Times = faultGitHubTimeout, githubTimeout+5*time.Second, 1+f.intn(2)
			}
			hold := f.dur(3, 15)
			f.logf("fault: %s on %s for %s (status %d, delay %s)", kind, spec.PathPattern, hold, spec.Status, spec.Delay)
			f.count(kind)
			f.gh.Inject(spec)
			sleep(ctx, hold)
			f.gh.ClearFaults()
			f.ended()
			if kind == faultGitHubTimeout {
				// A request it took at the last moment is answered a Delay later; the next
				// fault need not wait for that.
				f.endedAt(time.Now().Add(spec.Delay))
			}
		}
	}
}

// apiRestartDue reports whether the fault drawn (r, of 100) at now is an API server restart:
// forced once apiDueBy has gone without one, or once apiEvery has passed since the last (or
// since the faults began at start), else drawn four times in a hundred at most every
// apiRestartEvery. Never without f.api, nor from witnessFrom on: the leader exits on a
// restart, and the witness's life must span the rest of the run (see witness).
func (f *faults) apiRestartDue(now, start, deadline time.Time, r int) bool {
	if f.api == nil || f.witness != nil && !now.Before(f.witnessFrom) {
		return false
	}
	if f.lastAPI.IsZero() && now.Sub(start) > f.apiDueBy(start, deadline) {
		return true
	}
	if f.apiEvery > 0 && now.Sub(maxTime(f.lastAPI, start)) >= f.apiEvery {
		return true
	}
	return r >= 84 && r < 88 && now.Sub(f.lastAPI) > apiRestartEvery
}

// apiDueBy is how far into the faults' time an API server restart is forced if none came:
// two thirds of it, or a third with a witness (restarts stop half-way then).
func (f *faults) apiDueBy(start, deadline time.Time) time.Duration {
	if f.witness != nil {
		return deadline.Sub(start) / 3
	}
	return deadline.Sub(start) * 2 / 3
}

// victim draws the replica to kill at now: any, or, from witnessFrom on, any but the witness
// (nil when the witness is the only replica).
func (f *faults) victim(now time.Time) *replica {
	cands := f.replicas
	if f.witness != nil && !now.Before(f.witnessFrom) {
		cands = nil
		for _, r := range f.replicas {
			if r != f.witness {
				cands = append(cands, r)
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[f.intn(len(cands))]
}

func (f *faults) ended() { f.endedAt(time.Now()) }

// endedAt records a fault whose effect lasts until at.
func (f *faults) endedAt(at time.Time) {
	f.mu.Lock()
	if at.After(f.last) {
		f.last = at
	}
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
