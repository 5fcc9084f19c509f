package cli

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// Markdown writes the reference of root and every command below it, from the same flag
// definitions that parse the command line and print --help: docs/cli.md is this output, and a
// test in cmd/kustos fails when the file and the code differ.
func Markdown(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "# Command line reference\n\n")
	fmt.Fprintf(w, "<!-- Generated from the flag definitions by `make docs` (go test ./cmd/kustos -update); do not edit. -->\n\n")
	fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(root.Long))
	fmt.Fprintf(w, "| Command | What it does |\n|---|---|\n")
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() {
				continue
			}
			if !s.HasAvailableSubCommands() {
				cmds = append(cmds, s)
			}
			walk(s)
		}
	}
	walk(root)
	for _, c := range cmds {
		fmt.Fprintf(w, "| [`%s`](#%s) | %s |\n", c.CommandPath(), anchor(c.CommandPath()), cell(c.Short))
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(durationText))
	for _, c := range cmds {
		fmt.Fprintf(w, "\n## %s\n\n", c.CommandPath())
		fmt.Fprintf(w, "```text\n%s\n```\n", useLine(c))
		if long := strings.TrimSpace(c.Long); long != "" {
			fmt.Fprintf(w, "\n```text\n%s\n```\n", long)
		} else {
			fmt.Fprintf(w, "\n%s\n", c.Short)
		}
		env := readsEnv(c)
		if env {
			fmt.Fprintf(w, "\nEvery flag is also read from its environment variable; a flag on the command line wins over the variable, which wins over the default.\n")
		}
		groups, flags := grouped(c.Flags())
		for _, g := range groups {
			fmt.Fprintf(w, "\n### %s\n\n", g)
			if env {
				fmt.Fprintf(w, "| Flag | Environment | Default | Description |\n|---|---|---|---|\n")
			} else {
				fmt.Fprintf(w, "| Flag | Default | Description |\n|---|---|---|\n")
			}
			for _, f := range flags[g] {
				name := "`--" + f.Name + "`"
				if f.Shorthand != "" {
					name = "`-" + f.Shorthand + "`, " + name
				}
				def := ""
				if d := defaultOf(f); d != "" {
					def = "`" + d + "`"
				}
				if env {
					fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", name, EnvName(f.Name), def, cell(FlagHelp(f)))
				} else {
					fmt.Fprintf(w, "| %s | %s | %s |\n", name, def, cell(FlagHelp(f)))
				}
			}
		}
	}
}

// durationText explains the one duration grammar, once for every command (~ stands for a
// backquote, which a raw string cannot hold).
var durationText = strings.ReplaceAll(`
## Durations

Every lifetime and interval (in flags, their environment variables, the annotations
~kustos.io/ttl~, ~kustos.io/inactivity-timeout~ and ~resizer.io/cooldown-minutes~, Cleaners and
chart values) is read the same way: whole or decimal numbers with a unit, ~s~, ~m~, ~h~, ~d~
(24 hours) or ~w~ (7 days), also combined: ~90m~, ~1h30m~, ~14d~, ~1w2d~, ~1.5d~. Go's forms
(~336h0m0s~, ~500ms~, a bare ~0~) are still accepted. Where there may be no limit
(~--default-ttl~, ~--inactivity-timeout~, ~kustos.io/ttl~, ~kustos.io/inactivity-timeout~),
~never~ says so; everywhere else ~never~ is refused by name. A bare number in
~resizer.io/cooldown-minutes~ is minutes, as it always was. Help and this page show durations
as an operator writes them: ~14d~, ~1h~.
`, "~", "`")

// anchor is the GitHub heading anchor of a "kustos expiry plan" heading.
func anchor(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "-") }

// cell makes s safe inside a Markdown table cell. An address in a flag's help (an example URL,
// a mail address) is set as code: it names a form to write, not a page to follow, and the
// documentation links nowhere outside the repository.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	return address.ReplaceAllString(s, "`$0`")
}

// address matches a URL or a mail address in help text, without the punctuation after it.
var address = regexp.MustCompile(`https?://[^\s)|,;` + "`" + `]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+`)
