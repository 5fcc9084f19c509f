package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/admission"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/keyring"
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
		// The chart's default lifecycle kinds, watched as metadata.
		expiryOptions(o)
		o.Expiry.Kinds = append(o.Expiry.Kinds, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"})
	})
	// Expiry: Deployments watched, the warning written as an Event.
	ens := newNamespace(t, "rbac-expiry", nil)
	newEnvironment(t, ens, "preview", map[string]string{"kustos.io/owner": "ana@example.com", "kustos.io/ttl": "2s"})
	waitEvents(t, ens, "ExpiryWarning", 1)

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

// TestChartLintsStrict: `helm lint --strict` finds nothing, with the defaults, with Cleaner
// target kinds in direct mode, with the webhook's certificate from cert-manager, without
// Cleaners (and so without the webhook), with the expiry extension server, its Ingress and a
// notify webhook, without expiry, and with the inactivity detector reaching Prometheus with a
// token and a CA.
func TestChartLintsStrict(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--set", "mode=direct", "--set-json", `cleaner.targetKinds=[{"apiGroup":"serving.knative.dev","resources":["services","revisions"]},{"apiGroup":"","resources":["configmaps"]}]`},
		{"--set", "webhook.certManager.enabled=true", "--set", "webhook.failurePolicy=Ignore"},
		{"--set", "cleaner.enabled=false"},
		{"--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com",
			"--set", "expiry.extension.ingress.enabled=true", "--set", "expiry.extension.ingress.host=kustos.example.com", "--set-json", `expiry.extension.trustedProxies=["10.0.0.0/8"]`,
			"--set", "expiry.notify.webhookURL=https://hooks.example/abc", "--set", "expiry.notify.webhookTokenSecret=hook",
			"--set", "expiry.notify.mail.host=smtp.example.com", "--set", "expiry.notify.mail.from=kustos@example.com",
			"--set", "expiry.notify.mail.username=kustos", "--set", "expiry.notify.mail.passwordSecret=smtp",
			"--set", "expiry.notify.mail.templatesConfigMap=kustos-mail"},
		{"--set", "expiry.enabled=false"},
		{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=https://prometheus.example:9090",
			"--set", "inactivity.prometheusAuth.bearerTokenSecret=prom-token", "--set", "inactivity.prometheusAuth.caConfigMap=prom-ca"},
		{"--set", "mode=direct", "--set", "expiry.helmReleases.enabled=true", "--set-json", `expiry.helmReleases.resourceKinds=[{"apiGroup":"","resources":["configmaps"]}]`},
		{"--set", "mode=direct", "--set", "expiry.deletion.namespaces=true", "--set-json", `expiry.deletion.kinds=["apps/deployments","apps/statefulsets"]`,
			"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=http://prometheus:9090", "--set-json", `inactivity.deletion.kinds=["apps/deployments"]`},
		{"--set", "replicaCount=2", "--set", "podAntiAffinity=hard", "--set", "crds.install=false",
			"--set-json", `extraEnv=[{"name":"A","value":"b"}]`, "--set-json", `extraVolumes=[{"name":"v","emptyDir":{}}]`,
			"--set-json", `extraVolumeMounts=[{"name":"v","mountPath":"/v"}]`},
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
// either is granted when cleaners are off, the SubjectAccessReviews for Cleaners' authors are
// granted with Cleaners, and the permission checks Kustos makes itself (SelfSubjectAccessReview)
// need no rule of the chart.
func TestChartCleanerRBAC(t *testing.T) {
	const targets = `cleaner.targetKinds=[{"apiGroup":"serving.knative.dev","resources":["services","revisions"]},{"apiGroup":"","resources":["configmaps"]}]`
	var (
		readCleaners = []access{
			{"get", "kustos.io", "cleaners", ""}, {"list", "kustos.io", "cleaners", ""}, {"watch", "kustos.io", "cleaners", ""},
			{"update", "kustos.io", "cleaners", "status"}, {"patch", "kustos.io", "cleaners", "status"},
			// What a Cleaner's author may delete, asked before every deletion.
			{"create", "authorization.k8s.io", "subjectaccessreviews", ""},
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
		name:    "defaults",
		allowed: cat(readCleaners, selfReview),
		denied:  cat(deleteCleaners, readTargets, deleteTargets, never),
		wantArgs: []string{"--enable-cleaners=true", "--cleaner-ready-recheck=30m", "--cleaner-not-ready-recheck=10s",
			"--cleaner-author-key-secret=kustos-cleaner-rbac/defaults-kustos-cleaner-author"},
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
			args, may := applyChartRBAC(t, release, "kustos-cleaner-rbac", tc.args...)
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

			// The authorizer sees new bindings through its informers: wait until everything
			// granted is allowed, after which a denial is a real one.
			for _, a := range tc.allowed {
				eventually(t, fmt.Sprintf("the chart's ServiceAccount may %s %s.%s/%s", a.verb, a.resource, a.group, a.subresource), func() bool { return may(a) })
			}
			for _, a := range tc.denied {
				if may(a) {
					t.Errorf("the chart's ServiceAccount may %s %s.%s/%s, want denied", a.verb, a.resource, a.group, a.subresource)
				}
			}
		})
	}
}

// access is one thing the chart's ServiceAccount may or may not do, in namespace team-a.
type access struct {
	verb, group, resource, subresource string
}

