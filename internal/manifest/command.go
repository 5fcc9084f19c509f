package manifest

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Exit codes of the offline commands.
const (
	ExitOK    = 0
	ExitError = 1 // the output could not be written
	ExitUsage = 2 // bad flags, unreadable or unusable input
)

// Command is the frame the offline commands share (kustos expiry plan, inactivity plan, cleaner
// eval): the input files (-f, --filename), the clock (--now), the usage text and the usage exit.
// A command adds its own flags to Flags before Parse.
type Command struct {
	// Name is what messages start with: "kustos expiry plan".
	Name  string
	Flags *flag.FlagSet
	Files Files

	stderr io.Writer
	now    *string
}

// NewCommand makes the frame of the command name, printing usage on -h.
func NewCommand(name, usage string, stderr io.Writer) *Command {
	fs := flag.NewFlagSet(strings.TrimPrefix(name, "kustos "), flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	c := &Command{Name: name, Flags: fs, stderr: stderr}
	fs.Var(&c.Files, "f", "input file, or - for stdin")
	fs.Var(&c.Files, "filename", "input file, or - for stdin")
	c.now = fs.String("now", "", "time of the decision, RFC 3339")
	return c
}

// Parse parses args and reads --now (default: the clock, the only time these commands read
// it). When ok is false the command ends with code: 0 after -h, ExitUsage for bad flags or
// arguments (said on stderr).
func (c *Command) Parse(args []string) (now time.Time, code int, ok bool) {
	if err := c.Flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return time.Time{}, ExitOK, false
		}
		return time.Time{}, ExitUsage, false
	}
	if c.Flags.NArg() > 0 {
		return time.Time{}, c.Fail("unexpected argument %q (give input files with -f)", c.Flags.Arg(0)), false
	}
	now = time.Now()
	if *c.now != "" {
		var err error
		if now, err = time.Parse(time.RFC3339, *c.now); err != nil {
			return time.Time{}, c.Fail("invalid --now %q: not an RFC 3339 time like 2026-05-01T12:00:00Z", *c.now), false
		}
	}
	return now, ExitOK, true
}

// Fail says what is wrong on stderr, after the command's name, and returns ExitUsage.
func (c *Command) Fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, c.Name+": "+format+"\n", args...)
	return ExitUsage
}
