package gate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// k8s talks to a real kube-apiserver and etcd with Velero's Backup CRD installed from Velero's
// own module (the version go.mod names). No kube-controller-manager runs and no Velero server:
// the tests write a Job's and a Backup's status in their controllers' place, and say so where
// they do.
var k8s client.Client

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzzing (FuzzCheckDestination) needs no control plane, and each fuzz worker would
		// start one of its own.
		os.Exit(m.Run())
	}
	crd, err := veleroBackupCRD()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gate:", err)
		os.Exit(1)
	}
	os.Exit(testenv.Main(m, "gate", 2*time.Minute, testenv.Options{CRDDirectoryPaths: []string{crd}}, func(_ context.Context, env *testenv.Env) (err error) {
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := velerov1.AddToScheme(scheme); err != nil {
			return err
		}
		k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
		return err
	}))
}

// veleroBackupCRD is the Backup CRD file of the Velero module go.mod requires.
func veleroBackupCRD() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/vmware-tanzu/velero").Output()
	if err != nil {
		return "", fmt.Errorf("locating Velero's module (go list -m): %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "v1", "bases", "velero.io_backups.yaml"), nil
}

var nsCounter int

// newNamespace creates a fresh namespace of the real API server.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", prefix, os.Getpid()%10000, nsCounter)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