// applyChartRBAC renders the chart with args, applies its ClusterRoles and ClusterRoleBindings
// (removed when t ends) and returns the Deployment's args and what asks the API server's RBAC
// authorizer (SubjectAccessReview) whether the chart's ServiceAccount may do a thing.
func applyChartRBAC(t *testing.T, release, releaseNS string, chartArgs ...string) (args []string, may func(access) bool) {
	t.Helper()
	var serviceAccount string
	for _, co := range renderChart(t, release, releaseNS, chartArgs...) {
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
	user := "system:serviceaccount:" + releaseNS + ":" + serviceAccount
	return args, func(a access) bool {
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
}

// TestChartDeletionRBAC: deletions, pauses and helm uninstalls are explicit opt-ins per
// detector and kind. With the defaults, and in PR mode with nothing opted in, the chart grants
// no delete on tenant objects (Namespaces, Deployments, StatefulSets, helm's Secrets), no patch
// on Deployments and StatefulSets or their scale subresource, and passes no --allow; each
// deletion or pause value grants its verb on its kind alone and names it in --allow; observe
// mode grants none whatever the values say.
func TestChartDeletionRBAC(t *testing.T) {
	pr := []string{"--set", "mode=pr", "--set", "git.repo=acme/gitops", "--set", "github.existingSecret=kustos-github", "--set", "github.tokenKey=token"}
	inactivity := []string{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=http://prometheus:9090"}
	helmReleases := []string{"--set", "expiry.helmReleases.enabled=true"}
	var (
		deleteNamespaces   = access{"delete", "", "namespaces", ""}
		deleteDeployments  = access{"delete", "apps", "deployments", ""}
		deleteStatefulSets = access{"delete", "apps", "statefulsets", ""}
		deleteConfigMaps   = access{"delete", "", "configmaps", ""}
		pauseDeployments   = []access{{"patch", "apps", "deployments", ""}, {"patch", "apps", "deployments", "scale"}}
		pauseStatefulSets  = []access{{"patch", "apps", "statefulsets", ""}, {"patch", "apps", "statefulsets", "scale"}}
		pauses             = slices.Concat(pauseDeployments, pauseStatefulSets)
		uninstalls         = []access{{"delete", "", "secrets", ""}, {"update", "", "secrets", ""}}
		updates            = []access{{"update", "apps", "deployments", ""}, {"update", "apps", "statefulsets", ""}}
		tenantDeletes      = []access{deleteNamespaces, deleteDeployments, deleteStatefulSets, deleteConfigMaps}
	)
	for _, tc := range []struct {
		name            string
		args            []string
		allowed, denied []access
		wantAllow       string // "": no --allow flag
	}{{
		name:   "defaults",
		denied: slices.Concat(tenantDeletes, pauses, updates, uninstalls),
	}, {
		name:      "pr, nothing opted in",
		args:      slices.Concat(pr, inactivity, helmReleases),
		allowed:   []access{{"list", "", "secrets", ""}},
		denied:    slices.Concat(tenantDeletes, pauses, updates, uninstalls),
		wantAllow: "cleaner:delete:kustos.io/cleaners",
	}, {
		name:      "pr, expired namespaces",
		args:      slices.Concat(pr, []string{"--set", "expiry.deletion.namespaces=true"}),
		allowed:   []access{deleteNamespaces},
		denied:    slices.Concat([]access{deleteDeployments, deleteStatefulSets, deleteConfigMaps}, pauses),
		wantAllow: "expiry:delete:namespaces,cleaner:delete:kustos.io/cleaners",
	}, {
		name:      "pr, idle deployments paused",
		args:      slices.Concat(pr, inactivity, []string{"--set-json", `inactivity.pause.kinds=["apps/deployments"]`}),
		allowed:   pauseDeployments,
		denied:    slices.Concat(tenantDeletes, pauseStatefulSets, updates),
		wantAllow: "inactivity:pause:apps/deployments,cleaner:delete:kustos.io/cleaners",
	}, {
		name: "direct, expired deployments and idle statefulsets",
		args: slices.Concat([]string{"--set", "mode=direct", "--set-json", `expiry.deletion.kinds=["apps/deployments"]`,
			"--set-json", `inactivity.deletion.kinds=["apps/statefulsets"]`}, inactivity),
		allowed:   []access{deleteDeployments, deleteStatefulSets},
		denied:    slices.Concat([]access{deleteNamespaces, deleteConfigMaps}, pauses, updates),
		wantAllow: "expiry:delete:apps/deployments,inactivity:delete:apps/statefulsets,cleaner:delete:kustos.io/cleaners",
	}, {
		name:      "direct, expired statefulsets paused",
		args:      []string{"--set", "mode=direct", "--set-json", `expiry.pause.kinds=["apps/statefulsets"]`},
		allowed:   pauseStatefulSets,
		denied:    slices.Concat(tenantDeletes, pauseDeployments, updates),
		wantAllow: "expiry:pause:apps/statefulsets,cleaner:delete:kustos.io/cleaners",
	}, {
		name:      "direct, expired helm releases uninstalled",
		args:      slices.Concat([]string{"--set", "mode=direct", "--set", "expiry.helmReleases.uninstall=true"}, helmReleases),
		allowed:   uninstalls,
		denied:    slices.Concat(tenantDeletes, pauses),
		wantAllow: "expiry:delete:helm.sh/releases,cleaner:delete:kustos.io/cleaners",
	}, {
		name:      "direct, Cleaners' helm releases uninstalled",
		args:      []string{"--set", "mode=direct", "--set", "cleaner.helmReleases.uninstall=true"},
		allowed:   uninstalls,
		denied:    slices.Concat(tenantDeletes, pauses),
		wantAllow: "cleaner:delete:kustos.io/cleaners,cleaner:delete:helm.sh/releases",
	}, {
		name: "observe ignores the deletion and pause values",
		args: slices.Concat([]string{"--set", "expiry.deletion.namespaces=true", "--set-json", `expiry.deletion.kinds=["apps/deployments"]`,
			"--set-json", `inactivity.deletion.kinds=["apps/statefulsets"]`, "--set-json", `inactivity.pause.kinds=["apps/deployments"]`,
			"--set-json", `expiry.pause.kinds=["apps/statefulsets"]`, "--set", "expiry.helmReleases.uninstall=true",
			"--set", "cleaner.helmReleases.uninstall=true"}, inactivity, helmReleases),
		denied: slices.Concat(tenantDeletes, pauses, uninstalls),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			args, may := applyChartRBAC(t, nonDNS.ReplaceAllString(tc.name, "-"), "kustos-deletion-rbac", tc.args...)
			var got string
			for _, a := range args {
				if v, ok := strings.CutPrefix(a, "--allow="); ok {
					got = v
				}
				if strings.HasPrefix(a, "--allow-delete=") {
					t.Errorf("the chart passes %s, want --allow only", a)
				}
			}
			if got != tc.wantAllow {
				t.Errorf("--allow=%q, want %q", got, tc.wantAllow)
			}
			// Kustos reads what the chart passes.
			if _, err := allow.Parse(got, app.PolicyDetectors); err != nil {
				t.Errorf("Kustos refuses the chart's --allow=%s: %v", got, err)
			}
			// The authorizer sees new bindings through its informers: wait until everything
			// granted is allowed (and, for nothing granted, the basic rule), after which a
			// denial is a real one.
			for _, a := range append(tc.allowed, access{"list", "", "namespaces", ""}) {
				eventually(t, fmt.Sprintf("the chart's ServiceAccount may %s %s.%s/%s", a.verb, a.resource, a.group, a.subresource), func() bool { return may(a) })
			}
			for _, a := range tc.denied {
				if may(a) {
					t.Errorf("the chart's ServiceAccount may %s %s.%s/%s, want denied", a.verb, a.resource, a.group, a.subresource)
				}
			}
		})
	}
}

// TestChartSchemaRefusesBadNewValues: values.schema.json and the chart refuse malformed
// deletion, replica and extra values, naming the value.
func TestChartSchemaRefusesBadNewValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a kind for a resource", []string{"--set-json", `expiry.deletion.kinds=["apps/Deployment"]`}, "/expiry/deletion/kinds/0"},
		{"namespaces as a string", []string{"--set-string", "expiry.deletion.namespaces=yes"}, "/expiry/deletion/namespaces"},
		{"a kind the detector does not watch", []string{"--set", "mode=direct", "--set-json", `expiry.deletion.kinds=["batch/jobs"]`}, "is none of expiry.lifecycleKinds"},
		{"an inactivity kind not watched", []string{"--set", "mode=direct", "--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=http://p:9090",
			"--set-json", `inactivity.deletion.kinds=["namespaces"]`}, "is none of inactivity.kinds"},
		{"misspelt deletion key", []string{"--set", "expiry.deletion.namespace=true"}, "'namespace' not allowed"},
		{"pdb minAvailable 0", []string{"--set", "pdb.minAvailable=0"}, "/pdb/minAvailable"},
		{"anti-affinity value", []string{"--set", "podAntiAffinity=sometimes"}, "/podAntiAffinity"},
		{"env without a name", []string{"--set-json", `extraEnv=[{"value":"x"}]`}, "/extraEnv/0"},
		{"mount without a path", []string{"--set-json", `extraVolumeMounts=[{"name":"v"}]`}, "/extraVolumeMounts/0"},
		{"crds.install as a string", []string{"--set-string", "crds.install=no"}, "/crds/install"},
		{"a threshold over 100", []string{"--set", "threshold=101%"}, "/threshold"},
		{"a threshold with a space", []string{"--set", "threshold=90 %"}, "/threshold"},
		{"a quota window of hours", []string{"--set", "quota.window=36h"}, "/quota/window"},
		{"a max-shrink that is no number", []string{"--set", "quota.shrink.maxShrink=a quarter"}, "/quota/shrink/maxShrink"},
		{"shrink enabled as a string", []string{"--set-string", "quota.shrink.enabled=yes"}, "/quota/shrink/enabled"},
		{"misspelt shrink key", []string{"--set", "quota.shrink.enable=true"}, "'enable' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(append([]string{"template", "kustos", chartDir(t)}, tc.args...)...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want an error", tc.args)
			}
			if !strings.Contains(string(out)+err.Error(), tc.want) {
				t.Errorf("helm template %v: %v\n%s\nwant it to name %q", tc.args, err, out, tc.want)
			}
		})
	}
}

