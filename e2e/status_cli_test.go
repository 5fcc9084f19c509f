package e2e

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kustos-dev/kustos/internal/state"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

// TestStatusClusterFlags: `kustos status` reads the cluster as kubectl does, on a real API
// server: the kubeconfig's current context (here one that reaches nothing) unless --context
// names another, the context's namespace unless -n (or --state-namespace) names another, and
// KUBECONFIG as well as --kubeconfig.
func TestStatusClusterFlags(t *testing.T) {
	nsA, nsB := newNamespace(t, "status-a", nil), newNamespace(t, "status-b", nil)
	for ns, key := range map[string]string{nsA: "quota/" + nsA + "/compute", nsB: "quota/" + nsB + "/compute"} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "state-compute", Namespace: ns,
			Labels: map[string]string{state.LabelManagedBy: state.ManagedByValue}, Annotations: map[string]string{state.AnnotationKey: key}}}
		if err := k8s.Create(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: admin.AuthInfo}
	cfg.Contexts["real-a"] = &clientcmdapi.Context{Cluster: admin.Cluster, AuthInfo: admin.AuthInfo, Namespace: nsA}
	cfg.Contexts["real-b"] = &clientcmdapi.Context{Cluster: admin.Cluster, AuthInfo: admin.AuthInfo, Namespace: nsB}
	cfg.CurrentContext = "gone"
	file := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		name       string
		args       []string
		kubeconfig string // $KUBECONFIG
		wantCode   int
		want       string // a row's target, or the error
		notWant    string
	}{
		{"--context picks a context and its namespace", []string{"--kubeconfig", file, "--context", "real-a"}, "", 0, nsA + "/compute", nsB},
		{"-n over the context's namespace", []string{"--kubeconfig", file, "--context", "real-a", "-n", nsB}, "", 0, nsB + "/compute", nsA},
		{"--state-namespace, the other spelling", []string{"--kubeconfig", file, "--context=real-b", "--state-namespace=" + nsA}, "", 0, nsA + "/compute", nsB},
		{"KUBECONFIG", []string{"--context", "real-b"}, file, 0, nsB + "/compute", nsA},
		{"an unknown context", []string{"--kubeconfig", file, "--context", "prod"}, "", 1,
			"kustos status: --context=prod: no such context in --kubeconfig=" + file + " (it has ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			var stdout, stderr bytes.Buffer
			code := statusreport.Run(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			got := stdout.String()
			if tc.wantCode != 0 {
				got = stderr.String()
				if strings.Count(got, "\n") != 1 {
					t.Errorf("stderr %q, want one line", got)
				}
			}
			if !strings.Contains(got, tc.want) || (tc.notWant != "" && strings.Contains(got, tc.notWant)) {
				t.Errorf("output %q: want %q, not %q", got, tc.want, tc.notWant)
			}
		})
	}
}
