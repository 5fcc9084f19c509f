// Command kustos keeps a GitOps-managed, multi-tenant cluster right-sized by proposing changes
// to Git instead of patching the cluster. Subcommands:
//
//	kustos run        run the controller against a cluster (kubeconfig or in-cluster)
//	kustos recommend  make the same decisions offline, from YAML/JSON objects
//	kustos cleaner eval  evaluate Cleaners offline against YAML/JSON objects
//	kustos status     one row per tracked Key, from the state Leases and the Cleaners
//	kustos submit     archive a directory as a ZIP and upload it (an exam's submission)
//	kustos version    print the version, commit, build date and Go version
//
// The flags of every command, their environment variables and defaults are in docs/cli.md,
// generated from the definitions (make docs).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/buildinfo"
	"github.com/kustos-dev/kustos/internal/cleanereval"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/expiryplan"
	"github.com/kustos-dev/kustos/internal/inactivityplan"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/recommend"
	"github.com/kustos-dev/kustos/internal/statusreport"
	"github.com/kustos-dev/kustos/internal/submit"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Execute(newRoot(stdin, stdout, stderr), args, stdout, stderr)
}

// rootLong is the root command's help text, and the introduction of docs/cli.md.
const rootLong = `Kustos keeps a GitOps-managed, multi-tenant cluster right-sized and tidy by proposing changes to
Git instead of patching the cluster. ` + "`kustos run`" + ` is the controller; the other commands make its
decisions offline or report its state. Every flag takes two dashes (--mode=pr or --mode pr);
-f and -o have one-letter forms.`

// newRoot is the kustos command and all its subcommands.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cobra.EnableCommandSorting = false // help and docs/cli.md list run first, as added
	root := &cobra.Command{
		Use:     "kustos",
		Short:   "keeps a GitOps-managed cluster right-sized and tidy through pull requests",
		Long:    rootLong,
		Version: buildinfo.Get().String(),
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unknown command %q", args[0])
			}
			cli.Usage(stderr, c)
			return cli.ExitCode(cli.ExitUsage)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(
		newRunCommand(stderr),
		recommend.NewCommand(stdin, stdout, stderr),
		group("cleaner", "Cleaners, offline", cleanereval.NewCommand(stdin, stdout, stderr), stderr),
		group("expiry", "the expiry detector, offline", expiryplan.NewCommand(stdin, stdout, stderr), stderr),
		group("inactivity", "the inactivity detector, offline", inactivityplan.NewCommand(stdin, stdout, stderr), stderr),
		statusreport.NewCommand(stdout, stderr),
		submit.NewCommand(stdout, stderr),
		newVersionCommand(stdout),
	)
	return root
}

// group is a command that only holds sub (kustos expiry plan); alone it prints its help and
// fails.
func group(name, short string, sub *cobra.Command, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use: name, Short: short, Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unknown command %q", args[0])
			}
			cli.Usage(stderr, c)
			return cli.ExitCode(cli.ExitUsage)
		},
	}
	c.AddCommand(sub)
	return c
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "print the version, commit, build date and Go version", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(stdout, buildinfo.Get())
			return nil
		},
	}
}

// runLong is the help text of kustos run.
const runLong = `Runs the controller against a cluster (a kubeconfig, or in-cluster): the detectors decide, and
--mode says what happens to their decisions: observe (the default) records them as Events and log
lines only; pr proposes them as pull requests to the GitOps repository; direct changes objects no
GitOps tool manages.`

func newRunCommand(stderr io.Writer) *cobra.Command {
	var r runFlagSet
	cmd := &cobra.Command{
		Use: "run", Short: "run the controller (observer mode by default)", Long: runLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected arguments: %s", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			o, _, level, err := r.finish(c.Flags(), os.LookupEnv)
			if err != nil {
				return err
			}
			return cli.ExitCode(run(o, &r.cluster, level, stderr))
		},
	}
	cli.ReadsEnv(cmd)
	r.define(cmd.Flags())
	return cmd
}

