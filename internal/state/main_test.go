package state

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// k8s talks to a real kube-apiserver and etcd: the store's guarantees (conditional writes,
// conflicts, preconditions on delete) are the API server's, so they are tested against one.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "state", 2*time.Minute, testenv.Options{}, func(_ context.Context, env *testenv.Env) (err error) {
		k8s, err = client.New(env.Config, client.Options{})
		return err
	}))
}

var nsCounter int

// newStore returns a Store over a fresh namespace of the real API server. The cache is not
// involved: Reader and Writer are the same client, so reads see every write at once.
func newStore(t *testing.T) *Store {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("state-test-%d-%d", os.Getpid()%10000, nsCounter)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return &Store{Reader: k8s, Writer: k8s, Namespace: ns.Name, Identity: "replica-a"}
}