// TestChartThresholdAsTheCLITakesIt: the threshold is accepted in every form --threshold takes
// (a number, a fraction, a percent sign; --set passes "85.5" as a string) and passed on as
// written.
func TestChartThresholdAsTheCLITakesIt(t *testing.T) {
	for _, v := range []string{"90%", "85.5", "85.5%", "100", "0"} {
		t.Run(v, func(t *testing.T) {
			out, err := helm("template", "kustos", chartDir(t), "--set", "threshold="+v)
			if err != nil {
				t.Fatalf("helm template --set threshold=%s: %v\n%s", v, err, out)
			}
			if !strings.Contains(string(out), "- --threshold="+v+"\n") {
				t.Errorf("--set threshold=%s does not render --threshold=%s", v, v)
			}
			if _, err := quota.ParseThreshold(v); err != nil {
				t.Errorf("the chart accepts %s, which --threshold refuses: %v", v, err)
			}
		})
	}
}

// TestChartQuotaWindowFlags: the window and shrink values render as the flags, in a form the
// flags' parsers take.
func TestChartQuotaWindowFlags(t *testing.T) {
	out, err := helm("template", "kustos", chartDir(t), "--set", "quota.shrink.enabled=true", "--set", "quota.window=3w",
		"--set", "quota.headroom=0.1", "--set", "quota.shrink.maxShrink=50%")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	for _, want := range []string{"- --enable-shrink=true\n", "- --quota-window=3w\n", "- --headroom=0.1\n", "- --tolerance=15%\n",
		"- --shrink-cooldown=7d\n", "- --max-shrink=50%\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the render lacks %q", strings.TrimSpace(want))
		}
	}
	for _, parse := range []func() error{
		func() error { _, err := quota.ParseWindow("3w"); return err },
		func() error { _, err := quota.ParseHeadroom("0.1"); return err },
		func() error { _, err := quota.ParseTolerance("15%"); return err },
		func() error { _, err := quota.ParseShrinkCooldown("7d"); return err },
		func() error { _, err := quota.ParseMaxShrink("50%"); return err },
	} {
		if err := parse(); err != nil {
			t.Errorf("the chart renders a value the flag refuses: %v", err)
		}
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

// webhookObjects are what the chart renders for the Cleaner webhook, and the Deployment.
type webhookObjects struct {
	config *admissionregistrationv1.ValidatingWebhookConfiguration
	// authors is the configuration of the author stamper (same server and Service).
	authors    *admissionregistrationv1.MutatingWebhookConfiguration
	service    *corev1.Service // the webhook's; the metrics Service is left out
	secret     *corev1.Secret
	authorKey  *corev1.Secret // the key signing Cleaners' author stamps
	deployment *appsv1.Deployment
	// others are objects of kinds client-go does not know (cert-manager's), by kind.
	others map[string][]*unstructured.Unstructured
}

// renderWebhook runs `helm template` and sorts out the objects of the webhook. Kinds client-go
// does not know are kept as unstructured objects.
func renderWebhook(t *testing.T, release, namespace string, args ...string) webhookObjects {
	t.Helper()
	out, err := helm(append([]string{"template", release, chartDir(t), "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	w := webhookObjects{others: map[string][]*unstructured.Unstructured{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding helm output: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		var into any
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration":
			w.config = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			into = w.config
		case "MutatingWebhookConfiguration":
			w.authors = &admissionregistrationv1.MutatingWebhookConfiguration{}
			into = w.authors
		case "Service":
			if !strings.HasSuffix(u.GetName(), "-webhook") {
				continue
			}
			w.service = &corev1.Service{}
			into = w.service
		case "Secret":
			if strings.HasSuffix(u.GetName(), "-cleaner-author") {
				w.authorKey = &corev1.Secret{}
				into = w.authorKey
				break
			}
			w.secret = &corev1.Secret{}
			into = w.secret
		case "Deployment":
			w.deployment = &appsv1.Deployment{}
			into = w.deployment
		default:
			if !scheme.Scheme.Recognizes(u.GroupVersionKind()) {
				w.others[u.GetKind()] = append(w.others[u.GetKind()], u.DeepCopy())
			}
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if w.deployment == nil {
		t.Fatal("the chart rendered no Deployment")
	}
	return w
}

// container is the Deployment's kustos container.
func (w webhookObjects) container() corev1.Container {
	return w.deployment.Spec.Template.Spec.Containers[0]
}

// checkServing checks that the Deployment serves the webhook as the Service and the
// configuration expect: --webhook-port is the container port the Service targets, and the
// certificate is cert-manager's Secret secretName mounted at --webhook-cert-dir or, with
// secretName "", the Secret Kustos makes itself (--webhook-cert-secret for the Service's names,
// its CA put into both configurations), mounted nowhere.
func (w webhookObjects) checkServing(t *testing.T, secretName string) {
	t.Helper()
	c := w.container()
	var port int32
	for _, p := range c.Ports {
		if p.Name == "webhook" {
			port = p.ContainerPort
		}
	}
	if port == 0 || !slices.Contains(c.Args, fmt.Sprintf("--webhook-port=%d", port)) {
		t.Errorf("container ports %+v and args %q disagree on the webhook port", c.Ports, c.Args)
	}
	if tp := w.service.Spec.Ports; len(tp) != 1 || tp[0].Port != 443 || tp[0].TargetPort.String() != "webhook" {
		t.Errorf("webhook Service ports %+v, want 443 → webhook", tp)
	}
	podLabels := w.deployment.Spec.Template.Labels
	for k, v := range w.service.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("the webhook Service selects %s=%s, the Pods have %q", k, v, podLabels[k])
		}
	}
	if secretName == "" {
		ns := w.service.Namespace
		for _, want := range []string{"--webhook-cert-secret=" + ns + "/", "--webhook-service=" + ns + "/" + w.service.Name,
			"--webhook-configurations=" + w.config.Name + "," + w.authors.Name} {
			if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, want) }) {
				t.Errorf("args %q lack %s…", c.Args, want)
			}
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--webhook-cert-dir") {
				t.Errorf("args pass %s, but nothing is mounted", a)
			}
		}
		return
	}
	var volume string
	for _, v := range w.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName {
			volume = v.Name
		}
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == volume && slices.Contains(c.Args, "--webhook-cert-dir="+m.MountPath) {
			mounted = true
		}
	}
	if volume == "" || !mounted {
		t.Errorf("Secret %s is not mounted at --webhook-cert-dir: volumes %+v, mounts %+v, args %q",
			secretName, w.deployment.Spec.Template.Spec.Volumes, c.VolumeMounts, c.Args)
	}
}

