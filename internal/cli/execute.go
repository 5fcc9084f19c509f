package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes of every kustos command.
const (
	ExitOK    = 0
	ExitError = 1 // a failure while running: the output could not be written, no cluster
	ExitUsage = 2 // bad flags, arguments or input
)

// UsageError is a bad command line: Execute prints it after the command's name, with a pointer
// to --help, and exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode ends a command with Code, its message already printed (Code 0: success, quietly).
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Execute runs root with args and returns the process's exit code. Flag errors name the flag
// and what it accepts, suggest the flag meant for a typo and the double-dash form for the
// single-dash one Go's flag package took.
func Execute(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: flagError(c.Flags(), err)}
	})
	SetUsage(root)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var code ExitCode
	if errors.As(err, &code) {
		return int(code)
	}
	name := root.Name()
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var usage *UsageError
	if errors.As(err, &usage) || isCobraUsage(err) {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return ExitError
}

// isCobraUsage: cobra's own errors about the command line (unknown command, arguments).
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.Contains(msg, "arg(s)") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "invalid argument")
}

// flagError rewrites pflag's errors so that they name the flag and the form it takes.
func flagError(fs *pflag.FlagSet, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var required *pflag.ValueRequiredError
	switch {
	case errors.As(err, &notExist):
		if short := notExist.GetSpecifiedShortnames(); short != "" {
			// -mode=pr: Go's flag package took one dash; pflag reads it as shorthands m, o, d, e.
			long, _, _ := strings.Cut(short, "=")
			if f := fs.Lookup(long); f != nil {
				return fmt.Errorf("unknown flag -%s: flags take two dashes: --%s", short, strings.Replace(short, long, f.Name, 1))
			}
			return fmt.Errorf("unknown flag -%s (flags take two dashes, --name=value)", short)
		}
		name := notExist.GetSpecifiedName()
		if near := nearest(fs, name); near != "" {
			return fmt.Errorf("unknown flag --%s; did you mean --%s?", name, near)
		}
		return fmt.Errorf("unknown flag --%s", name)
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return fmt.Errorf("invalid --%s=%q: %w", f.Name, invalid.GetValue(), causeOf(f, invalid.Unwrap()))
	case errors.As(err, &required):
		f := required.GetFlag()
		return fmt.Errorf("--%s needs a value: --%s=%s", f.Name, f.Name, placeholder(f))
	}
	return err
}

// causeOf says what f accepts where the value's own error is a Go parser's (strconv's); the
// values of package cli and lifecycle say it themselves.
func causeOf(f *pflag.Flag, err error) error {
	switch f.Value.Type() {
	case "bool":
		return errors.New("want true or false")
	case "int", "int64", "int32":
		return errors.New("want a whole number")
	}
	return err
}

func placeholder(f *pflag.Flag) string {
	name, _ := pflag.UnquoteUsage(f)
	if name == "" {
		return "VALUE"
	}
	return strings.ToUpper(name)
}

// nearest is the flag of fs closest to name by edit distance, when it is close enough to be a
// typo of it; "" otherwise.
func nearest(fs *pflag.FlagSet, name string) string {
	best, bestD := "", len(name)
	fs.VisitAll(func(f *pflag.Flag) {
		if d := distance(name, f.Name); !f.Hidden && d < bestD {
			best, bestD = f.Name, d
		}
	})
	if bestD > 2 || bestD*3 > len(name) {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ExecuteAlone runs cmd as the command path names it ("kustos expiry plan"), under parents
// made for the purpose, so that its messages and help read as under `kustos`.
func ExecuteAlone(cmd *cobra.Command, path string, args []string, stdout, stderr io.Writer) int {
	words := strings.Fields(path)
	root := &cobra.Command{Use: words[0]}
	parent := root
	for _, w := range words[1 : len(words)-1] {
		p := &cobra.Command{Use: w}
		parent.AddCommand(p)
		parent = p
	}
	parent.AddCommand(cmd)
	return Execute(root, append(append([]string{}, words[1:]...), args...), stdout, stderr)
}
