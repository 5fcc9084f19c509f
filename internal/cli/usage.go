package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width help text is wrapped to.
const helpWidth = 100

// SetUsage makes cmd and its subcommands print the grouped help of Usage on --help and
// `kustos help …`.
func SetUsage(cmd *cobra.Command) {
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { Usage(c.OutOrStdout(), c) })
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		Usage(c.OutOrStderr(), c)
		return nil
	})
}

// Usage writes cmd's help: the usage line, the description, the subcommands, then its flags
// in their groups, each with its placeholder, help, default as written and, for a command that
// reads the environment, its variable.
func Usage(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "Usage: %s\n", useLine(cmd))
	if long := strings.TrimSpace(cmd.Long); long != "" {
		fmt.Fprintf(w, "\n%s\n", long)
	} else if cmd.Short != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.Short)
	}
	if subs := visibleCommands(cmd); len(subs) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		width := 0
		for _, s := range subs {
			width = max(width, len(s.Name()))
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name(), s.Short)
		}
		fmt.Fprintf(w, "\nRun '%s <command> --help' for the flags of a command.\n", cmd.CommandPath())
	}
	fs := cmd.Flags()
	if !fs.HasAvailableFlags() || len(visibleCommands(cmd)) > 0 {
		return
	}
	env := readsEnv(cmd)
	groups, flags := grouped(fs)
	width := 0
	for _, g := range groups {
		for _, f := range flags[g] {
			width = max(width, len(flagColumn(f)))
		}
	}
	width = min(width, 38)
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, f := range flags[g] {
			left := flagColumn(f)
			text := FlagHelp(f)
			if d := defaultOf(f); d != "" {
				text += " (default\x00" + d + ")" // \x00: a space wrap keeps, so "(default 3d)" stays whole
			}
			if env {
				text += " [$" + EnvName(f.Name) + "]"
			}
			lines := wrap(text, helpWidth-width-4)
			for i := range lines {
				lines[i] = strings.ReplaceAll(lines[i], "\x00", " ")
			}
			if len(left) > width {
				fmt.Fprintf(w, "%s\n", left)
				left = ""
			}
			for i, l := range lines {
				if i > 0 {
					left = ""
				}
				fmt.Fprintf(w, "%-*s  %s\n", width, left, l)
			}
		}
	}
	if env {
		fmt.Fprintf(w, "\nEvery flag is also read from the environment variable in brackets; a flag on the command\nline wins over the variable, which wins over the default.\n")
	}
}

func useLine(cmd *cobra.Command) string {
	use := cmd.Use
	if i := strings.IndexByte(use, ' '); i >= 0 {
		return cmd.CommandPath() + use[i:]
	}
	if cmd.HasAvailableSubCommands() {
		return cmd.CommandPath() + " <command> [flags]"
	}
	return cmd.CommandPath() + " [flags]"
}

func visibleCommands(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			out = append(out, s)
		}
	}
	return out
}

// flagColumn is the left column: "  -f, --filename FILE" or "      --mode MODE".
func flagColumn(f *pflag.Flag) string {
	name, _ := pflag.UnquoteUsage(f)
	s := "      --" + f.Name
	if f.Shorthand != "" {
		s = "  -" + f.Shorthand + ", --" + f.Name
	}
	if name != "" && f.NoOptDefVal == "" {
		s += " " + name
	} else if name != "" {
		s += "[=" + name + "]"
	}
	return s
}

// FlagHelp is f's help text without the backquotes that name its placeholder.
func FlagHelp(f *pflag.Flag) string {
	_, usage := pflag.UnquoteUsage(f)
	return usage
}

// defaultOf is f's default as an operator writes it, or "" when saying it adds nothing (false,
// an empty string or list, 0 for a number that is unset).
func defaultOf(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]", "false":
		return ""
	case "0":
		if f.Value.Type() != "duration" {
			return ""
		}
	}
	return f.DefValue
}

// wrap splits text into lines of at most width runes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	var line strings.Builder
	for _, word := range strings.Fields(text) {
		if line.Len() > 0 && line.Len()+1+len(word) > width {
			lines = append(lines, line.String())
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(word)
	}
	if line.Len() > 0 {
		lines = append(lines, line.String())
	}
	return lines
}
