package statusreport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/state"
)

const longText = `Prints one row per Key Kustos tracks, read from its state Leases and the Cleaners: detector,
target, open pull request, last action, pending decision, Ready and why (Cleaners), next check
and age. An environment with a lifetime is listed once Kustos warned its owner or decided
something about it, not while it only waits for its warning. -o json prints one JSON object
per line.

Then what the quotas could give back, per resource ("requests.cpu: 184 reclaimable in 61
quotas; 40 blocked by window"; -o json: a last line {"totals":{…}} as kustos recommend prints
it): kustos recommend's decision, with run's default flags, over the cluster's quotas and the
usage windows the state Leases keep, or with --prometheus-url the one Prometheus holds, as the
controller reads it (without it, a window the controller reads from Prometheus counts as
incomplete here).

Then what owners did through their links (extend, keep, resume): the count of each and the last
five (action, target, when), from the OwnerExtended, OwnerKept and OwnerResumed Events Kustos
wrote, as long as the API server keeps them (--event-ttl; -o json: a last line
{"ownerActions":{…}}).

With --orphans it prints instead the objects the expiry detector leaves alone: Namespaces and
objects of --lifecycle-kinds without an owner (kustos.io/owner) or a lifetime (kustos.io/ttl,
kustos.io/expires-at, --default-ttl), and those whose expiry metadata cannot be used. Give it
the controller's --lifecycle-kinds and --default-ttl. With a namespace it adds the vSphere VMs
the controller's last crawl found without EC_OWNER and EC_TTL in their notes (and none kept).
Give it the controller's --namespace-selector too, and it lists only the namespaces that
installation serves.`

// NewCommand is `kustos status`: the cluster flags, --lifecycle-kinds and --default-ttl are
// package cli's. Its namespace is the one Kustos runs in, where its state Leases are, as
// `kubectl -n kustos-system get leases` reads them; --state-namespace, run's name for it, is
// another spelling.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	var (
		cluster     cli.Cluster
		out         = "table"
		listOrphans bool
		e           cli.Expiry
		window      cli.WindowSource
		selector    string
	)
	cmd := &cobra.Command{
		Use:   "status [-n NS] [--context NAME] [--kubeconfig FILE] [-o table|json] [--orphans [--lifecycle-kinds LIST] [--default-ttl D]]",
		Short: "one row per Key Kustos tracks (state Leases and Cleaners)",
		Long:  longText,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			sel, err := nsscope.Parse(selector)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			cfg, ns, err := cluster.Load(os.LookupEnv)
			if err != nil {
				fmt.Fprintln(stderr, "kustos status:", err)
				return cli.ExitCode(cli.ExitError)
			}
			if ns == "" && !listOrphans {
				return cli.Usagef("need -n/--namespace, the namespace Kustos runs in: the kubeconfig context names none and $POD_NAMESPACE is not set")
			}
			return cli.ExitCode(status(cfg, ns, out, listOrphans, e, sel, &window, stdout, stderr))
		},
	}
	fs := cmd.Flags()
	cluster.AddFlags(fs, "the namespace Kustos runs in, where its state Leases are (default: the kubeconfig context's namespace, else $POD_NAMESPACE); --state-namespace is another spelling", "state-namespace")
	cli.InGroup(fs, cli.GroupGeneral, func() {
		fs.VarP(cli.Enum{V: &out, Allowed: []string{"table", "json"}}, "output", "o", "output: a table, or JSON lines")
		fs.BoolVar(&listOrphans, "orphans", false, "list the objects the expiry detector leaves alone (no owner, no lifetime, unusable metadata)")
		fs.StringVar(&selector, "namespace-selector", "", "with --orphans: only the namespaces this label selector selects (the controller's --namespace-selector)")
	})
	e.AddScopeFlags(fs)
	window.AddFlags(fs, "from the daily peaks the state Leases keep (a quota whose window the controller reads from Prometheus has none there)")
	return cmd
}

// Run executes `kustos status`. It returns the exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	return cli.ExecuteAlone(NewCommand(stdout, stderr), "kustos status", args, stdout, stderr)
}

func status(cfg *rest.Config, ns, out string, listOrphans bool, e cli.Expiry, sel labels.Selector, window *cli.WindowSource, stdout, stderr io.Writer) int {
	kinds, settings := e.Kinds, e.Settings
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if listOrphans {
		rows, err := orphans.List(ctx, c, kinds, settings, time.Now(), sel)
		if err == nil {
			var vms []orphans.Row
			vms, err = orphans.VMs(ctx, c, ns, time.Now())
			rows = append(rows, vms...)
		}
		if err == nil {
			err = PrintOrphans(stdout, rows, out)
		}
		if err != nil {
			fmt.Fprintln(stderr, "kustos status:", err)
			return 1
		}
		return 0
	}
	rows, err := Gather(ctx, c, ns, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	if err := Print(stdout, rows, out); err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	// The totals are a summary beside the rows: without the right to list quotas the rows
	// still stand.
	history, err := window.History()
	if err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	totals, err := GatherReclaim(ctx, c, ns, history, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "kustos status: reclaimable totals left out:", err)
		return 0
	}
	if err := PrintReclaim(stdout, totals, out); err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	// The audit too: without the right to list Events the rows and totals still stand.
	actions, err := GatherOwnerActions(ctx, c, DefaultOwnerActions)
	if err != nil {
		fmt.Fprintln(stderr, "kustos status: owner actions left out:", err)
		return 0
	}
	if err := PrintOwnerActions(stdout, actions, out); err != nil {
		fmt.Fprintln(stderr, "kustos status:", err)
		return 1
	}
	return 0
}

// Gather reads the state Leases of namespace and every Cleaner (none when the CRD is not
// installed) and returns the rows.
func Gather(ctx context.Context, c client.Reader, namespace string, now time.Time) ([]Row, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{state.LabelManagedBy: state.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing state Leases in %s: %w", namespace, err)
	}
	var cleaners v1alpha1.CleanerList
	if err := c.List(ctx, &cleaners); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing Cleaners: %w", err)
	}
	return Rows(leases.Items, cleaners.Items, now), nil
}

// Print writes rows as a table or as JSON lines.
func Print(w io.Writer, rows []Row, format string) error {
	if format == "json" {
		return jsonLines(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DETECTOR\tTARGET\tPR\tLAST ACTION\tPENDING\tREADY\tREASON\tNEXT CHECK\tAGE")
	ts := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range rows {
		reason := r.Reason
		if r.Problem != "" {
			reason = "InvalidState: " + r.Problem
		}
		pr := r.PullRequest
		if pr != "" && r.Group != "" {
			pr += " (group)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Detector, r.Target, dash(pr), ts(r.LastAction),
			dash(r.Pending), dash(r.Ready), dash(reason), ts(r.NextCheck), r.Age)
	}
	return tw.Flush()
}

// jsonLines writes one JSON object per row and line.
func jsonLines[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
