package manifest

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kustos-dev/kustos/internal/cli"
)

// Exit codes of the offline commands.
const (
	ExitOK    = cli.ExitOK
	ExitError = cli.ExitError // the output could not be written
	ExitUsage = cli.ExitUsage // bad flags, unreadable or unusable input
)

// Command is the frame the offline commands share (kustos recommend, expiry plan, inactivity
// plan, cleaner eval): the input files (-f, --filename), the clock (--now), the command's help
// and its exit codes. A command adds its own flags to Flags() and sets Run.
type Command struct {
	// Name is what messages start with: "kustos expiry plan".
	Name  string
	Cobra *cobra.Command
	Files Files
	// Run does the work once the flags are parsed, with the time of --now; it returns the exit
	// code.
	Run func(now time.Time) int

	stderr io.Writer
	now    string
}

// NewCommand makes the frame of the command name ("kustos expiry plan"): use is its usage line
// after the name, short its one-line summary, long its help text above the flags.
func NewCommand(name, use, short, long string, stderr io.Writer) *Command {
	c := &Command{Name: name, stderr: stderr}
	words := strings.Fields(name)
	c.Cobra = &cobra.Command{
		Use: words[len(words)-1] + " " + use, Short: short, Long: long,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unexpected argument %q (give input files with -f)", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			now := time.Now() // the only clock these commands read
			if c.now != "" {
				var err error
				if now, err = time.Parse(time.RFC3339, c.now); err != nil {
					return cli.Usagef("invalid --now %q: not an RFC 3339 time like 2026-05-01T12:00:00Z", c.now)
				}
			}
			if len(c.Files) == 0 {
				c.Files = Files{"-"}
			}
			return cli.ExitCode(c.Run(now))
		},
	}
	fs := c.Cobra.Flags()
	cli.InGroup(fs, cli.GroupInput, func() {
		fs.VarP(&c.Files, "filename", "f", "read `FILE`, or - for stdin; repeatable (default -)")
		fs.StringVar(&c.now, "now", "", "decide as of this RFC 3339 `TIME` (default: now)")
	})
	return c
}

// Flags are the command's flags, to which it adds its own.
func (c *Command) Flags() *pflag.FlagSet { return c.Cobra.Flags() }

// Execute runs the command alone with args, as `kustos` runs it among the others (tests and
// callers that hold no root command).
func (c *Command) Execute(args []string, stdout io.Writer) int {
	return cli.ExecuteAlone(c.Cobra, c.Name, args, stdout, c.stderr)
}

// Fail says what is wrong on stderr, after the command's name, and returns ExitUsage.
func (c *Command) Fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, c.Name+": "+format+"\n", args...)
	return ExitUsage
}

// Load reads every input file (-f, - for stdin), in order, with decode.
func (c *Command) Load(stdin io.Reader, decode Decoder) ([]Object, error) {
	var objs []Object
	for _, arg := range c.Files {
		name, data, err := ReadInput(arg, stdin)
		if err != nil {
			return nil, err
		}
		more, err := Load(name, data, decode)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}
