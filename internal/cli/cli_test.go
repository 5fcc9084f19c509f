package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"github-app-id": "KUSTOS_GITHUB_APP_ID", "mode": "KUSTOS_MODE", "notify-mail-ca-file": "KUSTOS_NOTIFY_MAIL_CA_FILE"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

// testCommand has a flag of each kind, grouped, and reads the environment.
func testCommand(out *string, d *time.Duration, n *int) *cobra.Command {
	c := &cobra.Command{Use: "try", Short: "a test command", RunE: func(*cobra.Command, []string) error { return nil }}
	ReadsEnv(c)
	fs := c.Flags()
	*out = "table"
	InGroup(fs, GroupGeneral, func() {
		fs.VarP(Enum{V: out, Allowed: []string{"table", "json"}}, "output", "o", "output format")
		*d = 14 * 24 * time.Hour
		Duration(fs, d, "lookback", false, "how far back")
	})
	InGroup(fs, GroupExpiry, func() { fs.IntVar(n, "max-alerts", 3, "alerts before acting") })
	fs.Bool("loose", false, "a flag in no group")
	return c
}

func TestExecuteErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a typo", []string{"--lookbak=1d"}, "kustos try: unknown flag --lookbak; did you mean --lookback?\nRun 'kustos try --help' for usage.\n"},
		{"nothing close", []string{"--frobnicate"}, "kustos try: unknown flag --frobnicate\n"},
		{"one dash", []string{"-lookback=1d"}, "kustos try: unknown flag -lookback=1d: flags take two dashes: --lookback=1d\n"},
		{"one dash, nothing known", []string{"-zz"}, "kustos try: unknown flag -zz (flags take two dashes, --name=value)\n"},
		{"a malformed duration", []string{"--lookback=2 weeks"}, `kustos try: invalid --lookback="2 weeks": invalid duration`},
		{"a word not in the list", []string{"-o", "yaml"}, `kustos try: invalid --output="yaml": want table, json`},
		{"not a number", []string{"--max-alerts=3.5"}, `kustos try: invalid --max-alerts="3.5": want a whole number`},
		{"no value", []string{"--lookback"}, "kustos try: --lookback needs a value: --lookback=DURATION"},
		{"an argument", []string{"extra"}, `kustos try: unknown command "extra" for "kustos try"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			var d time.Duration
			var n int
			var stdout, stderr bytes.Buffer
			c := testCommand(&out, &d, &n)
			c.Args = cobra.NoArgs
			if code := ExecuteAlone(c, "kustos try", tc.args, &stdout, &stderr); code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestUsageGroups(t *testing.T) {
	var out string
	var d time.Duration
	var n int
	var stdout, stderr bytes.Buffer
	if code := ExecuteAlone(testCommand(&out, &d, &n), "kustos try", []string{"--help"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	help := stdout.String()
	for _, want := range []string{
		"Usage: kustos try [flags]\n",
		"\nGeneral:\n  -o, --output table|json",
		"(default table) [$KUSTOS_OUTPUT]",
		"--lookback duration",
		"(default 14d) [$KUSTOS_LOOKBACK]",
		"\nExpiry:\n      --max-alerts int",
		"\nOther flags:\n      --loose",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Index(help, "General:") > strings.Index(help, "Expiry:") || strings.Contains(help, "--help") {
		t.Errorf("groups out of order, or --help listed as a flag:\n%s", help)
	}
}

func TestApplyEnv(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	d := time.Hour
	Duration(fs, &d, "cooldown", false, "")
	n := fs.Int("max-alerts", 3, "")
	if err := fs.Parse([]string{"--max-alerts=5"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KUSTOS_COOLDOWN": "1d", "KUSTOS_MAX_ALERTS": "9"}
	if err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if d != 24*time.Hour || *n != 5 {
		t.Errorf("cooldown %v (want the variable's 1d), max-alerts %d (want the flag's 5)", d, *n)
	}
	env = map[string]string{"KUSTOS_COOLDOWN": "never"}
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	Duration(fs, &d, "cooldown", false, "")
	err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), `environment variable KUSTOS_COOLDOWN="never" (--cooldown): invalid duration: "never" is not accepted here`) {
		t.Errorf("error %v", err)
	}
}
