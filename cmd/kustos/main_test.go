package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRealMain(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, 2, "", "Usage: kustos"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, 0, "kustos dev (commit ", ""},
		{"--version", []string{"--version"}, 0, "kustos dev (commit ", ""},
		{"help", []string{"help"}, 0, "recommend", ""},
		{"run: bad threshold", []string{"run", "--threshold=120", "--state-namespace=x"}, 2, "", `--threshold="120"`},
		{"run: bad increment", []string{"run", "--increment=-5%", "--state-namespace=x"}, 2, "", `--increment="-5%"`},
		{"run: bad log level", []string{"run", "--log-level=chatty", "--state-namespace=x"}, 2, "", `--log-level="chatty"`},
		{"run: stray argument", []string{"run", "extra"}, 2, "", "unexpected arguments: extra"},
		{"run: an address for a CIDR", []string{"run", "--allowed-destinations=.svc.cluster.local,10.0.0.1", "--state-namespace=x"}, 2, "",
			`invalid --allowed-destinations: entry 2 "10.0.0.1": an address, not a CIDR; write 10.0.0.1/32`},
		{"run: unknown flag", []string{"run", "--treshold=80"}, 2, "", "kustos run: unknown flag --treshold; did you mean --threshold?"},
		{"run: one dash, as Go's flag package took", []string{"run", "-mode=pr"}, 2, "", "kustos run: unknown flag -mode=pr: flags take two dashes: --mode=pr"},
		{"run: a mode that does not exist", []string{"run", "--mode=dry-run"}, 2, "", `kustos run: invalid --mode="dry-run": want observe, pr, direct`},
		{"run: a duration without a unit", []string{"run", "--cooldown=90"}, 2, "", `kustos run: invalid --cooldown="90": invalid duration: "90": "90" needs a unit`},
		{"run: never where a cooldown needs an end", []string{"run", "--cooldown=never"}, 2, "", `invalid --cooldown="never": invalid duration: "never" is not accepted here`},
		{"run: not a number", []string{"run", "--max-alerts=many"}, 2, "", `kustos run: invalid --max-alerts="many": want a whole number`},
		{"run: a flag without its value", []string{"run", "--mode"}, 2, "", "kustos run: --mode needs a value"},
		{"expiry plan: one dash", []string{"expiry", "plan", "-now", "2026-01-01T00:00:00Z"}, 2, "", "flags take two dashes: --now"},
		{"run: allow-delete without a detector", []string{"run", "--allow-delete=namespaces", "--state-namespace=x"}, 2, "",
			`--allow-delete: "namespaces": want detector:resource`},
		{"run: allow without a verb", []string{"run", "--allow=expiry:namespaces", "--state-namespace=x"}, 2, "",
			`--allow: "expiry:namespaces": want detector:verb:resource`},
		{"run: allow with an unknown verb", []string{"run", "--allow=inactivity:scale:apps/deployments", "--state-namespace=x"}, 2, "",
			`--allow: "inactivity:scale:apps/deployments": unknown verb "scale"`},
		{"recommend: empty input", []string{"recommend", "-f", "-"}, 0, "", ""},
		{"cleaner eval: empty input", []string{"cleaner", "eval", "-f", "-"}, 0, "", ""},
		{"cleaner without eval", []string{"cleaner"}, 2, "", "Usage: kustos cleaner <command> [flags]\n\nCleaners, offline\n\nCommands:\n  eval "},
		{"expiry with an unknown subcommand", []string{"expiry", "plot"}, 2, "", `kustos expiry: unknown command "plot"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr: %s)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestRunFlagsDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "kustos-system")
	o, kubeconfig, level, err := runFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != "observe" || o.StateNamespace != "kustos-system" || !o.LeaderElection || kubeconfig != "" || level != "info" {
		t.Errorf("defaults: mode=%s stateNamespace=%s leaderElect=%v kubeconfig=%q level=%s", o.Mode, o.StateNamespace, o.LeaderElection, kubeconfig, level)
	}
	if o.Defaults.Threshold.RatString() != "80" || o.Defaults.Increment.RatString() != "1/5" || o.DefaultCooldown != time.Hour {
		t.Errorf("defaults: threshold=%s increment=%s cooldown=%s", o.Defaults.Threshold, o.Defaults.Increment, o.DefaultCooldown)
	}
}

func TestRunFlagsTrustedProxies(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "kustos-system")
	o, _, _, err := runFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Expiry.Extension.TrustedProxies) != 0 {
		t.Errorf("default: %q, want no proxy trusted", o.Expiry.Extension.TrustedProxies)
	}
	o, _, _, err = runFlags([]string{"--trusted-proxies=10.0.0.0/8, fd00::/8,"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.Expiry.Extension.TrustedProxies, "|"); got != "10.0.0.0/8|fd00::/8" {
		t.Errorf("--trusted-proxies: %q", got)
	}
}

func TestRunFlagsAllowedDestinations(t *testing.T) {
	o, _, _, err := runFlags([]string{"--state-namespace=x", "--allowed-destinations=127.0.0.1/32, .SVC.cluster.local"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.AllowedDestinations.String(); got != "127.0.0.1/32,.svc.cluster.local" {
		t.Errorf("allowed destinations %q", got)
	}
	if o, _, _, err = runFlags([]string{"--state-namespace=x"}, &bytes.Buffer{}); err != nil || o.AllowedDestinations.String() != "" {
		t.Errorf("default: %q, %v; want none (public addresses only)", o.AllowedDestinations.String(), err)
	}
}

// TestRunFlagsAllow: --allow and --allow-delete (its older spelling, verb delete) are one
// policy, from the flags or KUSTOS_ALLOW; nothing is deleted or paused by default.
func TestRunFlagsAllow(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string // KUSTOS_ALLOW
		want string
	}{
		{name: "default: nothing", args: nil, want: ""},
		{name: "--allow-delete", args: []string{"--allow-delete=expiry:namespaces,ephemeral:kustos.io/cleaners,inactivity:apps/statefulsets"},
			want: "cleaner:delete:kustos.io/cleaners,expiry:delete:namespaces,inactivity:delete:apps/statefulsets"},
		{name: "--allow", args: []string{"--allow=expiry:delete:namespaces,inactivity:pause:apps/deployments,cleaner:delete:helm.sh/releases"},
			want: "cleaner:delete:helm.sh/releases,expiry:delete:namespaces,inactivity:pause:apps/deployments"},
		{name: "both, merged", args: []string{"--allow=expiry:pause:apps/deployments", "--allow-delete=expiry:apps/deployments"},
			want: "expiry:delete:apps/deployments,expiry:pause:apps/deployments"},
		{name: "KUSTOS_ALLOW", env: "expiry:delete:helm.sh/releases,expiry:pause:apps/statefulsets",
			want: "expiry:delete:helm.sh/releases,expiry:pause:apps/statefulsets"},
		{name: "--allow repeated: every one counts (a second one once replaced the first)",
			args: []string{"--allow=cleaner:delete:configmaps", "--allow=inactivity:pause:apps/deployments", "--allow-delete=expiry:namespaces", "--allow-delete=expiry:apps/deployments"},
			want: "cleaner:delete:configmaps,expiry:delete:apps/deployments,expiry:delete:namespaces,inactivity:pause:apps/deployments"},
		{name: "a flag wins over KUSTOS_ALLOW, whole", args: []string{"--allow=cleaner:delete:configmaps"}, env: "expiry:delete:namespaces",
			want: "cleaner:delete:configmaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUSTOS_ALLOW", tc.env)
			o, _, _, err := runFlags(append([]string{"--state-namespace=x"}, tc.args...), &bytes.Buffer{})
			if err != nil || o.Allow.String() != tc.want {
				t.Fatalf("%q: %q, %v; want %q", tc.args, o.Allow.String(), err, tc.want)
			}
		})
	}
}

func TestRunFlagsNamespaceSelector(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		want    string
		wantErr string
	}{
		{name: "default: every namespace", want: ""},
		{name: "flag", args: []string{"--namespace-selector=kustos.io/shard=a"}, want: "kustos.io/shard=a"},
		{name: "environment", env: "kustos.io/shard in (a,b)", want: "kustos.io/shard in (a,b)"},
		{name: "unparsable", args: []string{"--namespace-selector=kustos.io/shard in (a"}, wantErr: `--namespace-selector="kustos.io/shard in (a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "kustos-system")
			t.Setenv("KUSTOS_NAMESPACE_SELECTOR", tc.env)
			o, _, _, err := runFlags(tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.NamespaceSelector != tc.want {
				t.Errorf("NamespaceSelector %q, want %q", o.NamespaceSelector, tc.want)
			}
		})
	}
}