// argValue is the value of --name=value in args, "" without it.
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestChartWebhook renders the Cleaner webhook with its defaults and checks it against the real
// API server and a real Kustos: the configuration is what the API server must call (rules,
// failure policy, the Service's path and port); the chart renders no certificate, key or
// caBundle (every render is the same, see TestChartRendersTheSameBytes); Kustos, given the
// chart's flags, creates the serving certificate's Secret and the author key's Secret once,
// puts the CA into both configurations, and the API server, trusting it, has the chart's
// webhooks refuse an invalid Cleaner and stamp a valid one's author; a restart keeps both Secrets.
func TestChartWebhook(t *testing.T) {
	const release = "kustos-wh"
	ns := newNamespace(t, "kustos-webhook", nil)
	w := renderWebhook(t, release, ns)
	if w.config == nil || w.authors == nil || w.service == nil {
		t.Fatalf("the chart rendered config %v, author config %v, Service %v", w.config != nil, w.authors != nil, w.service != nil)
	}
	if w.secret != nil || w.authorKey != nil {
		t.Errorf("the chart renders Secrets (certificate %v, author key %v): a render must generate nothing", w.secret != nil, w.authorKey != nil)
	}
	if len(w.others) > 0 {
		t.Errorf("unexpected kinds %v without cert-manager", slices.Collect(maps.Keys(w.others)))
	}

	// The configuration.
	if len(w.config.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(w.config.Webhooks))
	}
	wh := w.config.Webhooks[0]
	wantRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"kustos.io"}, APIVersions: []string{"v1alpha1"},
			Resources: []string{"cleaners"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}
	if !equality.Semantic.DeepEqual(wh.Rules, wantRules) {
		t.Errorf("rules %+v, want %+v", wh.Rules, wantRules)
	}
	switch {
	case wh.SideEffects == nil || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone:
		t.Errorf("sideEffects %v, want None", wh.SideEffects)
	case !slices.Equal(wh.AdmissionReviewVersions, []string{"v1"}):
		t.Errorf("admissionReviewVersions %q, want [v1]", wh.AdmissionReviewVersions)
	case wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Fail:
		t.Errorf("failurePolicy %v, want Fail", wh.FailurePolicy)
	case wh.TimeoutSeconds == nil || *wh.TimeoutSeconds != 10:
		t.Errorf("timeoutSeconds %v, want 10", wh.TimeoutSeconds)
	case wh.NamespaceSelector != nil || wh.ObjectSelector != nil:
		t.Errorf("selectors %v %v, want every namespace and object", wh.NamespaceSelector, wh.ObjectSelector)
	case len(wh.ClientConfig.CABundle) > 0 || len(w.authors.Webhooks[0].ClientConfig.CABundle) > 0:
		t.Errorf("the chart renders a caBundle; Kustos puts it in")
	}
	svc := wh.ClientConfig.Service
	if svc == nil || svc.Name != w.service.Name || svc.Namespace != ns || svc.Path == nil || *svc.Path != admission.Path ||
		svc.Port == nil || *svc.Port != 443 {
		t.Errorf("clientConfig.service %+v, want Service %s/%s port 443 path %s", svc, ns, w.service.Name, admission.Path)
	}
	w.checkServing(t, "")
	// The API server takes them as rendered (server-side dry run: nothing is registered).
	for _, o := range []client.Object{w.service, w.config, w.authors} {
		if err := k8s.Create(context.Background(), o.DeepCopyObject().(client.Object), client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %T %s: %v", o, o.GetName(), err)
		}
	}
	args := w.container().Args
	certSecret, authorSecret := argValue(args, "webhook-cert-secret"), argValue(args, "cleaner-author-key-secret")
	if certSecret != ns+"/"+release+"-webhook-tls" || authorSecret != ns+"/"+release+"-cleaner-author" {
		t.Fatalf("--webhook-cert-secret=%q --cleaner-author-key-secret=%q", certSecret, authorSecret)
	}

	// The API server calls the chart's configurations, and Kustos answers. envtest rewrites the
	// Service into a URL on a local port (keeping the chart's path); its host is "localhost",
	// so Kustos's certificate is made for a Service named localhost (a test's stand-in for the
	// chart's Service, whose name no test DNS resolves). Kustos replaces envtest's caBundle by
	// its own CA. The configurations are narrowed to this test's namespace so that no other
	// test meets them.
	cfg := w.config.DeepCopy()
	cfg.Name = "kustos-chart-webhook-" + ns
	cfg.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	acfg := w.authors.DeepCopy()
	acfg.Name = "kustos-chart-authors-" + ns
	acfg.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	if svc := acfg.Webhooks[0].ClientConfig.Service; svc == nil || svc.Name != w.service.Name || ptr.Deref(svc.Path, "") != admission.AuthorPath ||
		ptr.Deref(acfg.Webhooks[0].FailurePolicy, "") != admissionregistrationv1.Fail {
		t.Errorf("the author webhook calls %+v (failure policy %v), want the webhook Service at %s, Fail", svc, acfg.Webhooks[0].FailurePolicy, admission.AuthorPath)
	}
	install := envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingHostExternalName: "localhost",
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{cfg},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{acfg}}
	if err := install.Install(env.Config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), cfg)
		_ = k8s.Delete(context.Background(), acfg)
		_ = install.Cleanup()
	})
	start := func() *kustos {
		return startKustos(t, func(o *app.Options) {
			o.Webhook = admission.ServerOptions{Host: "127.0.0.1", Port: install.LocalServingPort,
				CertSecret: certSecret, Service: ns + "/localhost", Configurations: []string{cfg.Name, acfg.Name}}
			o.Cleaners.AuthorKeySecret = authorSecret
		})
	}
	k := start()
	dumpOnFailure(t, k)
	secretOf := func(nsName string) *corev1.Secret {
		t.Helper()
		namespace, name, _ := strings.Cut(nsName, "/")
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
			t.Fatalf("Secret %s: %v", nsName, err)
		}
		return &s
	}
	certs, authorKey := secretOf(certSecret), secretOf(authorSecret)
	if certs.Type != corev1.SecretTypeTLS || len(authorKey.Data[keyring.SecretKeyField]) < authorship.MinKeyBytes {
		t.Fatalf("Secret types %s, author key of %d bytes", certs.Type, len(authorKey.Data[keyring.SecretKeyField]))
	}
	bad := &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: v1alpha1.CleanerSpec{TTL: "1h", Targets: []v1alpha1.Target{{Name: "cm", Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "x"}}},
			Conditions: []string{"cm == null", "cm.data.size( > 0"}},
	}
	refused := func(name string) {
		t.Helper()
		b := bad.DeepCopy()
		b.Name = name
		var err error
		eventually(t, "the chart's webhook answers with Kustos's certificate", func() bool {
			err = kc(t).Create(context.Background(), b.DeepCopy())
			return err != nil && !strings.Contains(err.Error(), "failed calling webhook")
		})
		if want := `admission webhook "cleaners.kustos.io" denied the request`; !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "spec.conditions[1]") {
			t.Errorf("want Invalid from the webhook naming spec.conditions[1], got %v", err)
		}
	}
	refused("bad")
	for _, c := range []struct{ kind, name string }{{"ValidatingWebhookConfiguration", cfg.Name}, {"MutatingWebhookConfiguration", acfg.Name}} {
		var u unstructured.Unstructured
		u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(c.kind))
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: c.name}, &u); err != nil {
			t.Fatal(err)
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		bundle, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
		if want := base64.StdEncoding.EncodeToString(certs.Data["ca.crt"]); bundle != want {
			t.Errorf("%s %s: the caBundle is not the CA of Secret %s", c.kind, c.name, certSecret)
		}
	}
	good := bad.DeepCopy()
	good.Name, good.Spec.Conditions = "good", good.Spec.Conditions[:1]
	good.Annotations = map[string]string{authorship.StampAnnotation: "forged"}
	if err := kc(t).Create(context.Background(), good); err != nil {
		t.Fatalf("a valid Cleaner was refused: %v", err)
	}
	// The chart's author webhook replaced the forged stamp by its own, of the tests' admin,
	// signed with the key of the Secret Kustos made.
	signer, err := authorship.NewSigner(authorKey.Data[keyring.SecretKeyField])
	if err != nil {
		t.Fatal(err)
	}
	stored := getCleaner(t, ns, "good")
	if a, err := (authorship.Cleaners{Signer: signer}).Author(stored); err != nil || a.Username != adminAuthor.Username {
		t.Errorf("the stored Cleaner's author is %+v (%v), want %s stamped by the webhook", a, err, adminAuthor.Username)
	}

	// A restart uses the same Secrets: same certificate, same key, and the webhook still answers.
	k.stop()
	start()
	refused("bad-after-restart")
	if again := secretOf(certSecret); !bytes.Equal(again.Data["tls.crt"], certs.Data["tls.crt"]) || !bytes.Equal(again.Data["ca.crt"], certs.Data["ca.crt"]) {
		t.Error("the restart made a new certificate")
	}
	if again := secretOf(authorSecret); !bytes.Equal(again.Data[keyring.SecretKeyField], authorKey.Data[keyring.SecretKeyField]) {
		t.Error("the restart made a new author key")
	}
}

