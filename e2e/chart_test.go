package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// TestChartRBACIsEnough installs the chart's ServiceAccount and RBAC exactly as `helm template`
// renders them and runs Kustos as that ServiceAccount: least privilege must still be enough for
// every path — reading quotas, namespaces and events, looking up a failing owner, writing
// Events (also about Namespaces, into "default"), its Leases and leader election.
func TestChartRBACIsEnough(t *testing.T) {
	const release, releaseNS = "kustos", "kustos-chart"
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv(testenv.EnvTestBin)
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	var rendered, stderr bytes.Buffer
	helm := exec.Command(filepath.Join(bin, "helm"), "template", release, filepath.Join(root, "charts", "kustos"), "--namespace", releaseNS)
	helm.Stdout, helm.Stderr = &rendered, &stderr
	if err := helm.Run(); err != nil {
		t.Fatalf("helm template (build it with `make testbin`): %v\n%s", err, stderr.String())
	}

	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}); err != nil {
		t.Fatal(err)
	}
	var serviceAccount string
	dec := utilyaml.NewYAMLOrJSONDecoder(&rendered, 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding helm output: %v", err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			t.Fatalf("helm rendered an object the API does not know: %v", err)
		}
		switch gvk.Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue // the Deployment and Service need a kubelet and an image
		}
		co := obj.(client.Object)
		if gvk.Kind == "ServiceAccount" {
			serviceAccount = co.GetName()
		}
		if err := k8s.Create(context.Background(), co); err != nil {
			t.Fatalf("applying %s %s: %v", gvk.Kind, co.GetName(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), co) })
	}
	if serviceAccount == "" {
		t.Fatal("the chart rendered no ServiceAccount")
	}

	asKustos := rest.CopyConfig(env.Config)
	asKustos.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + releaseNS + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
	}
	k := startKustosAs(t, asKustos, func(o *app.Options) {
		o.StateNamespace = releaseNS
		o.LeaderElection = true
		o.LeaseSweepInterval = time.Second
	})

	// Threshold: quota read, Lease created and updated, Event written.
	ns := at85(t, "rbac-threshold", map[string]string{"resizer.io/increment": "lots"})
	waitEvents(t, ns, reasonRecommended, 1)
	// InvalidAnnotation: an Event about a Namespace, written into "default".
	eventually(t, "InvalidAnnotation event", func() bool {
		for _, e := range kustosEvents(t, metav1.NamespaceDefault, "InvalidAnnotation") {
			if e.InvolvedObject.Name == ns {
				return true
			}
		}
		return false
	})
	// Deficit: the failing ReplicaSet is looked up (get on replicasets) to count missing pods.
	dns := newNamespace(t, "rbac-deficit", nil)
	newQuota(t, dns, "compute", rl("requests.cpu", "3"))
	if err := k8s.Create(context.Background(), deploymentOf(dns, "web", 5, "2")); err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, dns, reasonRecommended, 1)
	if want := regexp.MustCompile(`cannot create 4 more pods`); !want.MatchString(evs[0].Message) {
		t.Errorf("owner lookup as the ServiceAccount failed? message: %s", evs[0].Message)
	}
	// Sweep: list and delete Leases in its namespace.
	key := client.ObjectKey{Namespace: releaseNS, Name: "state-" + ns + "-compute"}
	if err := k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "state lease swept", func() bool {
		var l coordinationv1.Lease
		return client.IgnoreNotFound(k8s.Get(context.Background(), key, &l)) == nil && l.Name == ""
	})
	if errs := k.logs.records(t, "Reconciler error"); len(errs) > 0 {
		t.Errorf("Kustos hit errors running as the chart's ServiceAccount: %v", errs)
	}
}
