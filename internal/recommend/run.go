package recommend

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = 0 // also when there is nothing to recommend
	ExitError = 1 // the output could not be written
	ExitUsage = 2 // bad flags or unreadable input
)

const usageText = `Usage: kustos recommend [-f FILE|-]... [--threshold N] [--increment X] [--cooldown D] [--now RFC3339]

Makes the controller's ResourceQuota decision offline, for a dry run or to review a cluster
dump, and prints one JSON object per recommended increase per line:

  {"namespace","quota","resource","current","used","usedPercent","recommended","trigger","message"}

Input is Kubernetes objects as YAML (one or more documents) or JSON, also kind: List, e.g.

  kubectl get namespaces,resourcequotas,events,replicasets,statefulsets,daemonsets,jobs -A -o yaml

It reads Namespaces (resizer.io/* annotations), ResourceQuotas (with status), FailedCreate
Events (v1 and events.k8s.io/v1), the workloads they name (to count missing pods; without
them each failing owner counts as one missing pod) and Kustos state Leases (cooldowns).
Other kinds are ignored. Warnings and notices go to stderr.

Flags:
  -f, --filename FILE   read FILE, or - for stdin; repeatable (default -)
  --threshold N         threshold in percent for namespaces without annotations (default 80)
  --increment X         increase, as a percentage "20%" or a fraction "0.2" (default 20%)
  --cooldown D          time after a recommendation during which no other is made (default 60m)
  --now T               decide as of this RFC 3339 time (default: now)

Exit status: 0 on success, also when nothing is to be raised; 2 for bad flags or input.
`

// Run executes `kustos recommend` with args (without the subcommand name). It returns the exit
// code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recommend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	var files manifest.Files
	fs.Var(&files, "f", "input file, or - for stdin")
	fs.Var(&files, "filename", "input file, or - for stdin")
	thresholdFlag := fs.String("threshold", "80", "threshold in percent")
	incrementFlag := fs.String("increment", "20%", "increase")
	cooldown := fs.Duration("cooldown", 60*time.Minute, "cooldown")
	nowFlag := fs.String("now", "", "time of the decision, RFC 3339")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage // the flag package has printed the problem and the usage
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "kustos recommend: "+format+"\n", args...)
		return ExitUsage
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q (give input files with -f)", fs.Arg(0))
	}

	opt := Options{Cooldown: *cooldown}
	var err error
	if opt.Defaults.Threshold, err = quota.ParseThreshold(*thresholdFlag); err != nil {
		return fail("invalid --threshold %q: %v", *thresholdFlag, err)
	}
	if opt.Defaults.Increment, err = quota.ParseIncrement(*incrementFlag); err != nil {
		return fail("invalid --increment %q: %v", *incrementFlag, err)
	}
	if opt.Cooldown < 0 {
		return fail("invalid --cooldown %s: must not be negative", opt.Cooldown)
	}
	if *nowFlag == "" {
		opt.Now = time.Now() // the only clock this command reads
	} else if opt.Now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
		return fail("invalid --now %q: not an RFC 3339 time like 2024-05-01T12:00:00Z", *nowFlag)
	}

	if len(files) == 0 {
		files = manifest.Files{"-"}
	}
	var objs []Object
	for _, arg := range files {
		name, data, err := manifest.ReadInput(arg, stdin)
		if err == nil {
			var more []Object
			more, err = Load(name, data)
			objs = append(objs, more...)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return ExitUsage
		}
	}

	res := Recommend(objs, opt)
	for _, m := range res.Messages {
		fmt.Fprintln(stderr, m)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, r := range res.Recommendations {
		if err := enc.Encode(lineOf(r)); err != nil {
			fmt.Fprintf(stderr, "kustos recommend: writing output: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}

// Line is one output line. The field order is part of the interface.
type Line struct {
	Namespace   string  `json:"namespace"`
	Quota       string  `json:"quota"`
	Resource    string  `json:"resource"`
	Current     string  `json:"current"`
	Used        string  `json:"used"`
	UsedPercent float64 `json:"usedPercent"`
	Recommended string  `json:"recommended"`
	Trigger     string  `json:"trigger"`
	Message     string  `json:"message"`
}

func lineOf(r quota.Recommendation) Line {
	pct := math.Round(r.UsedPercent*100) / 100
	if math.IsInf(pct, 0) || math.IsNaN(pct) {
		pct = math.MaxFloat64 // absurd quantities; JSON has no infinity
	}
	return Line{
		Namespace:   r.Namespace,
		Quota:       r.Quota,
		Resource:    string(r.Resource),
		Current:     r.Current.String(),
		Used:        r.Used.String(),
		UsedPercent: pct,
		Recommended: r.Recommended.String(),
		Trigger:     string(r.Trigger),
		Message:     r.Message,
	}
}
