package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// Logf writes one line of the bench's log.
type Logf = func(format string, a ...any)

// NewLogf returns a Logf that writes each line to w after the time of day, to the millisecond.
func NewLogf(w io.Writer) Logf {
	return func(format string, a ...any) {
		fmt.Fprintf(w, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
}

// FlagExit turns the error of a bench's flag parsing into its exit: ok (go on) when err is nil;
// else code 0 for -h, or 2 for anything else, said on stderr after the bench's name.
func FlagExit(name string, err error, stderr io.Writer) (code int, ok bool) {
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 2, false
}

// Flags are the flags every bench has.
type Flags struct {
	Kustos   string // -kustos: the binary measured
	BinDir   string // -bin: where etcd and kube-apiserver (and what else the bench runs) are
	Out      string // -out: a file the report is also written to
	Workers  int    // -workers: parallel requests during setup
	Strict   bool   // -strict: a missed target fails the run
	KeepLogs bool   // -keep-logs: keep Kustos's output even when everything passed
}

// Help texts of -bin and -keep-logs, for the benches that have nothing to add.
const (
	BinHelp      = "directory holding etcd and kube-apiserver (default: $KUSTOS_TESTBIN, else <repo>/bin)"
	KeepLogsHelp = "keep Kustos's output even when everything passed"
)

// Register defines the flags on fs, with the given help texts of -bin and -keep-logs.
func (f *Flags) Register(fs *flag.FlagSet, binHelp, keepLogsHelp string) {
	fs.StringVar(&f.Kustos, "kustos", "", "path of the kustos binary to measure (required)")
	fs.StringVar(&f.BinDir, "bin", "", binHelp)
	fs.IntVar(&f.Workers, "workers", 32, "parallel requests during setup")
	fs.BoolVar(&f.Strict, "strict", true, "exit non-zero when a target is missed")
	fs.StringVar(&f.Out, "out", "", "also write the result table to this file")
	fs.BoolVar(&f.KeepLogs, "keep-logs", false, keepLogsHelp)
}

// LogLevelFlag defines -kustos-log-level, Kustos's --log-level, on fs.
func LogLevelFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "kustos-log-level", "error", "Kustos's --log-level (debug, info or error); its output is kept in a temporary directory")
}

// Check, after fs.Parse, refuses positional arguments and checks -kustos: given, and an
// executable file, which f.Kustos then names by its absolute path.
func (f *Flags) Check(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if f.Kustos == "" {
		return errors.New("-kustos is required (make build puts it in bin/kustos)")
	}
	abs, err := filepath.Abs(f.Kustos)
	if err != nil {
		return err
	}
	f.Kustos = abs
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("-kustos=%s: not an executable file", abs)
	}
	return nil
}

// Cluster is the control plane a run measures on, with the client every bench sets it up with.
type Cluster struct {
	*testenv.Env
	// Setup is the fast client of the setup and the samples (objects.SetupClient).
	Setup *kubernetes.Clientset

	logf Logf
}

// ControlPlane starts etcd and kube-apiserver from binDir (when empty: $KUSTOS_TESTBIN, else
// <repo>/bin), with Kustos's CRDs as its chart installs them when crds, logs how long that took,
// and builds the setup client. The caller stops it with Stop.
func ControlPlane(ctx context.Context, binDir string, crds bool, logf Logf) (*Cluster, error) {
	opts := testenv.Options{BinDir: binDir}
	if crds {
		root, err := testenv.RepoRoot()
		if err != nil {
			return nil, err
		}
		opts.CRDDirectoryPaths = []string{filepath.Join(root, "charts", "kustos", "files", "crds")}
	}
	t0 := time.Now()
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	logf("control plane up in %s", time.Since(t0).Round(time.Millisecond))
	c := &Cluster{Env: env, logf: logf}
	if c.Setup, err = objects.SetupClient(env.Config); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// WatchClient is a client of its own for the watches: the setup client's rate limiter must not
// matter to when an event arrives.
func (c *Cluster) WatchClient() (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.UserAgent = "kustos-bench-watch"
	return kubernetes.NewForConfig(cfg)
}

// Stop stops the control plane and logs why it could not.
func (c *Cluster) Stop() {
	if err := c.Env.Stop(); err != nil {
		c.logf("stopping the control plane: %v", err)
	}
}

// SignalContext is cancelled by SIGINT or SIGTERM, or by its stop function.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// TempLog makes a temporary directory, kustos-bench-<name>-*, for Kustos's output and returns it
// and the path of the log file in it.
func TempLog(name string) (dir, logPath string, err error) {
	dir, err = os.MkdirTemp("", "kustos-bench-"+name+"-")
	if err != nil {
		return "", "", err
	}
	return dir, filepath.Join(dir, "kustos.log"), nil
}

// Emit prints the report on stdout and, if out is not empty, also writes it to that file; an
// error writing it is logged and returned.
func Emit(stdout io.Writer, logf Logf, report, out string) error {
	fmt.Fprint(stdout, report)
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		logf("writing %s: %v", out, err)
		return err
	}
	return nil
}

// Outcome is how a run ended and what the flags say about it.
type Outcome struct {
	Failed   bool // the run or a measurement went wrong
	Missed   bool // a target was missed
	Strict   bool // -strict: a missed target fails the run
	KeepLogs bool // -keep-logs
}

// Finish keeps logDir (and says so) when asked to or when anything failed or missed its
// target, else removes it, and returns the exit code: 1 on failure or, with -strict, a missed
// target; else 0.
func Finish(logf Logf, logDir string, o Outcome) int {
	if o.KeepLogs || o.Failed || o.Missed {
		logf("Kustos output kept in %s", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	switch {
	case o.Failed:
		return 1
	case o.Missed && o.Strict:
		logf("a target was missed (-strict)")
		return 1
	}
	return 0
}
