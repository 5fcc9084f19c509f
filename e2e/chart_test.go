package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	rendered := renderChart(t, release, releaseNS)

	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}); err != nil {
		t.Fatal(err)
	}
	var serviceAccount string
	for _, co := range rendered {
		kind := co.GetObjectKind().GroupVersionKind().Kind
		switch kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue // the Deployment and Service need a kubelet and an image
		}
		if kind == "ServiceAccount" {
			serviceAccount = co.GetName()
		}
		if err := k8s.Create(context.Background(), co); err != nil {
			t.Fatalf("applying %s %s: %v", kind, co.GetName(), err)
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

// TestChartLintsStrict: `helm lint --strict` finds nothing, with the defaults and with Cleaner
// target kinds in direct mode.
func TestChartLintsStrict(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--set", "mode=direct", "--set-json", `cleaner.targetKinds=[{"apiGroup":"serving.knative.dev","resources":["services","revisions"]},{"apiGroup":"","resources":["configmaps"]}]`},
	} {
		if out, err := helm(append([]string{"lint", "--strict", chartDir(t)}, args...)...); err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", args, err, out)
		}
	}
}

// TestChartCleanerRBAC renders the chart for the Cleaner detector, applies its ClusterRole and
// ClusterRoleBinding, and asks the API server's RBAC authorizer (SubjectAccessReview) what the
// ServiceAccount may do: Cleaners are read and their status written whenever cleaners are
// enabled, Cleaners and cleaner.targetKinds are deleted only outside observe mode, nothing of
// either is granted when cleaners are off, and the permission checks Kustos makes itself
// (SelfSubjectAccessReview) need no rule of the chart.
func TestChartCleanerRBAC(t *testing.T) {
	const targets = `cleaner.targetKinds=[{"apiGroup":"serving.knative.dev","resources":["services","revisions"]},{"apiGroup":"","resources":["configmaps"]}]`
	type access struct {
		verb, group, resource, subresource string
	}
	var (
		readCleaners = []access{
			{"get", "kustos.io", "cleaners", ""}, {"list", "kustos.io", "cleaners", ""}, {"watch", "kustos.io", "cleaners", ""},
			{"update", "kustos.io", "cleaners", "status"}, {"patch", "kustos.io", "cleaners", "status"},
		}
		deleteCleaners = []access{{"delete", "kustos.io", "cleaners", ""}}
		readTargets    = []access{
			{"list", "serving.knative.dev", "services", ""}, {"watch", "serving.knative.dev", "revisions", ""},
			{"get", "", "configmaps", ""}, {"list", "", "configmaps", ""}, {"watch", "", "configmaps", ""},
		}
		deleteTargets = []access{
			{"delete", "serving.knative.dev", "services", ""}, {"delete", "serving.knative.dev", "revisions", ""},
			{"delete", "", "configmaps", ""},
		}
		// Never granted by the chart: other kinds, writes other than delete, the CRD itself.
		never = []access{
			{"list", "tekton.dev", "pipelineruns", ""}, {"delete", "tekton.dev", "pipelineruns", ""},
			{"update", "serving.knative.dev", "services", ""}, {"patch", "", "configmaps", ""},
			{"create", "kustos.io", "cleaners", ""}, {"update", "kustos.io", "cleaners", ""},
			{"delete", "", "secrets", ""}, {"list", "", "secrets", ""},
		}
		// SelfSubjectAccessReviews are allowed to every authenticated user by Kubernetes' default
		// system:basic-user ClusterRole.
		selfReview = []access{{"create", "authorization.k8s.io", "selfsubjectaccessreviews", ""}}
	)
	cat := func(lists ...[]access) (out []access) {
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		args           []string
		allowed        []access
		denied         []access
		wantArgs       []string
		wantNoArgsLike string
	}{{
		name:     "defaults",
		allowed:  cat(readCleaners, selfReview),
		denied:   cat(deleteCleaners, readTargets, deleteTargets, never),
		wantArgs: []string{"--enable-cleaners=true", "--cleaner-ready-recheck=30m", "--cleaner-not-ready-recheck=10s"},
	}, {
		name:    "observe with targets",
		args:    []string{"--set-json", targets},
		allowed: cat(readCleaners, readTargets, selfReview),
		denied:  cat(deleteCleaners, deleteTargets, never),
	}, {
		name:     "direct with targets",
		args:     []string{"--set", "mode=direct", "--set-json", targets, "--set", "cleaner.readyRecheck=1h", "--set", "cleaner.notReadyRecheck=30s"},
		allowed:  cat(readCleaners, deleteCleaners, readTargets, deleteTargets, selfReview),
		denied:   never,
		wantArgs: []string{"--enable-cleaners=true", "--cleaner-ready-recheck=1h", "--cleaner-not-ready-recheck=30s"},
	}, {
		name: "pr with targets",
		args: []string{"--set", "mode=pr", "--set", "git.repo=acme/gitops", "--set", "github.existingSecret=kustos-github",
			"--set", "github.tokenKey=token", "--set-json", targets},
		allowed: cat(readCleaners, deleteCleaners, readTargets, deleteTargets, selfReview),
		denied:  never,
	}, {
		name:           "cleaners disabled",
		args:           []string{"--set", "mode=direct", "--set", "cleaner.enabled=false", "--set-json", targets},
		allowed:        selfReview,
		denied:         cat(readCleaners, deleteCleaners, readTargets, deleteTargets, never),
		wantArgs:       []string{"--enable-cleaners=false"},
		wantNoArgsLike: "--cleaner-",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			release := nonDNS.ReplaceAllString(tc.name, "-")
			const releaseNS = "kustos-cleaner-rbac"
			var serviceAccount string
			var args []string
			for _, co := range renderChart(t, release, releaseNS, tc.args...) {
				switch o := co.(type) {
				case *corev1.ServiceAccount:
					serviceAccount = o.Name
				case *appsv1.Deployment:
					args = o.Spec.Template.Spec.Containers[0].Args
				case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
					if err := k8s.Create(context.Background(), co); err != nil {
						t.Fatalf("applying %T %s: %v", co, co.GetName(), err)
					}
					t.Cleanup(func() { _ = k8s.Delete(context.Background(), co) })
				}
			}
			if serviceAccount == "" {
				t.Fatal("the chart rendered no ServiceAccount")
			}
			for _, want := range tc.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("the Deployment's args lack %s: %q", want, args)
				}
			}
			for _, a := range args {
				if tc.wantNoArgsLike != "" && strings.HasPrefix(a, tc.wantNoArgsLike) {
					t.Errorf("the Deployment passes %s, want no %s… flag", a, tc.wantNoArgsLike)
				}
			}

			user := "system:serviceaccount:" + releaseNS + ":" + serviceAccount
			may := func(a access) bool {
				t.Helper()
				review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{
						User:   user,
						Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
						ResourceAttributes: &authorizationv1.ResourceAttributes{
							Namespace: "team-a", Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
						},
					},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("SubjectAccessReview %+v: %v", a, err)
				}
				return review.Status.Allowed
			}
			// The authorizer sees new bindings through its informers: wait until everything
			// granted is allowed, after which a denial is a real one.
			for _, a := range tc.allowed {
				eventually(t, fmt.Sprintf("%s may %s %s.%s/%s", user, a.verb, a.resource, a.group, a.subresource), func() bool { return may(a) })
			}
			for _, a := range tc.denied {
				if may(a) {
					t.Errorf("%s may %s %s.%s/%s, want denied", user, a.verb, a.resource, a.group, a.subresource)
				}
			}
		})
	}
}

