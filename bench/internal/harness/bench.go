package harness

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// Options are a bench's parsed flags: a struct that embeds Flags.
type Options interface{ shared() Flags }

func (f Flags) shared() Flags { return f }

// Bench is one bench as Main runs it.
type Bench[O Options] struct {
	// Name names the bench's flag set, its flag errors on stderr and its temporary directory.
	Name string
	// Parse parses the command line; help and flag errors go to stderr.
	Parse func(args []string, stderr io.Writer) (O, error)
	// Run measures, and renders the report.
	Run func(s *Session, o O) Result
	// NoVersion leaves the kustos binary's version out of the first line of the log.
	NoVersion bool
	// ManyLogs: the run starts Kustos more than once, each with its own log file in LogDir,
	// which the first line of the log names instead of LogPath.
	ManyLogs bool
}

// Session is what Main gives a bench's run.
type Session struct {
	Ctx     context.Context // cancelled by SIGINT or SIGTERM
	Logf    Logf            // the bench's log, on stderr
	Stderr  io.Writer
	LogDir  string // the temporary directory for Kustos's output, which Main keeps or removes
	LogPath string // kustos.log in LogDir
}

// Result is how a bench's run ended.
type Result struct {
	// Err: the run could not be carried through. Main logs it with the last lines of LogPath.
	Err error
	// Report is printed on stdout and written to -out.
	Report string
	// Failed: a measurement went wrong, though the run was carried through.
	Failed bool
	// Missed: a target was missed.
	Missed bool
	// Failures are logged, each as "FAILED: <line>", after the report.
	Failures []string
}

// Main is a bench's main: it runs b on the command line and exits with Run's code.
func Main[O Options](b Bench[O]) {
	// The bench's own clients (envtest among them) log through controller-runtime; they have
	// nothing to say that the report does not, and an unset logger prints a warning with a
	// stack trace.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(Run(b, os.Args[1:], os.Stdout, os.Stderr))
}

// Run is the skeleton every bench shares: it parses the flags (exit code 0 after -h, 2 after a
// flag error), makes the context SIGINT or SIGTERM cancel, the log and the temporary directory,
// runs b, logs its error, prints (and writes) its report and returns Finish's exit code.
func Run[O Options](b Bench[O], args []string, stdout, stderr io.Writer) int {
	o, err := b.Parse(args, stderr)
	if code, ok := FlagExit(b.Name, err, stderr); !ok {
		return code
	}
	f := o.shared()
	ctx, stop := SignalContext()
	defer stop()
	logf := NewLogf(stderr)
	logDir, logPath, err := TempLog(b.Name)
	if err != nil {
		logf("%v", err)
		return 1
	}
	output := logPath
	if b.ManyLogs {
		output = logDir
	}
	if b.NoVersion {
		logf("kustos %s; %d CPUs; Kustos output in %s", f.Kustos, runtime.NumCPU(), output)
	} else {
		logf("kustos %s (%s); %d CPUs; Kustos output in %s", f.Kustos, kustosproc.Version(f.Kustos), runtime.NumCPU(), output)
	}

	r := b.Run(&Session{Ctx: ctx, Logf: logf, Stderr: stderr, LogDir: logDir, LogPath: logPath}, o)
	failed := r.Failed || r.Err != nil
	if r.Err != nil {
		logf("FAILED: %v", r.Err)
		kustosproc.Tail(stderr, logPath, 20)
	}
	if err := Emit(stdout, logf, r.Report, f.Out); err != nil {
		failed = true
	}
	for _, l := range r.Failures {
		logf("FAILED: %s", l)
	}
	return Finish(logf, logDir, Outcome{Failed: failed, Missed: r.Missed, Strict: f.Strict, KeepLogs: f.KeepLogs})
}

// NewFlagSet is a bench's flag set: it returns parsing errors, and says them and -h's usage on
// stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse parses args on fs, where f is registered, and checks f (Check).
func (f *Flags) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return f.Check(fs)
}
