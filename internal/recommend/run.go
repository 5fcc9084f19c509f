package recommend

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = cli.ExitOK    // also when there is nothing to recommend
	ExitError = cli.ExitError // the output could not be written
	ExitUsage = cli.ExitUsage // bad flags or unreadable input
)

const longText = `Makes the controller's ResourceQuota decision offline, for a dry run or to review a cluster
dump, and prints one JSON object per recommended increase per line:

  {"namespace","quota","resource","current","used","usedPercent","recommended","trigger","message"}

Input is Kubernetes objects as YAML (one or more documents) or JSON, also kind: List, e.g.

  kubectl get namespaces,resourcequotas,events,replicasets,statefulsets,daemonsets,jobs -A -o yaml

It reads Namespaces (resizer.io/* annotations), ResourceQuotas (with status), FailedCreate
Events (v1 and events.k8s.io/v1), the workloads they name (to count missing pods; without
them each failing owner counts as one missing pod) and Kustos state Leases (cooldowns).
Other kinds are ignored. Warnings and notices go to stderr.

Exit status: 0 on success, also when nothing is to be raised; 2 for bad flags or input.
`

// name is the command's path.
const name = "kustos recommend"

// Run executes `kustos recommend` with args (without the subcommand name). It returns the exit
// code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.ExecuteAlone(NewCommand(stdin, stdout, stderr), name, args, stdout, stderr)
}

// NewCommand is `kustos recommend`: --threshold, --increment and --cooldown are run's (package
// cli), so both read them alike and with the same defaults.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := manifest.NewCommand(name, "[-f FILE|-]... [--threshold N] [--increment X] [--cooldown D] [--now RFC3339]",
		"decide offline from Kubernetes objects in YAML or JSON files", longText, stderr)
	var q cli.Quota
	q.AddFlags(cmd.Flags())
	cmd.Run = func(now time.Time) int {
		if q.Cooldown < 0 {
			return cmd.Fail("invalid --cooldown %s: must not be negative", q.Cooldown)
		}
		return recommend(Options{Now: now, Defaults: q.Defaults, Cooldown: q.Cooldown}, cmd.Files, stdin, stdout, stderr)
	}
	return cmd.Cobra
}

func recommend(opt Options, files manifest.Files, stdin io.Reader, stdout, stderr io.Writer) int {
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