// TestChartSchemaRefusesBadCleanerValues: values.schema.json refuses malformed cleaner values
// before anything renders.
func TestChartSchemaRefusesBadCleanerValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in helm's error, which names the value's path
	}{
		{"target kind without resources", []string{"--set-json", `cleaner.targetKinds=[{"apiGroup":"tekton.dev"}]`}, "missing property 'resources'"},
		{"target kind without apiGroup", []string{"--set-json", `cleaner.targetKinds=[{"resources":["pipelineruns"]}]`}, "missing property 'apiGroup'"},
		{"target kind with no resources", []string{"--set-json", `cleaner.targetKinds=[{"apiGroup":"tekton.dev","resources":[]}]`}, "/cleaner/targetKinds/0/resources"},
		{"target kind with an empty resource", []string{"--set-json", `cleaner.targetKinds=[{"apiGroup":"tekton.dev","resources":[""]}]`}, "/cleaner/targetKinds/0/resources/0"},
		{"target kind with verbs", []string{"--set-json", `cleaner.targetKinds=[{"apiGroup":"","resources":["configmaps"],"verbs":["*"]}]`}, "'verbs' not allowed"},
		{"bad ready recheck", []string{"--set", "cleaner.readyRecheck=30 minutes"}, "/cleaner/readyRecheck"},
		{"bad not-ready recheck", []string{"--set", "cleaner.notReadyRecheck=10"}, "/cleaner/notReadyRecheck"},
		{"enabled as a string", []string{"--set-string", "cleaner.enabled=yes"}, "/cleaner/enabled"},
		{"misspelt key", []string{"--set", "cleaner.enable=false"}, "'enable' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(append([]string{"template", "kustos", chartDir(t)}, tc.args...)...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want a schema error; rendered:\n%s", tc.args, out)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template %v: want a schema error naming %q, got: %v", tc.args, tc.want, err)
			}
		})
	}
}

// chartDir is the chart in this repository.
func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "kustos")
}

// helm runs the helm that `make testbin` builds (in $KUSTOS_TESTBIN, or bin/) and returns its
// stdout; an error carries its stderr.
func helm(args ...string) ([]byte, error) {
	bin := os.Getenv(testenv.EnvTestBin)
	if bin == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(root, "bin")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, "helm"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// renderChart runs `helm template` with extra arguments and decodes every object it renders.
func renderChart(t *testing.T, release, namespace string, args ...string) []client.Object {
	t.Helper()
	out, err := helm(append([]string{"template", release, chartDir(t), "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template (build it with `make testbin`): %v", err)
	}
	var objs []client.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
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
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		objs = append(objs, obj.(client.Object))
	}
	return objs
}
