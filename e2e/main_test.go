package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// env is the control plane shared by all tests of this package: starting one takes seconds, and
// each test works in namespaces of its own.
var (
	env *testenv.Env
	k8s client.Client
	cs  *kubernetes.Clientset
	// authorKeyFile is every Kustos's --cleaner-author-key-file (startKustosAs sets it), and
	// authorSigner stamps the Cleaners the tests create with adminAuthor, the user they
	// authenticate as (as the API server reports it).
	authorKeyFile string
	authorSigner  *authorship.Signer
	adminAuthor   authorship.Author
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	veleroBackups, err := veleroBackupCRD()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env, err = testenv.Start(ctx, testenv.Options{ControllerManager: true,
		// Kustos's own CRD as the chart ships it, Knative-shaped kinds for Cleaners to name, and
		// Velero's Backup CRD from Velero's module (the backup before a removal).
		CRDDirectoryPaths: []string{"../charts/kustos/files/crds", "testdata/crds", veleroBackups}})
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
	dir, err := os.MkdirTemp("", "kustos-e2e-author-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	key := []byte("e2e-cleaner-author-key-0123456789abcdef0123456789")
	authorKeyFile = filepath.Join(dir, "author-key")
	if err := os.WriteFile(authorKeyFile, key, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if authorSigner, err = authorship.NewSigner(key); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	me, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: who am I:", err)
		return 1
	}
	adminAuthor = authorship.FromUserInfo(me.Status.UserInfo)
	return m.Run()
}