// TestChartWebhookCertManager: with webhook.certManager.enabled, cert-manager issues the
// certificate (a self-signed Issuer and a Certificate for the Service's DNS names, into the
// Secret the Pods mount) and injects the CA; the chart generates none.
func TestChartWebhookCertManager(t *testing.T) {
	const ns = "kustos-system"
	w := renderWebhook(t, "kustos", ns, "--set", "webhook.certManager.enabled=true")
	if w.config == nil || w.service == nil {
		t.Fatal("no webhook configuration or Service")
	}
	if w.secret != nil {
		t.Errorf("the chart renders Secret %s; cert-manager writes it", w.secret.Name)
	}
	issuers, certs := w.others["Issuer"], w.others["Certificate"]
	if len(issuers) != 1 || len(certs) != 1 {
		t.Fatalf("%d Issuers and %d Certificates, want one each", len(issuers), len(certs))
	}
	if _, ok, _ := unstructured.NestedMap(issuers[0].Object, "spec", "selfSigned"); !ok || issuers[0].GetAPIVersion() != "cert-manager.io/v1" {
		t.Errorf("Issuer %v is not a self-signed cert-manager.io/v1 Issuer", issuers[0].Object)
	}
	cert := certs[0]
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if issuer != issuers[0].GetName() || !slices.Contains(dnsNames, w.service.Name+"."+ns+".svc") || secretName == "" {
		t.Errorf("Certificate issuer %q, dnsNames %q, secretName %q", issuer, dnsNames, secretName)
	}
	if got, want := w.config.Annotations["cert-manager.io/inject-ca-from"], ns+"/"+cert.GetName(); got != want {
		t.Errorf("inject-ca-from %q, want %q", got, want)
	}
	if len(w.config.Webhooks) != 1 || len(w.config.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Errorf("the chart sets a caBundle; cert-manager injects it")
	}
	w.checkServing(t, secretName)
}