// TestRunFlagsOwners: --owner-domains is parsed into the expiry settings (a bad entry is a usage
// error naming it), and the owner's page link has its 14-day cap by default.
func TestRunFlagsOwners(t *testing.T) {
	o, _, _, err := runFlags([]string{"--state-namespace=x"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Expiry.Settings.OwnerDomains.Empty() || o.Expiry.Extension.OwnerPageTTL != 14*24*time.Hour {
		t.Errorf("defaults: owner domains %q, page link TTL %s; want any domain and 14d", o.Expiry.Settings.OwnerDomains, o.Expiry.Extension.OwnerPageTTL)
	}
	o, _, _, err = runFlags([]string{"--state-namespace=x", "--owner-domains=Example.edu, .example.edu", "--owner-page-link-ttl=2d"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Expiry.Settings.OwnerDomains.String(); got != "example.edu,.example.edu" || o.Expiry.Extension.OwnerPageTTL != 48*time.Hour {
		t.Errorf("owner domains %q, page link TTL %s", got, o.Expiry.Extension.OwnerPageTTL)
	}
	if _, _, _, err = runFlags([]string{"--state-namespace=x", "--owner-domains=*.example.edu"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--owner-domains") {
		t.Errorf("a wildcard: %v, want an error naming --owner-domains", err)
	}
}
