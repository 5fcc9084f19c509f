package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStartupErrors: what stops `kustos run` before it starts is one line in the form of a
// flag error, before any JSON log line, and options are checked before the cluster is looked
// for.
func TestRunStartupErrors(t *testing.T) {
	home := t.TempDir() // no .kube/config
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	missing := filepath.Join(home, "nope")
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		want     string
	}{
		{"no configuration anywhere", []string{"run", "--state-namespace=x"}, nil, 1,
			"kustos run: no Kubernetes configuration: set --kubeconfig or KUBECONFIG, or run in a cluster\n"},
		{"pr mode without a repository, before the configuration", []string{"run", "--state-namespace=x", "--mode=pr"}, nil, 2,
			"kustos run: --mode=\"pr\": --git-repo: required with --mode=pr (owner/name of the GitOps repository)\n"},
		{"a kubeconfig flag naming no file", []string{"run", "--state-namespace=x", "--kubeconfig=" + missing}, nil, 1,
			"kustos run: --kubeconfig=" + missing + ": stat " + missing + ": no such file or directory\n"},
		{"KUBECONFIG naming no file", []string{"run", "--state-namespace=x"}, map[string]string{"KUBECONFIG": missing}, 1,
			"kustos run: KUBECONFIG=" + missing + ": no Kubernetes configuration: set --kubeconfig or KUBECONFIG, or run in a cluster\n"},
		{"in a pod without its service account", []string{"run", "--state-namespace=x"},
			map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, 1,
			"kustos run: in the cluster: open /var/run/secrets/kubernetes.io/serviceaccount/token: no such file or directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || stderr.String() != tc.want {
				t.Errorf("exit %d, stderr %q;\nwant exit %d, stderr %q", code, stderr.String(), tc.wantCode, tc.want)
			}
		})
	}
}

// TestQuietStop: controller-runtime's report of the leader lease released on a normal stop is
// an INFO line; every other error after the stop, and the same message with another error,
// stays an ERROR; at --log-level=error the release is not logged at all.
func TestQuietStop(t *testing.T) {
	for _, tc := range []struct {
		name, level, msg string
		err              error
		want             string
	}{
		{"the lease released on stop", "info", msgErrorAfterStop, errors.New(errLeaderLost), `"level":"INFO","msg":"released the leader lease on stop"`},
		{"another error after the stop", "info", msgErrorAfterStop, errors.New("cache sync failed"), `"level":"ERROR","msg":"error received after stop sequence was engaged","logger":"manager","err":"cache sync failed"`},
		{"lost while running", "info", "problem running manager", errors.New(errLeaderLost), `"level":"ERROR","msg":"problem running manager","logger":"manager","err":"leader election lost"`},
		{"released, at --log-level=error", "error", msgErrorAfterStop, errors.New(errLeaderLost), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := newLogger(&buf, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			log.WithName("manager").Error(tc.err, tc.msg)
			if tc.want == "" {
				if buf.Len() != 0 {
					t.Errorf("logged %s, want nothing", buf.String())
				}
				return
			}
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("logged %s, want %s", buf.String(), tc.want)
			}
		})
	}
}
