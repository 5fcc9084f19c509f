package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The chart of the tests, in memory: one ConfigMap that is the release's object, and ConfigMap
// hooks for pre-delete and post-delete. A ConfigMap hook is ready as soon as it exists, so hooks
// complete without a kubelet; that they ran shows in the ConfigMaps they leave behind
// (before-hook-creation deletes a hook only when it runs again, never after it succeeded).
const (
	dataTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-data
data:
  owner: {{ .Values.ec_owner | quote }}
`
	hookTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-%[1]s
  annotations:
    "helm.sh/hook": %[1]s
    "helm.sh/hook-delete-policy": before-hook-creation
data:
  revision: {{ .Release.Revision | quote }}
`
	// A Job never completes here (no kube-controller-manager, no kubelet).
	jobHookTemplate = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-pre-delete-job
  annotations:
    "helm.sh/hook": pre-delete
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: cleanup
        image: busybox
        command: ["true"]
`
)

func testChart(templates map[string]string) *chart.Chart {
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "kustos-test", Version: "0.1.0"},
		Values:   map[string]any{"ec_owner": "nobody", "replicas": 1},
	}
	for name, data := range templates {
		c.Templates = append(c.Templates, &chart.File{Name: "templates/" + name, Data: []byte(data)})
	}
	return c
}

func hookedChart() *chart.Chart {
	return testChart(map[string]string{
		"data.yaml":        dataTemplate,
		"pre-delete.yaml":  fmt.Sprintf(hookTemplate, "pre-delete"),
		"post-delete.yaml": fmt.Sprintf(hookTemplate, "post-delete"),
	})
}

var nsCounter atomic.Int32

// newNamespace creates a namespace of the test's own. Without kube-controller-manager it could
// never be deleted completely, so it is left behind with the control plane.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("helm-test-%d-%d", os.Getpid()%10000, nsCounter.Add(1))
	_, err := k8s.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// helmConfig is a helm configuration for namespace, built the way the Uninstaller builds its own.
func helmConfig(t *testing.T, namespace string) *action.Configuration {
	t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(newRESTClientGetter(restConfig, namespace), namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// install installs c as release name in namespace with the helm library, as `helm install` would.
func install(t *testing.T, namespace, name string, c *chart.Chart, values map[string]any) {
	t.Helper()
	in := action.NewInstall(helmConfig(t, namespace))
	in.Namespace = namespace // not taken from the configuration
	in.ReleaseName = name
	in.Timeout = time.Minute
	if _, err := in.RunWithContext(context.Background(), c, values); err != nil {
		t.Fatalf("installing %s/%s: %v", namespace, name, err)
	}
}

func newUninstaller(t *testing.T) *Uninstaller {
	return &Uninstaller{Config: restConfig, Timeout: time.Minute, Log: testLogger(t)}
}

func configMap(t *testing.T, namespace, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := k8s.CoreV1().ConfigMaps(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// releaseSecrets lists the release's history as helm's Secrets driver stores it.
func releaseSecrets(t *testing.T, namespace, name string) []string {
	t.Helper()
	l, err := k8s.CoreV1().Secrets(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range l.Items {
		names = append(names, s.Name)
	}
	return names
}

func TestUninstallRunsHooksAndPurgesHistory(t *testing.T) {
	ctx := context.Background()
	ns, name := newNamespace(t), "web"
	values := map[string]any{"ec_owner": "alice@example.com", "ec_ttl": "72h", "nested": map[string]any{"n": int64(3)}}
	install(t, ns, name, hookedChart(), values)
	u := newUninstaller(t)

	if got := releaseSecrets(t, ns, name); !reflect.DeepEqual(got, []string{"sh.helm.release.v1.web.v1"}) {
		t.Fatalf("release secrets after install = %v", got)
	}
	if configMap(t, ns, "web-data") == nil {
		t.Fatal("the release's ConfigMap was not installed")
	}
	if configMap(t, ns, "web-pre-delete") != nil {
		t.Fatal("the pre-delete hook ran at install")
	}

	exists, err := u.Exists(ctx, ns, name)
	if err != nil || !exists {
		t.Fatalf("Exists = %v, %v; want true", exists, err)
	}
	got, err := u.Values(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	// User-supplied values only, as stored (JSON numbers decode as float64), no chart defaults.
	want := map[string]any{"ec_owner": "alice@example.com", "ec_ttl": "72h", "nested": map[string]any{"n": float64(3)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Values = %#v, want %#v", got, want)
	}

	removed, err := u.Uninstall(ctx, ns, name)
	if err != nil || !removed {
		t.Fatalf("Uninstall = %v, %v; want true, nil", removed, err)
	}
	if configMap(t, ns, "web-data") != nil {
		t.Error("the release's ConfigMap is still there")
	}
	if got := releaseSecrets(t, ns, name); len(got) != 0 {
		t.Errorf("release secrets after uninstall = %v, want none", got)
	}
	// The hooks ran: helm created them, and nothing deletes a before-hook-creation hook after it
	// succeeded (hooks are not part of the release's manifest, so the uninstall leaves them).
	for _, hook := range []string{"pre-delete", "post-delete"} {
		cm := configMap(t, ns, "web-"+hook)
		if cm == nil {
			t.Errorf("the %s hook did not run", hook)
			continue
		}
		if cm.Annotations["helm.sh/hook"] != hook || cm.Data["revision"] != "1" {
			t.Errorf("%s hook ConfigMap = %v %v", hook, cm.Annotations, cm.Data)
		}
	}

	exists, err = u.Exists(ctx, ns, name)
	if err != nil || exists {
		t.Fatalf("Exists after uninstall = %v, %v; want false", exists, err)
	}
	removed, err = u.Uninstall(ctx, ns, name)
	if err != nil || removed {
		t.Fatalf("second Uninstall = %v, %v; want false, nil", removed, err)
	}
	if _, err := u.Values(ctx, ns, name); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), ns+"/web") {
		t.Fatalf("Values after uninstall: %v; want ErrNotFound naming the release", err)
	}
}

func TestUninstallInNamespaceWithoutRelease(t *testing.T) {
	ctx := context.Background()
	other := newNamespace(t)
	install(t, other, "api", hookedChart(), nil)
	ns := newNamespace(t)
	u := newUninstaller(t)

	exists, err := u.Exists(ctx, ns, "api")
	if err != nil || exists {
		t.Fatalf("Exists = %v, %v; want false", exists, err)
	}
	removed, err := u.Uninstall(ctx, ns, "api")
	if err != nil || removed {
		t.Fatalf("Uninstall = %v, %v; want false, nil", removed, err)
	}
	// The release of the same name elsewhere is untouched.
	if exists, err := u.Exists(ctx, other, "api"); err != nil || !exists {
		t.Fatalf("Exists in %s = %v, %v; want true", other, exists, err)
	}
	if configMap(t, other, "api-pre-delete") != nil {
		t.Fatal("the other namespace's release ran its pre-delete hook")
	}
	if got, err := u.Values(ctx, other, "api"); err != nil || len(got) != 0 {
		t.Fatalf("Values of a release installed without values = %v, %v; want empty", got, err)
	}
}

// A release uninstalled with --keep-history is not installed; its history is purged without
// counting as a removal.
func TestUninstallKeptHistory(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	install(t, ns, "kept", hookedChart(), nil)
	keep := action.NewUninstall(helmConfig(t, ns))
	keep.KeepHistory = true
	keep.DisableHooks = true
	if _, err := keep.Run("kept"); err != nil {
		t.Fatal(err)
	}
	if got := releaseSecrets(t, ns, "kept"); len(got) != 1 {
		t.Fatalf("history after helm uninstall --keep-history = %v", got)
	}
	u := newUninstaller(t)

	exists, err := u.Exists(ctx, ns, "kept")
	if err != nil || exists {
		t.Fatalf("Exists = %v, %v; want false", exists, err)
	}
	removed, err := u.Uninstall(ctx, ns, "kept")
	if err != nil || removed {
		t.Fatalf("Uninstall = %v, %v; want false, nil", removed, err)
	}
	if got := releaseSecrets(t, ns, "kept"); len(got) != 0 {
		t.Fatalf("history after Uninstall = %v, want purged", got)
	}
}

// A release that an earlier uninstall left "uninstalling" (a crash, a timeout) still exists, and
// Uninstall finishes it.
func TestUninstallFinishesInterruptedUninstall(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	install(t, ns, "half", hookedChart(), nil)
	cfg := helmConfig(t, ns)
	rel, err := cfg.Releases.Last("half")
	if err != nil {
		t.Fatal(err)
	}
	rel.Info.Status = release.StatusUninstalling
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatal(err)
	}
	u := newUninstaller(t)

	exists, err := u.Exists(ctx, ns, "half")
	if err != nil || !exists {
		t.Fatalf("Exists = %v, %v; want true", exists, err)
	}
	removed, err := u.Uninstall(ctx, ns, "half")
	if err != nil || !removed {
		t.Fatalf("Uninstall = %v, %v; want true, nil", removed, err)
	}
	if configMap(t, ns, "half-data") != nil || len(releaseSecrets(t, ns, "half")) != 0 {
		t.Fatal("the release's objects or history survived")
	}
}

// A pre-delete hook that never becomes ready (a Job, with nothing to run it) fails the uninstall
// after Timeout; the release and its objects stay, so a retry runs the hook again.
func TestUninstallHookNeverReady(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	install(t, ns, "stuck", testChart(map[string]string{"data.yaml": dataTemplate, "job.yaml": jobHookTemplate}), nil)
	u := newUninstaller(t)
	u.Timeout = 3 * time.Second

	start := time.Now()
	removed, err := u.Uninstall(ctx, ns, "stuck")
	elapsed := time.Since(start)
	if err == nil || removed {
		t.Fatalf("Uninstall = %v, %v; want an error", removed, err)
	}
	t.Logf("Uninstall: %v", err)
	if !strings.Contains(err.Error(), ns+"/stuck") || !strings.Contains(err.Error(), "pre-delete") {
		t.Errorf("error does not name the release and the failed hook: %v", err)
	}
	// It gives up at Timeout: not before, and far sooner than without it (the hook never gets
	// ready). The upper bound leaves room for a busy machine; a wall-clock bound of a second
	// failed under load.
	if elapsed < u.Timeout*9/10 || elapsed > u.Timeout+15*time.Second {
		t.Errorf("Uninstall took %v with Timeout %v", elapsed, u.Timeout)
	}
	if _, err := k8s.BatchV1().Jobs(ns).Get(ctx, "stuck-pre-delete-job", metav1.GetOptions{}); err != nil {
		t.Errorf("the hook Job was not created: %v", err)
	}
	if configMap(t, ns, "stuck-data") == nil {
		t.Error("the release's objects were deleted although its pre-delete hook failed")
	}
	// Give the abandoned helm run a moment: it must not complete the uninstall behind our back.
	time.Sleep(time.Second)
	u.Timeout = time.Minute
	if exists, err := u.Exists(ctx, ns, "stuck"); err != nil || !exists {
		t.Fatalf("Exists after the failed uninstall = %v, %v; want true", exists, err)
	}
	if len(releaseSecrets(t, ns, "stuck")) != 1 {
		t.Fatal("the release history changed")
	}
	rel, err := helmConfig(t, ns).Releases.Last("stuck")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info.Status != release.StatusUninstalling {
		t.Errorf("release status = %s, want %s", rel.Info.Status, release.StatusUninstalling)
	}
}

func TestUnreachableAPIServer(t *testing.T) {
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()

	// A server that accepts connections and never answers: only the timeout ends a request.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan []net.Conn, 1)
	accepted <- nil
	t.Cleanup(func() {
		_ = silent.Close()
		for _, c := range <-accepted {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns, ok := <-accepted
			if !ok {
				_ = c.Close()
				return
			}
			accepted <- append(conns, c)
		}
	}()

	cancelled, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)

	for _, tc := range []struct {
		name    string
		host    string
		ctx     context.Context
		timeout time.Duration
		within  time.Duration
	}{
		{"closed port", closed, context.Background(), time.Minute, 10 * time.Second},
		{"silent server, timeout", "http://" + silent.Addr().String(), context.Background(), time.Second, 3 * time.Second},
		{"silent server, cancelled", "http://" + silent.Addr().String(), cancelled, time.Minute, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &Uninstaller{Config: &rest.Config{Host: tc.host}, Timeout: tc.timeout, Log: testLogger(t)}
			calls := map[string]func() error{
				"Uninstall": func() error { _, err := u.Uninstall(tc.ctx, "team-a", "web"); return err },
				"Exists":    func() error { _, err := u.Exists(tc.ctx, "team-a", "web"); return err },
				"Values":    func() error { _, err := u.Values(tc.ctx, "team-a", "web"); return err },
			}
			for what, call := range calls {
				start := time.Now()
				err := call()
				if elapsed := time.Since(start); elapsed > tc.within {
					t.Errorf("%s took %v", what, elapsed)
				}
				if err == nil || !strings.Contains(err.Error(), "release team-a/web") {
					t.Errorf("%s: error %v does not name the release", what, err)
				}
				t.Logf("%s: %v", what, err)
			}
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	u := newUninstaller(t)
	ctx := context.Background()
	if _, err := u.Uninstall(ctx, "team-a", "Not_A_Release"); err == nil {
		t.Error("Uninstall accepted an invalid release name")
	}
	if _, err := u.Exists(ctx, "", "web"); err == nil {
		t.Error("Exists accepted an empty namespace")
	}
	if _, err := (&Uninstaller{}).Values(ctx, "team-a", "web"); err == nil {
		t.Error("Values without Config did not fail")
	}
}

// policyChart has one ConfigMap per helm.sh/resource-policy spelling (none, keep, " KEEP ", "",
// retain) and pre- and post-delete hooks with and without hook-succeeded.
func policyChart() *chart.Chart {
	templates := map[string]string{}
	for name, policy := range map[string]string{"plain": "", "keep": "keep", "keep-spaced": " KEEP ", "empty": `""`, "retain": "retain"} {
		ann := ""
		if name != "plain" {
			ann = "\n  annotations:\n    helm.sh/resource-policy: " + policy
		}
		templates[name+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name + ann + "\n"
	}
	for _, h := range []struct{ name, event, policy string }{
		{"pre-kept", "pre-delete", "before-hook-creation"}, {"pre-gone", "pre-delete", "hook-succeeded"},
		{"post-kept", "post-delete", "before-hook-creation"}, {"post-gone", "post-delete", "hook-succeeded,before-hook-creation"},
	} {
		templates[h.name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-%s\n  annotations:\n    helm.sh/hook: %s\n    helm.sh/hook-delete-policy: %s\n", h.name, h.event, h.policy)
	}
	return testChart(templates)
}

// TestUninstallAsHelm uninstalls one release with helm's own action.Uninstall and the same
// chart's other release with Kustos's, and compares what each leaves: every resource policy
// (helm keeps an object whose policy is anything at all, not only "keep") and every hook's
// delete policy must end the same way.
func TestUninstallAsHelm(t *testing.T) {
	ns := newNamespace(t)
	install(t, ns, "byhelm", policyChart(), nil)
	install(t, ns, "bykustos", policyChart(), nil)
	un := action.NewUninstall(helmConfig(t, ns))
	un.Timeout = time.Minute
	if _, err := un.Run("byhelm"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	if removed, err := newUninstaller(t).Uninstall(context.Background(), ns, "bykustos"); err != nil || !removed {
		t.Fatalf("Uninstall = %v, %v; want true, nil", removed, err)
	}
	left := func(release string) map[string]bool {
		out := map[string]bool{}
		for _, name := range []string{"plain", "keep", "keep-spaced", "empty", "retain", "pre-kept", "pre-gone", "post-kept", "post-gone"} {
			out[name] = configMap(t, ns, release+"-"+name) != nil
		}
		return out
	}
	helm, kustos := left("byhelm"), left("bykustos")
	if !reflect.DeepEqual(helm, kustos) {
		t.Errorf("left after uninstall: Kustos %v, helm %v", kustos, helm)
	}
	if helm["plain"] || !helm["empty"] || !helm["retain"] || helm["pre-gone"] || !helm["pre-kept"] {
		t.Errorf("helm itself left %v: the test's premise changed with helm's version", helm)
	}
	if got := releaseSecrets(t, ns, "bykustos"); len(got) != 0 {
		t.Errorf("release secrets after Kustos's uninstall = %v, want none", got)
	}
}
