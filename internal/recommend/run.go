package recommend

import (
	"context"
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

and, beside them, one per resource whose hard value lies above the usage window's target
(empty "blocked": it would be proposed), then the reclaimable totals per resource last:

  {"namespace","quota","resource","current","used","target","recommended","trigger":"shrink",
   "peak","peakAt","windowComplete","gates","blocked","reclaimable","message"}
  {"totals":{"requests.cpu":{"reclaimable","quotas","blocked":{"window":N}}}}

The window is read from the state Leases' daily peaks in the input, or with --prometheus-url
from Prometheus (kube-state-metrics' kube_resourcequota), as the controller reads it.

Input is Kubernetes objects as YAML (one or more documents) or JSON, also kind: List, e.g.

  kubectl get namespaces,resourcequotas,events,replicasets,statefulsets,daemonsets,jobs -A -o yaml

It reads Namespaces (resizer.io/* annotations), ResourceQuotas (with status), FailedCreate
Events (v1 and events.k8s.io/v1), the workloads they name (to count missing pods; without
them each failing owner counts as one missing pod) and Kustos state Leases (cooldowns and the
usage window they keep).
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
	var window cli.WindowSource
	fs := cmd.Flags()
	q.AddFlags(fs)
	q.AddWindowFlags(fs)
	// Every shrink is printed, held back or not: the opt-in has nothing to decide here, and is
	// accepted only so that run's flags can be given as they are.
	_ = fs.MarkHidden("enable-shrink")
	window.AddFlags(fs, "from the state Leases of the input")
	cmd.Run = func(now time.Time) int {
		if q.Cooldown < 0 {
			return cmd.Fail("invalid --cooldown %s: must not be negative", q.Cooldown)
		}
		opt := Options{Now: now, Defaults: q.Defaults, Cooldown: q.Cooldown, Window: q.Window}
		h, err := window.History()
		if err != nil {
			return cmd.Fail("%v", err)
		}
		opt.History = h
		return recommend(context.Background(), opt, cmd.Files, stdin, stdout, stderr)
	}
	return cmd.Cobra
}

func recommend(ctx context.Context, opt Options, files manifest.Files, stdin io.Reader, stdout, stderr io.Writer) int {
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

	res := Recommend(ctx, objs, opt)
	for _, m := range res.Messages {
		fmt.Fprintln(stderr, m)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, line := range lines(res) {
		if err := enc.Encode(line); err != nil {
			fmt.Fprintf(stderr, "kustos recommend: writing output: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}

// lines are the output lines: grows and shrinks in the order of namespace, quota and resource
// (a quota has one kind or the other), then the totals when there is any shrink.
func lines(res Result) []any {
	out := make([]any, 0, len(res.Recommendations)+len(res.Shrinks)+1)
	g, s := res.Recommendations, res.Shrinks
	for len(g) > 0 || len(s) > 0 {
		if len(s) == 0 || (len(g) > 0 && !shrinkFirst(s[0], g[0])) {
			out = append(out, lineOf(g[0]))
			g = g[1:]
			continue
		}
		out = append(out, shrinkLineOf(s[0]))
		s = s[1:]
	}
	if len(res.Shrinks) > 0 {
		out = append(out, TotalsOf(res.Totals))
	}
	return out
}

func shrinkFirst(s quota.Shrink, g quota.Recommendation) bool {
	if s.Namespace != g.Namespace {
		return s.Namespace < g.Namespace
	}
	if s.Quota != g.Quota {
		return s.Quota < g.Quota
	}
	return s.Resource < g.Resource
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

// ShrinkLine is one shrink output line. The field order is part of the interface.
type ShrinkLine struct {
	Namespace      string `json:"namespace"`
	Quota          string `json:"quota"`
	Resource       string `json:"resource"`
	Current        string `json:"current"`
	Used           string `json:"used"`
	Target         string `json:"target"`
	Recommended    string `json:"recommended"`
	Trigger        string `json:"trigger"`
	Peak           string `json:"peak,omitempty"`
	PeakAt         string `json:"peakAt,omitempty"`
	WindowComplete bool   `json:"windowComplete"`
	// Gates are the gates that shaped Recommended (floor, step); Blocked those that hold it
	// back, empty when it would be proposed.
	Gates   []string `json:"gates"`
	Blocked []string `json:"blocked"`
	// Reclaimable is what the quota could give back of the resource over its shrinks (hard −
	// the target raised to the floor); "0" when the floor leaves nothing.
	Reclaimable string `json:"reclaimable"`
	Message     string `json:"message"`
}

func shrinkLineOf(sh quota.Shrink) ShrinkLine {
	l := ShrinkLine{
		Namespace: sh.Namespace, Quota: sh.Quota, Resource: string(sh.Resource),
		Current: sh.Current.String(), Used: sh.Used.String(), Target: sh.Target.String(),
		Recommended: sh.Recommended.String(), Trigger: "shrink", WindowComplete: sh.WindowComplete,
		Gates: gateNames(sh.Applied), Blocked: gateNames(sh.Blocked), Reclaimable: "0", Message: sh.Message,
	}
	if sh.HasPeak {
		l.Peak = sh.Peak.Value.String()
		if !sh.Peak.At.IsZero() {
			l.PeakAt = sh.Peak.At.UTC().Format(time.RFC3339)
		}
	}
	if rs := quota.Reclaims([]quota.Shrink{sh}); len(rs) == 1 {
		l.Reclaimable = rs[0].Amount.String()
	}
	return l
}

func gateNames(gs []quota.Gate) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = string(g)
	}
	return out
}

// TotalsLine is the last line: per resource, what the quotas could give back, in how many
// quotas, and how many of those each gate holds back now.
type TotalsLine struct {
	Totals map[string]Total `json:"totals"`
}

// Total is one resource's entry of TotalsLine.
type Total struct {
	Reclaimable string         `json:"reclaimable"`
	Quotas      int            `json:"quotas"`
	Blocked     map[string]int `json:"blocked"`
}

// TotalsOf is the totals line of t.
func TotalsOf(t quota.ReclaimTotals) TotalsLine {
	out := TotalsLine{Totals: map[string]Total{}}
	for r, tot := range t {
		blocked := map[string]int{}
		for g, n := range tot.Blocked {
			blocked[string(g)] = n
		}
		out.Totals[string(r)] = Total{Reclaimable: tot.Reclaimable.String(), Quotas: tot.Quotas, Blocked: blocked}
	}
	return out
}
