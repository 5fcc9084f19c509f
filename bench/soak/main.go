package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/harness"
)

const (
	clusterName    = "soak"
	stateNamespace = "kustos-soak"
	ghOwner        = "acme"
	ghRepo         = "gitops"
	baseBranch     = "main"
	requiredCheck  = "ci/validate"
	stopGrace      = 30 * time.Second
)

// breakEnv names the deliberately broken mode: the fake human itself force-pushes over a
// commit it pushed onto a Kustos branch, so that the run shows invariant 6's checker catching
// an overwrite. It is read by this bench only; Kustos never sees it.
const breakEnv = "KUSTOS_SOAK_BREAK"

type options struct {
	harness.Flags

	logLevel  string
	duration  time.Duration
	seed      uint64
	replicas  int
	tick      time.Duration
	maxTenant int
	// settle is the last part of the run: no new faults and no new workload; the invariants,
	// liveness included, are checked until the end.
	settle  time.Duration
	verbose bool
	// groupBy is the expiry detector's --group-by: namespace (Kustos's default: one PR for a
	// tenant's previews) or none (one PR a preview).
	groupBy string
	// apiEvery is -api-restart-every: an API server restart at least this often (0: only as
	// the faults draw them).
	apiEvery time.Duration
	// broken: the fake human overwrites its own commit on a Kustos branch (breakEnv).
	broken string
}

func main() {
	harness.Main(harness.Bench[options]{Name: "soak", Parse: parseFlags, ManyLogs: true, Run: run})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("soak", stderr)
	var o options
	o.Register(fs, harness.BinHelp+"; also kube-controller-manager", harness.KeepLogsHelp)
	fs.DurationVar(&o.duration, "duration", 20*time.Minute, "how long the run lasts, the settle period at its end included")
	seed := fs.Uint64("seed", 0, "seed of the workload's and the faults' RNG (0: from the clock); printed at the start, so a run can be replayed")
	fs.IntVar(&o.replicas, "replicas", 2, "Kustos replicas, with leader election")
	fs.DurationVar(&o.tick, "tick", 0, "time between two workload actions (0: 3s, or longer for a long run, so that it makes at most "+fmt.Sprint(maxActions)+" and its content-creating GitHub requests stay under the 500 an hour the server enforces, as GitHub does)")
	fs.IntVar(&o.maxTenant, "tenants", 6, "most tenant namespaces alive at once")
	fs.DurationVar(&o.settle, "settle", 0, "the last part of the run, without faults or new workload, in which everything due must be proposed or done (0: a third of -duration, from 90s to 5m)")
	fs.StringVar(&o.groupBy, "group-by", "namespace", "the expiry detector's --group-by: namespace (Kustos's default: a tenant's previews are removed by one pull request) or none (one a preview)")
	fs.DurationVar(&o.apiEvery, "api-restart-every", 0, "restart the API server as the next fault once this long has passed since the last restart, so that a short run has several (0: only as the faults draw them, at most every "+apiRestartEvery.String()+", and once a run)")
	fs.BoolVar(&o.verbose, "v", false, "log each workload action on a named object (tenant, preview, PR)")
	harness.LogLevelFlag(fs, &o.logLevel)
	o.logLevel = "info"
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	o.seed = *seed
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.settle == 0 {
		o.settle = min(max(o.duration/3, 90*time.Second), 5*time.Minute)
	}
	if o.tick == 0 {
		o.tick = defaultTick(o.duration - o.settle)
	}
	o.broken = os.Getenv(breakEnv)
	switch {
	case o.duration < time.Minute:
		return o, errors.New("-duration must be at least 1m")
	case o.settle < 30*time.Second || o.settle >= o.duration:
		return o, errors.New("-settle must be at least 30s and below -duration")
	case o.apiEvery < 0:
		return o, errors.New("-api-restart-every must not be negative")
	case o.replicas < 1 || o.maxTenant < 1 || o.tick <= 0:
		return o, errors.New("-replicas and -tenants must be at least 1, -tick positive")
	case o.groupBy != "namespace" && o.groupBy != "none":
		return o, errors.New("-group-by must be namespace or none")
	case o.broken != "" && o.broken != "overwrite" && o.broken != breakSilentPartial:
		return o, errors.New(breakEnv + " must be empty, overwrite or " + breakSilentPartial)
	}
	return o, nil
}

// maxActions bounds the workload actions of a run whose -tick is not given. Each preview costs
// Kustos about six content-creating GitHub requests (tree, commit, branch, pull request, labels,
// merge), and GitHub allows 500 of them an hour (the server enforces it): past about 150
// actions a run asks more of GitHub than GitHub gives, and every proposal after the limit waits
// for the hour to pass, which no liveness bound can allow for.
const maxActions = 140

// defaultTick is 3 s, or the tick that spreads maxActions over a longer workload period: the
// labs' actions, one every two ticks, count too (a pause is a PR like a removal), so a tick
// makes one and a half. (The 20-minute run 2027 spread 140 over the previews' ticks alone and
// did 174: GitHub's 500 writes an hour were spent, and the last removals waited.)
func defaultTick(workload time.Duration) time.Duration {
	return max(3*time.Second, (workload * 3 / 2 / maxActions).Round(100*time.Millisecond))
}
