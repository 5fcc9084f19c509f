package orphans

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// k8s talks to a real kube-apiserver and etcd: the report lists and reads what the API server
// serves, in pages.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "orphans", 2*time.Minute, testenv.Options{}, func(_ context.Context, env *testenv.Env) (err error) {
		k8s, err = client.New(env.Config, client.Options{})
		return err
	}))
}
