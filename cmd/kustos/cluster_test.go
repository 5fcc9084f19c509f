package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterFlagsHelp: the commands that read a cluster list --kubeconfig, --context and,
// where they take a namespace, -n/--namespace under one heading that says they are shared;
// the offline commands have none of them.
func TestClusterFlagsHelp(t *testing.T) {
	const heading = "Cluster flags (shared by the commands that read a cluster, as kubectl's):\n"
	for _, tc := range []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"status", "--help"}, []string{heading, "      --kubeconfig string", "      --context string", "  -n, --namespace string", "Usage: kustos status [-n NS] [--context NAME]"}, []string{"--state-namespace string"}},
		{[]string{"run", "--help"}, []string{heading, "      --kubeconfig string", "      --context string", "[$KUSTOS_CONTEXT]"}, []string{"--namespace string"}},
		{[]string{"expiry", "plan", "--help"}, nil, []string{heading, "--kubeconfig", "--context"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := realMain(tc.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("help lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("help has %q", w)
				}
			}
		})
	}
}

// TestClusterFlagsErrors: a context the kubeconfig does not have, and a status without a
// namespace from anywhere, are one line each, before any cluster is reached.
func TestClusterFlagsErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	const config = `apiVersion: v1
kind: Config
current-context: bare
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: not-a-secret}
contexts:
- name: a
  context: {cluster: a, user: u, namespace: team-a}
- name: bare
  context: {cluster: a, user: u}
`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", file)
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"status: an unknown context", []string{"status", "--context=prod"}, 1,
			"kustos status: --context=prod: no such context in KUBECONFIG=" + file + " (it has a, bare)\n"},
		{"run: an unknown context", []string{"run", "--state-namespace=x", "--context=prod"}, 1,
			"kustos run: --context=prod: no such context in KUBECONFIG=" + file + " (it has a, bare)\n"},
		{"status: no namespace anywhere", []string{"status"}, 2,
			"kustos status: need -n/--namespace, the namespace Kustos runs in: the kubeconfig context names none and $POD_NAMESPACE is not set\n"},
		{"status: one dash for two", []string{"status", "-namespace=kustos-system"}, 2,
			`kustos status: invalid --namespace="amespace=kustos-system": flags take two dashes: --namespace=kustos-system`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || !strings.HasPrefix(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q;\nwant exit %d, stderr %q", code, stderr.String(), tc.wantCode, tc.want)
			}
		})
	}
}
