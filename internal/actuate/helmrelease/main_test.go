package helmrelease

import (
	"context"
	"flag"
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

func TestMain(m *testing.M) {
	flag.Parse()
	if fuzzing() {
		// FuzzUninstallPlan needs no cluster, and every fuzz worker would start one of its own.
		os.Exit(m.Run())
	}
	os.Exit(testenv.Main(m, "helmrelease", 2*time.Minute, testenv.Options{}, func(_ context.Context, env *testenv.Env) (err error) {
		restConfig = env.Config
		k8s, err = kubernetes.NewForConfig(env.Config)
		return err
	}))
}

// fuzzing: this process runs a fuzz target (`go test -fuzz`, or one of its workers).
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}
