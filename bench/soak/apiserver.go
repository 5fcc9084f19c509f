package main

import (
	"bytes"
	"context"
	"os"
	"sync"
	"time"
)

// faultAPIServerRestart: kube-apiserver stops, stays down for a while and comes back as the
// same server (address, certificates, etcd), as testenv's RestartAPIServer does it.
const faultAPIServerRestart = "apiserver-restart"

const (
	// apiRestartEvery is the least time between two restarts: each costs both replicas their
	// watches (they relist) and, when it outlasts the renew deadline, the leader its lease.
	apiRestartEvery = 60 * time.Second
	// outageExitSlack is how long after the API server serves again a replica's exit is still
	// put down to the outage: the leader gives its lease up at the renew deadline (10 s after
	// its last renewal), which may fall just after the server is back, on a busy machine later.
	outageExitSlack = 30 * time.Second
	// leaseLostLog is what `kustos run` logs when it exits because it lost the leader lease.
	leaseLostLog = "leader election lost"
)

// apiServer is the API server as the soak's faults and observers see it: the restart, a gate
// that keeps the workload from acting while the server is down, and the outages, which
// excuse a replica's exit in them.
type apiServer struct {
	restart func(ctx context.Context, down time.Duration) error
	// back, when set, is told when the server serves again after a restart.
	back func(time.Time)

	// gate: the workload holds it shared while it acts, a restart exclusively. A workload
	// action writes Git and then the cluster, and records what it wrote before; a write to the
	// cluster failing halfway would leave that record false (a preview the checker expects
	// removed that the cluster never got, an extension Kustos never saw), and so a violation
	// that is the bench's, not Kustos's. The GitOps tool and CI go on: they retry.
	gate sync.RWMutex

	mu      sync.Mutex
	down    bool
	lastEnd time.Time
	exits   map[string]int // replica exits put down to an outage, by reason
}

func newAPIServer(restart func(context.Context, time.Duration) error) *apiServer {
	return &apiServer{restart: restart, exits: map[string]int{}}
}

// act runs a workload action while the API server is up.
func (a *apiServer) act(fn func()) {
	a.gate.RLock()
	defer a.gate.RUnlock()
	fn()
}

// outage restarts the API server, down for down, and returns once it serves again.
func (a *apiServer) outage(ctx context.Context, down time.Duration) error {
	a.gate.Lock()
	defer a.gate.Unlock()
	a.mu.Lock()
	a.down = true
	a.mu.Unlock()
	// Not ctx: the server must come back even when the faults end.
	err := a.restart(context.WithoutCancel(ctx), down)
	a.mu.Lock()
	a.down, a.lastEnd = false, time.Now()
	a.mu.Unlock()
	if a.back != nil {
		a.back(time.Now())
	}
	return err
}

// exitVerdict says what to make of a replica found exited on its own at now, its output in
// logPath: wait (an outage is under way: it is restarted once the server is back, as a
// crash-looping pod would be), excused (the exit fell in an outage or just after it; counted
// by reason), or neither (a violation).
func (a *apiServer) exitVerdict(now time.Time, logPath string) (wait, excused bool, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		return true, false, ""
	}
	if a.lastEnd.IsZero() || now.After(a.lastEnd.Add(outageExitSlack)) {
		return false, false, ""
	}
	reason = "other (start-up without the API server)"
	if out, err := os.ReadFile(logPath); err == nil && bytes.Contains(out, []byte(leaseLostLog)) {
		reason = "leader lease lost"
	}
	a.exits[reason]++
	return false, true, reason
}

func (a *apiServer) exitCounts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.exits {
		out[k] = v
	}
	return out
}
