package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// env is the control plane shared by all tests of this package: starting one takes seconds, and
// each test works in namespaces of its own.
var (
	env *testenv.Env
	k8s client.Client
	cs  *kubernetes.Clientset
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	env, err = testenv.Start(ctx, testenv.Options{ControllerManager: true,
		// Kustos's own CRD as the chart ships it, and Knative-shaped kinds for Cleaners to name.
		CRDDirectoryPaths: []string{"../charts/kustos/crds", "testdata/crds"}})
	if err != nil {
		// Never skip: a missing control plane is a broken install step, not an excuse.
		fmt.Fprintln(os.Stderr, "e2e: starting the control plane:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the control plane:", err)
		}
	}()
	if k8s, err = client.New(env.Config, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if cs, err = kubernetes.NewForConfig(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}