// TestChartWebhookOff: without the webhook (webhook.enabled=false, or no Cleaners at all) the
// chart registers none, and Kustos serves none (--webhook-port=0).
func TestChartWebhookOff(t *testing.T) {
	for _, args := range [][]string{
		{"--set", "webhook.enabled=false"},
		{"--set", "cleaner.enabled=false"},
		{"--set", "cleaner.enabled=false", "--set", "webhook.certManager.enabled=true"},
	} {
		w := renderWebhook(t, "kustos", "kustos-system", args...)
		if w.config != nil || w.authors != nil || w.service != nil || w.secret != nil || len(w.others) > 0 {
			t.Errorf("%v: rendered config %v, author config %v, Service %v, Secret %v, others %v", args, w.config != nil, w.authors != nil, w.service != nil, w.secret != nil, w.others)
		}
		c := w.container()
		if !slices.Contains(c.Args, "--webhook-port=0") {
			t.Errorf("%v: args %q lack --webhook-port=0", args, c.Args)
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--webhook-cert-dir") {
				t.Errorf("%v: args pass %s", args, a)
			}
		}
		// With Cleaners, the author key stays mounted: Cleaners stored without a stamp are
		// refused with it as without it, and one stamped earlier stays verifiable.
		mounts := slices.DeleteFunc(slices.Clone(c.VolumeMounts), func(m corev1.VolumeMount) bool { return m.Name == "cleaner-author-key" })
		if len(mounts) > 0 || len(c.Ports) != 2 {
			t.Errorf("%v: mounts %+v, ports %+v", args, c.VolumeMounts, c.Ports)
		}
	}
}

// TestChartSchemaRefusesBadWebhookValues: values.schema.json and the chart refuse webhook values
// that cannot work.
func TestChartSchemaRefusesBadWebhookValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "webhook.failurePolicy=Sometimes"}, "/webhook/failurePolicy"},
		{[]string{"--set", "webhook.timeoutSeconds=60"}, "/webhook/timeoutSeconds"},
		{[]string{"--set", "webhook.port=0"}, "/webhook/port"},
		{[]string{"--set-string", "webhook.enabled=yes"}, "/webhook/enabled"},
		{[]string{"--set", "webhook.certManager.enable=true"}, "'enable' not allowed"},
		{[]string{"--set", "webhook.port=8081"}, "webhook.port 8081 must differ from metrics.port and health.port"},
	} {
		out, err := helm(append([]string{"template", "kustos", chartDir(t)}, tc.args...)...)
		if err == nil {
			t.Errorf("helm template %v succeeded; rendered:\n%s", tc.args, out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: want an error naming %q, got: %v", tc.args, tc.want, err)
		}
	}
}

// TestChartPrometheusAuth renders the inactivity detector with each way of reaching a secured
// Prometheus and checks that every file flag points into what is mounted: the token Secret,
// the CA ConfigMap, or the pod's own service account token; and that asking for two tokens
// is refused.
func TestChartPrometheusAuth(t *testing.T) {
	base := []string{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=https://thanos-querier.openshift-monitoring:9091"}
	for _, tc := range []struct {
		name      string
		args      []string
		token, ca string // the flags' values; "" when the flag must be absent
		volumes   map[string]string
	}{
		{name: "none"},
		{name: "the service account token", args: []string{"--set", "inactivity.prometheusAuth.serviceAccountToken=true"},
			token: "/var/run/secrets/kubernetes.io/serviceaccount/token"},
		{name: "a token Secret and a CA ConfigMap",
			args: []string{"--set", "inactivity.prometheusAuth.bearerTokenSecret=prom-token", "--set", "inactivity.prometheusAuth.caConfigMap=service-ca",
				"--set", "inactivity.prometheusAuth.caKey=service-ca.crt"},
			token: "/var/run/secrets/kustos/prometheus-token/token", ca: "/etc/kustos/prometheus-ca/service-ca.crt",
			volumes: map[string]string{"prom-token": "/var/run/secrets/kustos/prometheus-token", "service-ca": "/etc/kustos/prometheus-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := renderWebhook(t, "kustos", "kustos-system", append(slices.Clone(base), tc.args...)...).deployment
			c := d.Spec.Template.Spec.Containers[0]
			flag := func(name string) string {
				for _, a := range c.Args {
					if v, ok := strings.CutPrefix(a, name+"="); ok {
						return v
					}
				}
				return ""
			}
			if got := flag("--prometheus-bearer-token-file"); got != tc.token {
				t.Errorf("--prometheus-bearer-token-file=%q, want %q", got, tc.token)
			}
			if got := flag("--prometheus-ca-file"); got != tc.ca {
				t.Errorf("--prometheus-ca-file=%q, want %q", got, tc.ca)
			}
			// Mounts for Prometheus: Secret or ConfigMap name → path.
			mounted := map[string]string{}
			for _, m := range c.VolumeMounts {
				for _, v := range d.Spec.Template.Spec.Volumes {
					switch {
					case v.Name != m.Name || !strings.Contains(m.MountPath, "prometheus"):
					case v.Secret != nil:
						mounted[v.Secret.SecretName] = m.MountPath
					case v.ConfigMap != nil:
						mounted[v.ConfigMap.Name] = m.MountPath
					}
				}
			}
			if tc.volumes == nil {
				tc.volumes = map[string]string{}
			}
			if !maps.Equal(mounted, tc.volumes) {
				t.Errorf("mounted %v, want %v", mounted, tc.volumes)
			}
		})
	}
	if out, err := helm(append([]string{"template", "kustos", chartDir(t)}, append(slices.Clone(base),
		"--set", "inactivity.prometheusAuth.serviceAccountToken=true", "--set", "inactivity.prometheusAuth.bearerTokenSecret=prom-token")...)...); err == nil ||
		!strings.Contains(string(out)+err.Error(), "set serviceAccountToken or bearerTokenSecret, not both") {
		t.Errorf("two tokens: err %v, output %s", err, out)
	}
}

// TestChartAllowedDestinations: allowedDestinations becomes one --allowed-destinations flag that
// Kustos accepts, none when empty (public addresses only); an item holding a comma or a space is
// refused by the schema (it would smuggle a second entry past review).
func TestChartAllowedDestinations(t *testing.T) {
	flag := func(args ...string) (string, bool) {
		c := renderWebhook(t, "kustos", "kustos-system", args...).deployment.Spec.Template.Spec.Containers[0]
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--allowed-destinations="); ok {
				return v, true
			}
		}
		return "", false
	}
	if v, ok := flag(); ok {
		t.Errorf("default: --allowed-destinations=%q, want no flag", v)
	}
	v, ok := flag("--set", "allowedDestinations={10.20.0.0/16,broker-ingress.knative-eventing.svc.cluster.local,.lab.example.com}")
	if want := "10.20.0.0/16,broker-ingress.knative-eventing.svc.cluster.local,.lab.example.com"; !ok || v != want {
		t.Errorf("--allowed-destinations=%q (%v), want %q", v, ok, want)
	}
	if _, err := egress.ParsePolicy(v); err != nil {
		t.Errorf("Kustos refuses the chart's flag: %v", err)
	}
	if out, err := helm("template", "kustos", chartDir(t), "--set-json", `allowedDestinations=["10.0.0.0/8,169.254.0.0/16"]`); err == nil ||
		!strings.Contains(err.Error(), "/allowedDestinations/0") {
		t.Errorf("an item with a comma: err %v, output %s", err, out)
	}
}

