package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kustos-dev/kustos/internal/app"
)

// parseWithEnv parses run's flags as the run command does, with env as the environment.
func parseWithEnv(t *testing.T, args []string, env map[string]string) (app.Options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	var r runFlagSet
	r.define(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o, _, _, err := r.finish(fs, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return o, err
}

// TestRunFlagsEnvironment: every run flag is also KUSTOS_<FLAG>; a flag on the command line wins
// over the variable, which wins over the default; a value the flag refuses names the variable.
func TestRunFlagsEnvironment(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(app.Options) bool
		wantErr string
	}{
		{name: "the default without either", check: func(o app.Options) bool { return o.DefaultCooldown == time.Hour && o.PR.GitHub.AppID == 0 }},
		{name: "the variable over the default", env: map[string]string{"KUSTOS_COOLDOWN": "1d", "KUSTOS_GITHUB_APP_ID": "12", "KUSTOS_ENABLE_AUTO_MERGE": "true"},
			check: func(o app.Options) bool { return o.DefaultCooldown == day && o.PR.GitHub.AppID == 12 && o.PR.AutoMerge }},
		{name: "the flag over the variable", args: []string{"--cooldown=2h", "--github-app-id=7"}, env: map[string]string{"KUSTOS_COOLDOWN": "1d", "KUSTOS_GITHUB_APP_ID": "12"},
			check: func(o app.Options) bool { return o.DefaultCooldown == 2*time.Hour && o.PR.GitHub.AppID == 7 }},
		{name: "the variable over $POD_NAMESPACE, the default of --state-namespace", env: map[string]string{"KUSTOS_STATE_NAMESPACE": "kustos-x"},
			check: func(o app.Options) bool { return o.StateNamespace == "kustos-x" }},
		{name: "a list in one variable", env: map[string]string{"KUSTOS_GIT_PATH": "clusters/a/,shared/"},
			check: func(o app.Options) bool { return slices.Equal(o.PR.Paths, []string{"clusters/a/", "shared/"}) }},
		{name: "never for no limit", env: map[string]string{"KUSTOS_DEFAULT_TTL": "never", "KUSTOS_INACTIVITY_TIMEOUT": "2w"},
			check: func(o app.Options) bool {
				return o.Expiry.Settings.DefaultTTL == 0 && o.Inactivity.Settings.Timeout == 14*day
			}},
		{name: "an empty variable is an empty value", args: []string{}, env: map[string]string{"KUSTOS_DEFAULT_TTL": ""},
			check: func(o app.Options) bool { return o.Expiry.Settings.DefaultTTL == 0 }},
		{name: "a variable of another program is not a flag", env: map[string]string{"KUSTOS_TESTBIN": "/bin", "KUSTOS_": "x"},
			check: func(o app.Options) bool { return o.DefaultCooldown == time.Hour }},
		{name: "a malformed duration names the variable", env: map[string]string{"KUSTOS_COOLDOWN": "soon"},
			wantErr: `environment variable KUSTOS_COOLDOWN="soon" (--cooldown): invalid duration`},
		{name: "a malformed mode names the variable and the words", env: map[string]string{"KUSTOS_MODE": "auto"},
			wantErr: `environment variable KUSTOS_MODE="auto" (--mode): want observe, pr, direct`},
		{name: "a malformed number names the variable", env: map[string]string{"KUSTOS_GITHUB_APP_ID": "twelve"},
			wantErr: `environment variable KUSTOS_GITHUB_APP_ID="twelve" (--github-app-id)`},
		{name: "a malformed variable is an error even when the flag is given", args: []string{"--mode=pr"}, env: map[string]string{"KUSTOS_THRESHOLD": "120"},
			wantErr: `KUSTOS_THRESHOLD="120" (--threshold): must be between 0 and 100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseWithEnv(t, tc.args, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

// TestRunEnvironmentThroughMain: the run command reads the process environment.
func TestRunEnvironmentThroughMain(t *testing.T) {
	t.Setenv("KUSTOS_LOG_LEVEL", "chatty")
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"run", "--state-namespace=x"}, strings.NewReader(""), &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `kustos run: environment variable KUSTOS_LOG_LEVEL="chatty" (--log-level): want debug, info, error`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestRunHelp: run's help lists every flag in its group, with its variable and its default as
// an operator writes it.
func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"run", "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 || stderr.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	last := 0
	for _, g := range []string{"\nGeneral:\n", "\nState & leader election:\n", "\nQuota:\n", "\nPR mode / GitHub:\n", "\nCleaners:\n",
		"\nExpiry:\n", "\nExtension links:\n", "\nNotifications:\n", "\nInactivity:\n", "\nPrometheus:\n", "\nAdmission webhook & egress:\n"} {
		i := strings.Index(help, g)
		if i < last {
			t.Errorf("group %q missing or out of order", strings.TrimSpace(g))
		}
		last = max(i, last)
	}
	for _, want := range []string{"--cooldown duration", "(default 1h)", "[$KUSTOS_COOLDOWN]", "[$KUSTOS_GITHUB_APP_ID]", "(default 14d)", "(default 12h)",
		"--mode observe|pr|direct", "(default observe)", "(default never)"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(help, "h0m0s") || strings.Contains(help, "Other flags") {
		t.Errorf("help shows Go durations or ungrouped flags:\n%s", help)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	var r runFlagSet
	r.define(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(help, "--"+f.Name+" ") || !strings.Contains(help, "[$KUSTOS_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))+"]") {
			t.Errorf("help lacks --%s or its variable", f.Name)
		}
	})
	stdout.Reset()
	realMain([]string{"expiry", "plan", "--help"}, strings.NewReader(""), &stdout, &stderr)
	if strings.Contains(stdout.String(), "$KUSTOS_") {
		t.Errorf("expiry plan reads no environment, its help names variables")
	}
}
