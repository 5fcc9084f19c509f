package helmrelease

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// The control plane shared by all tests of this package (starting one takes seconds); each test
// works in namespaces of its own. There is no kube-controller-manager: nothing here needs one,
// and its absence is what makes a Job hook never complete (TestUninstallHookNeverReady).
var (
	restConfig *rest.Config
	k8s        kubernetes.Interface
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		// Never skip: a missing control plane is a broken install step (make testbin).
		fmt.Fprintln(os.Stderr, "helmrelease: starting the control plane:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "helmrelease: stopping the control plane:", err)
		}
	}()
	restConfig = env.Config
	if k8s, err = kubernetes.NewForConfig(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, "helmrelease:", err)
		return 1
	}
	return m.Run()
}