// TestChartRendersTheSameBytes: the same values render the same bytes, every time. Argo CD
// renders without cluster access and compares; a chart that generates a key or a certificate at
// render time shows a permanent diff and replaces the key at every sync (killing the extension
// links already mailed). Keys and the webhook certificate are made by Kustos itself, once
// (package keyring), or by cert-manager.
func TestChartRendersTheSameBytes(t *testing.T) {
	pr := []string{"--set", "mode=pr", "--set", "git.repo=acme/gitops", "--set", "github.existingSecret=kustos-github", "--set", "github.appID=1", "--set", "github.installationID=2"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"pr with the extension server and deletions", append(slices.Clone(pr), "--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com",
			"--set", "expiry.extension.ingress.enabled=true", "--set", "expiry.extension.ingress.host=kustos.example.com", "--set", "expiry.deletion.namespaces=true")},
		{"direct with inactivity", []string{"--set", "mode=direct", "--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=http://prometheus:9090"}},
		{"cert-manager", []string{"--set", "webhook.certManager.enabled=true"}},
		{"no cleaners", []string{"--set", "cleaner.enabled=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var renders [][]byte
			for range 2 {
				out, err := helm(append([]string{"template", "kustos", chartDir(t), "--namespace", "kustos-system"}, tc.args...)...)
				if err != nil {
					t.Fatalf("helm template: %v", err)
				}
				renders = append(renders, out)
			}
			if !bytes.Equal(renders[0], renders[1]) {
				a, b := strings.Split(string(renders[0]), "\n"), strings.Split(string(renders[1]), "\n")
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Fatalf("two renders differ first at line %d:\n%s\n%s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("two renders differ in length: %d and %d lines", len(a), len(b))
			}
		})
	}
}

// TestChartCRD: the Cleaner CRD is a template (Helm upgrades it, unlike crds/), the very CRD
// `make generate` writes, kept on uninstall (helm.sh/resource-policy: keep), and left out with
// crds.install=false; the API server takes it as an update of the installed CRD.
func TestChartCRD(t *testing.T) {
	if _, err := os.Stat(filepath.Join(chartDir(t), "crds")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the chart has a crds/ directory (%v): Helm never upgrades what it holds", err)
	}
	generated, err := os.ReadFile(filepath.Join(chartDir(t), "files", "crds", "kustos.io_cleaners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want apiextensionsv1.CustomResourceDefinition
	if err := utilyaml.Unmarshal(generated, &want); err != nil {
		t.Fatal(err)
	}
	find := func(args ...string) *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		for _, o := range renderChart(t, "kustos", "kustos-system", args...) {
			if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
				return crd
			}
		}
		return nil
	}
	crd := find()
	if crd == nil {
		t.Fatal("the chart renders no CRD")
	}
	if crd.Name != "cleaners.kustos.io" || !equality.Semantic.DeepEqual(crd.Spec, want.Spec) {
		t.Errorf("the rendered CRD %s differs from the generated one", crd.Name)
	}
	if crd.Annotations["helm.sh/resource-policy"] != "keep" || crd.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("annotations %v, labels %v", crd.Annotations, crd.Labels)
	}
	if find("--set", "crds.install=false") != nil {
		t.Error("crds.install=false renders the CRD")
	}
	var live apiextensionsv1.CustomResourceDefinition
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &live); err != nil {
		t.Fatal(err)
	}
	crd.ResourceVersion = live.ResourceVersion
	if err := k8s.Update(context.Background(), crd, client.DryRunAll); err != nil {
		t.Errorf("the API server refuses the rendered CRD as an upgrade: %v", err)
	}
}

// TestChartExtras: extraEnv, extraVolumes, extraVolumeMounts and extraArgs reach the kustos
// container (so flags without a value, such as --expiry-owners or --notify-mail-ca-file, can be
// set with their files), github.caConfigMap becomes --github-ca-file on a mounted ConfigMap, and
// the API server takes the Deployment as rendered.
func TestChartExtras(t *testing.T) {
	ns := newNamespace(t, "kustos-extras", nil)
	objs := renderChart(t, "kustos", ns, "--set", "mode=pr", "--set", "git.repo=acme/gitops", "--set", "github.existingSecret=kustos-github",
		"--set", "github.tokenKey=token", "--set", "github.apiURL=https://github.example.com/api/v3/", "--set", "github.caConfigMap=ghes-ca",
		"--set-json", `extraEnv=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"},{"name":"FROM_SECRET","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]`,
		"--set-json", `extraVolumes=[{"name":"owners","configMap":{"name":"kustos-owners"}},{"name":"mail-ca","configMap":{"name":"mail-ca"}}]`,
		"--set-json", `extraVolumeMounts=[{"name":"owners","mountPath":"/etc/kustos/owners","readOnly":true},{"name":"mail-ca","mountPath":"/etc/kustos/mail-ca","readOnly":true}]`,
		"--set-json", `extraArgs=["--expiry-owners=/etc/kustos/owners/owners.yaml","--notify-mail-ca-file=/etc/kustos/mail-ca/ca.crt"]`)
	var d *appsv1.Deployment
	for _, o := range objs {
		if dep, ok := o.(*appsv1.Deployment); ok {
			d = dep
		}
	}
	if d == nil {
		t.Fatal("no Deployment")
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--expiry-owners=/etc/kustos/owners/owners.yaml", "--notify-mail-ca-file=/etc/kustos/mail-ca/ca.crt", "--github-ca-file=/etc/kustos/github-ca/ca.crt"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args lack %s: %q", want, c.Args)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["HTTPS_PROXY"].Value != "http://proxy:3128" || env["FROM_SECRET"].ValueFrom == nil || env["POD_NAMESPACE"].ValueFrom == nil {
		t.Errorf("env %+v", c.Env)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for name, path := range map[string]string{"owners": "/etc/kustos/owners", "mail-ca": "/etc/kustos/mail-ca", "github-ca": "/etc/kustos/github-ca", "github": "/var/run/secrets/kustos/github"} {
		if _, ok := volumes[name]; !ok || mounts[name] != path {
			t.Errorf("volume %s (%v) mounted at %q, want %s", name, ok, mounts[name], path)
		}
	}
	if cm := volumes["github-ca"].ConfigMap; cm == nil || cm.Name != "ghes-ca" {
		t.Errorf("github-ca volume %+v", volumes["github-ca"])
	}
	if err := k8s.Create(context.Background(), d, client.DryRunAll); err != nil {
		t.Errorf("the API server refuses the Deployment: %v", err)
	}
}

// TestChartReplicas: one replica gets no PodDisruptionBudget unless pdb.enabled (it would block
// every drain); two get one (minAvailable 1, selecting the Pods) and are spread over nodes, and
// the API server takes both as rendered; a budget no eviction could meet is refused.
// TestChartNoServiceLinks: the Pod gets no service-link variables. Kustos reads every flag from
// KUSTOS_<FLAG> as well, and the kubelet names the variables of a Service "kustos-webhook"
// KUSTOS_WEBHOOK_PORT, KUSTOS_WEBHOOK_SERVICE_HOST, …: with links on, a Service of the
// release's own (or any other named kustos-…) would set flags such as --webhook-port to
// "tcp://10.96.0.12:443" and stop Kustos at start-up.
func TestChartNoServiceLinks(t *testing.T) {
	for _, o := range renderChart(t, "kustos", "kustos-system", "--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com") {
		if d, ok := o.(*appsv1.Deployment); ok {
			if l := d.Spec.Template.Spec.EnableServiceLinks; l == nil || *l {
				t.Errorf("the Deployment's enableServiceLinks is %v, want false", l)
			}
			return
		}
	}
	t.Fatal("the chart renders no Deployment")
}

func TestChartReplicas(t *testing.T) {
	ns := newNamespace(t, "kustos-replicas", nil)
	render := func(args ...string) (pdb *policyv1.PodDisruptionBudget, d *appsv1.Deployment) {
		t.Helper()
		for _, o := range renderChart(t, "kustos", ns, args...) {
			switch o := o.(type) {
			case *policyv1.PodDisruptionBudget:
				pdb = o
			case *appsv1.Deployment:
				d = o
			}
		}
		return pdb, d
	}
	if pdb, d := render(); pdb != nil || d.Spec.Template.Spec.Affinity != nil {
		t.Errorf("one replica: PDB %v, affinity %v; want neither", pdb != nil, d.Spec.Template.Spec.Affinity)
	}
	if pdb, _ := render("--set", "pdb.enabled=true"); pdb == nil {
		t.Error("pdb.enabled renders no PDB")
	}
	pdb, d := render("--set", "replicaCount=2", "--set-json", `topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`)
	if pdb == nil || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Fatalf("two replicas: PDB %+v, want minAvailable 1", pdb)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PDB's selector %v does not select the Pods %v (%v)", pdb.Spec.Selector, d.Spec.Template.Labels, err)
	}
	if *d.Spec.Replicas != 2 || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") {
		t.Errorf("replicas %d, args %q", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	aa := d.Spec.Template.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("two replicas: affinity %+v, want a preferred anti-affinity per node", aa)
	}
	if tsc := d.Spec.Template.Spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].TopologyKey != corev1.LabelTopologyZone {
		t.Errorf("topologySpreadConstraints %+v", tsc)
	}
	for _, o := range []client.Object{pdb, d} {
		if err := k8s.Create(context.Background(), o, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %T: %v", o, err)
		}
	}
	if _, d := render("--set", "replicaCount=2", "--set", "podAntiAffinity=hard"); d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Error("podAntiAffinity=hard renders no required anti-affinity")
	}
	if out, err := helm("template", "kustos", chartDir(t), "--set", "replicaCount=2", "--set", "pdb.minAvailable=2"); err == nil ||
		!strings.Contains(string(out)+err.Error(), "pdb.minAvailable=2") {
		t.Errorf("a PDB no eviction could meet was rendered: %v", err)
	}
}