// run starts the controller with o and returns the exit code when it stops. What stops it
// before it starts (options that cannot work, no cluster to reach) is one line on stderr, in the
// form of a flag error, before any JSON log line: the options first, so that --mode=pr without
// --git-repo is said whether or not a kubeconfig is at hand.
func run(o app.Options, cluster *cli.Cluster, level string, stderr io.Writer) int {
	log, err := newLogger(stderr, level)
	if err != nil {
		fmt.Fprintln(stderr, "kustos run:", err)
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(stderr, "kustos run:", err)
		return 2
	}
	// Not controller-runtime's GetConfig, which logs an ERROR line at every start outside a pod
	// and does not say which source failed; the order is its: the service account before
	// ~/.kube/config.
	cfg, _, err := cluster.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "kustos run:", err)
		return 1
	}
	o.Log = log
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	gcTarget, gcSource := applyGCPercent(o.GCPercent, os.LookupEnv)

	info := buildinfo.Get()
	cfg.UserAgent = "kustos/" + info.Version
	// A signal during start-up (its reads of keys and certificates, the GitHub check) ends it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mgr, err := app.NewManager(ctx, cfg, o)
	if err != nil {
		log.Error(err, "cannot start")
		return 2
	}
	log.Info("starting", "version", info.Version, "commit", info.Commit, "mode", o.Mode, "stateNamespace", o.StateNamespace,
		"threshold", quota.FormatRat(o.Defaults.Threshold), "increment", quota.FormatRat(o.Defaults.Increment),
		"cooldown", lifecycle.FormatDuration(o.DefaultCooldown), "repository", o.PR.GitHub.Repository, "autoMerge", o.PR.AutoMerge,
		"gcPercent", gcTarget, "gcPercentFrom", gcSource)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "stopped with an error")
		return 1
	}
	log.Info("stopped")
	return 0
}

// newLogger writes JSON lines: one object per line with stable keys, for log pipelines.
func newLogger(w io.Writer, level string) (logr.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "error":
		l = slog.LevelError
	default:
		return logr.Discard(), fmt.Errorf("--log-level=%q: want debug, info or error", level)
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return logr.FromSlogHandler(quietStop{h}), nil
}

// Controller-runtime's manager, stopping with leader election on, releases the lease, which
// its own callback then reports as lost, logged as an ERROR after the stop began (reported
// upstream as controller-runtime issue 3535). A lease lost while running stops the manager
// with an error instead, which run logs; so this message, with this error, is only ever the
// release of a stop Kustos asked for.
const (
	msgErrorAfterStop = "error received after stop sequence was engaged"
	errLeaderLost     = "leader election lost"
)

// quietStop logs controller-runtime's report of the leader lease released on a normal stop
// as what it is, at INFO: an alert on ERROR lines must not fire at every rollout.
type quietStop struct{ slog.Handler }

func (h quietStop) Handle(ctx context.Context, r slog.Record) error {
	if r.Level != slog.LevelError || r.Message != msgErrorAfterStop {
		return h.Handler.Handle(ctx, r)
	}
	released := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && err.Error() == errLeaderLost {
			released = true
		} else if a.Value.Kind() == slog.KindString && a.Value.String() == errLeaderLost {
			released = true
		}
		return !released
	})
	if !released {
		return h.Handler.Handle(ctx, r)
	}
	if !h.Enabled(ctx, slog.LevelInfo) {
		return nil
	}
	return h.Handler.Handle(ctx, slog.NewRecord(r.Time, slog.LevelInfo, "released the leader lease on stop", r.PC))
}

func (h quietStop) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietStop{h.Handler.WithAttrs(attrs)}
}

func (h quietStop) WithGroup(name string) slog.Handler { return quietStop{h.Handler.WithGroup(name)} }
