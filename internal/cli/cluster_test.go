package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// twoContexts is a kubeconfig with two clusters and a context for each: a, the current one,
// with the namespace team-a; b with team-b; bare with none.
const twoContexts = `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: not-a-secret}
contexts:
- name: a
  context: {cluster: a, user: u, namespace: team-a}
- name: b
  context: {cluster: b, user: u, namespace: team-b}
- name: bare
  context: {cluster: b, user: u}
`

// TestClusterFlags: -n/--namespace, its other spelling and --context parse as kubectl's, and a
// namespace that is none is refused with the reason (one dash for two included).
func TestClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		name            string
		args            []string
		wantNS, wantCtx string
		wantNSSet       bool
		wantErr         string
	}{
		{"nothing", nil, "", "", false, ""},
		{"-n", []string{"-n", "kustos-system"}, "kustos-system", "", true, ""},
		{"-n attached", []string{"-nkustos-system"}, "kustos-system", "", true, ""},
		{"--namespace=", []string{"--namespace=kustos-system"}, "kustos-system", "", true, ""},
		{"the other spelling", []string{"--state-namespace", "kustos-system"}, "kustos-system", "", true, ""},
		{"--context", []string{"--context=b"}, "", "b", false, ""},
		{"both", []string{"--context", "b", "-n", "x"}, "x", "b", true, ""},
		{"not a namespace name", []string{"-n", "Team_A"}, "", "", false, "not a namespace name"},
		{"one dash for two", []string{"-namespace=x"}, "", "", false, "flags take two dashes: --namespace=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			var c Cluster
			c.AddFlags(fs, "where", "state-namespace")
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Namespace != tc.wantNS || c.Context != tc.wantCtx || c.namespaceSet() != tc.wantNSSet {
				t.Errorf("namespace %q (set %v), context %q; want %q (set %v), %q", c.Namespace, c.namespaceSet(), c.Context, tc.wantNS, tc.wantNSSet, tc.wantCtx)
			}
		})
	}
}

// TestClusterLoad: the kubeconfig is read with clientcmd's loading rules and the flags as
// overrides: --kubeconfig or KUBECONFIG, --context picks another context, -n wins over the
// context's namespace, which wins over $POD_NAMESPACE; an unknown context is one line that
// names it and the contexts there are.
func TestClusterLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	if err := os.WriteFile(file, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Config\ncurrent-context: gone\nclusters:\n- name: other\n  cluster: {server: \"https://other.example\"}\ncontexts:\n- name: x\n  context: {cluster: nowhere}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	for _, tc := range []struct {
		name             string
		args             []string
		env              map[string]string
		inClusterFirst   bool
		wantHost, wantNS string
		wantErr          string
		wantErrIs        error
	}{
		{"--kubeconfig, its current context", []string{"--kubeconfig", file}, nil, false, "https://a.example:6443", "team-a", "", nil},
		{"KUBECONFIG, as kubectl", nil, map[string]string{"KUBECONFIG": file}, false, "https://a.example:6443", "team-a", "", nil},
		{"--context picks the other", []string{"--kubeconfig", file, "--context=b"}, nil, false, "https://b.example:6443", "team-b", "", nil},
		{"-n over the context's namespace", []string{"--kubeconfig", file, "-n", "kustos-system"}, nil, false, "https://a.example:6443", "kustos-system", "", nil},
		{"--context and -n", []string{"--kubeconfig", file, "--context", "b", "--namespace=x"}, nil, false, "https://b.example:6443", "x", "", nil},
		{"the other spelling over the context's namespace", []string{"--kubeconfig", file, "--state-namespace=y"}, nil, false, "https://a.example:6443", "y", "", nil},
		{"the context's namespace over $POD_NAMESPACE", []string{"--kubeconfig", file}, map[string]string{"POD_NAMESPACE": "pod-ns"}, false, "https://a.example:6443", "team-a", "", nil},
		{"a context without one: $POD_NAMESPACE", []string{"--kubeconfig", file, "--context=bare"}, map[string]string{"POD_NAMESPACE": "pod-ns"}, false, "https://b.example:6443", "pod-ns", "", nil},
		{"a context without one, no $POD_NAMESPACE: none, not kubectl's default", []string{"--kubeconfig", file, "--context=bare"}, nil, false, "https://b.example:6443", "", "", nil},
		{"--context with KUBECONFIG", []string{"--context=b"}, map[string]string{"KUBECONFIG": file}, false, "https://b.example:6443", "team-b", "", nil},
		{"--context, where the controller would take the service account", []string{"--context=b"},
			map[string]string{"KUBECONFIG": file, "KUBERNETES_SERVICE_HOST": "10.0.0.1"}, true, "https://b.example:6443", "team-b", "", nil},
		{"an unknown context", []string{"--kubeconfig", file, "--context=prod"}, nil, false, "", "",
			"--context=prod: no such context in --kubeconfig=" + file + " (it has a, b, bare)", nil},
		{"an unknown context in KUBECONFIG", []string{"--context=prod"}, map[string]string{"KUBECONFIG": file}, false, "", "",
			"--context=prod: no such context in KUBECONFIG=" + file + " (it has a, b, bare)", nil},
		{"a kubeconfig flag naming no file", []string{"--kubeconfig", missing}, nil, false, "", "",
			"--kubeconfig=" + missing + ": stat " + missing + ": no such file or directory", nil},
		{"KUBECONFIG naming no file", nil, map[string]string{"KUBECONFIG": missing}, false, "", "",
			"KUBECONFIG=" + missing + ": " + ErrNoConfig.Error(), ErrNoConfig},
		{"a current-context naming no context", []string{"--kubeconfig", broken}, nil, false, "", "",
			"--kubeconfig=" + broken + ": invalid configuration: [context was not found for specified context: gone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": dir}
			for k, v := range tc.env {
				env[k] = v
			}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			c := Cluster{InClusterFirst: tc.inClusterFirst}
			c.AddFlags(fs, "where", "state-namespace")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, ns, err := c.Load(lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q, want one line starting %q", err, tc.wantErr)
				}
				if tc.wantErrIs != nil && !errors.Is(err, tc.wantErrIs) {
					t.Errorf("error %v is not %v", err, tc.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost || ns != tc.wantNS {
				t.Errorf("host %q, namespace %q; want %q, %q", cfg.Host, ns, tc.wantHost, tc.wantNS)
			}
		})
	}
}