// TestChartOwnSecretsRBAC: the RBAC that lets Kustos make its own Secrets and inject its webhook
// CA is that narrow: create Secrets in the release namespace, read only its own Secrets by
// name (never list them, nor change or delete any), and read and patch only its own two
// webhook configurations; with cert-manager and existing key Secrets, none of it.
func TestChartOwnSecretsRBAC(t *testing.T) {
	const release = "own-secrets"
	const fullname = release + "-kustos"
	ns := newNamespace(t, "kustos-own-secrets", nil)
	// Each case has a release of its own (its own ServiceAccount), so that the authorizer's view
	// of one case's RBAC, removed at its end, cannot answer for the next.
	apply := func(t *testing.T, release string, args ...string) string {
		t.Helper()
		var serviceAccount string
		for _, co := range renderChart(t, release, ns, args...) {
			switch o := co.(type) {
			case *corev1.ServiceAccount:
				serviceAccount = o.Name
			case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
				if err := k8s.Create(context.Background(), co); err != nil {
					t.Fatalf("applying %T %s: %v", co, co.GetName(), err)
				}
				t.Cleanup(func() { _ = k8s.Delete(context.Background(), co) })
			}
		}
		return "system:serviceaccount:" + ns + ":" + serviceAccount
	}
	may := func(t *testing.T, user, verb, group, resource, namespace, name string) bool {
		t.Helper()
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource, Name: name}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	webhooks := "admissionregistration.k8s.io"
	t.Run("defaults", func(t *testing.T) {
		user := apply(t, release)
		allowed := [][6]string{
			{"create", "", "secrets", ns, ""},
			{"get", "", "secrets", ns, fullname + "-cleaner-author"}, {"get", "", "secrets", ns, fullname + "-webhook-tls"},
			{"get", webhooks, "validatingwebhookconfigurations", "", fullname + "-cleaners"},
			{"patch", webhooks, "mutatingwebhookconfigurations", "", fullname + "-cleaner-authors"},
		}
		for _, a := range allowed {
			eventually(t, fmt.Sprintf("%s may %s %s %s/%s", user, a[0], a[2], a[3], a[4]), func() bool { return may(t, user, a[0], a[1], a[2], a[3], a[4]) })
		}
		for _, a := range [][6]string{
			{"get", "", "secrets", ns, "someone-elses"}, {"list", "", "secrets", ns, ""}, {"watch", "", "secrets", ns, ""},
			{"update", "", "secrets", ns, fullname + "-cleaner-author"}, {"delete", "", "secrets", ns, fullname + "-webhook-tls"},
			{"create", "", "secrets", "default", ""}, {"get", "", "secrets", "default", fullname + "-cleaner-author"},
			{"patch", webhooks, "validatingwebhookconfigurations", "", "another-webhook"}, {"delete", webhooks, "validatingwebhookconfigurations", "", fullname + "-cleaners"},
		} {
			if may(t, user, a[0], a[1], a[2], a[3], a[4]) {
				t.Errorf("%s may %s %s %s/%s, want denied", user, a[0], a[2], a[3], a[4])
			}
		}
	})
	t.Run("no webhook and an existing key", func(t *testing.T) {
		user := apply(t, "no-own-secrets", "--set", "webhook.enabled=false", "--set", "cleaner.authorKey.existingSecret=my-key")
		eventually(t, "the ClusterRole is in force", func() bool { return may(t, user, "list", "", "namespaces", "", "") })
		for _, a := range [][6]string{
			{"create", "", "secrets", ns, ""}, {"get", "", "secrets", ns, "no-own-secrets-kustos-cleaner-author"},
			{"patch", webhooks, "validatingwebhookconfigurations", "", "no-own-secrets-kustos-cleaners"},
		} {
			if may(t, user, a[0], a[1], a[2], a[3], a[4]) {
				t.Errorf("%s may %s %s %s/%s, want denied", user, a[0], a[2], a[3], a[4])
			}
		}
	})
}
