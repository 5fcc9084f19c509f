package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
)

// previousRelease is the commit whose chart and binary stand for the release an installation
// upgrades from. No release is tagged yet; when one is, this becomes its commit.
const previousRelease = "46eb2d22da9fdeb2a003bbb82dc81f8a8882c1d0"

// upgradeValues are valid for the chart of previousRelease and for this one. Observer mode
// (the default) changes nothing, so what must survive an upgrade is Kustos's own state. The
// extension server is on so that its link key is created too. failurePolicy Ignore: without a
// Pod network the API server cannot reach the webhook through its Service, and the test stamps
// its Cleaner itself, with the key Kustos created. Cleaners may name ConfigMaps.
var upgradeValues = []string{
	"--set", "webhook.failurePolicy=Ignore",
	"--set", "expiry.extension.enabled=true",
	"--set", "expiry.extension.url=https://kustos.example.test",
	"--set-json", `cleaner.targetKinds=[{"apiGroup":"","resources":["configmaps"]}]`,
}

// TestUpgradeFromPreviousRelease installs the chart of the previous release with `helm upgrade
// --install`, runs that release's binary from the chart's Deployment (as TestInstallManifest
// runs dist/install.yaml's: the container's args, the ServiceAccount's token, the volumes as
// files) until it has written its state, stops it as the kubelet would, upgrades to this
// chart with `helm upgrade` and the same values, and runs this binary from the new
// Deployment. What users rely on must survive: the Cleaner CRD is upgraded and keeps the
// Cleaners; the keys and the webhook's certificate Secrets keep their data (links already sent
// still work, Cleaners' stamps still verify, the webhooks' CA is the same); the state Leases
// are read, not written again (one Lease per Key, the same ones); and no decision is reported
// twice (each Event of the old run still has count 1, no new one for the same decision). A
// new quota over its threshold gets its recommendation from the new binary.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	oldTree := previousReleaseTree(t)
	ns := newNamespace(t, "kustos-upgrade", nil)
	const release = "kustos-upgrade"
	adoptCRD(t, release, ns)
	t.Cleanup(func() {
		if out, err := helm("uninstall", release, "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait", "--timeout", "1m"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})

	// What the old release leaves behind, compared after the upgrade.
	var (
		oldSecrets   map[string]map[string][]byte
		oldCA        map[string]string
		oldLeases    map[string][]string
		oldEvents    []corev1.Event
		oldLeader    string
		stateNS      string
		cleanerStamp string
	)
	// The namespaces outlive the steps (a subtest's namespaces go when it ends).
	quotaNS := newNamespace(t, "upgrade-quota", nil)
	cleanerNS := newNamespace(t, "upgrade-cleaner", nil)
	freshNS := newNamespace(t, "upgrade-quota-new", nil)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.Fatalf("step %q failed; the steps after it depend on it", name)
		}
	}

	step("1 the previous release writes its state", func(t *testing.T) {
		if out, err := helmUpgrade(filepath.Join(oldTree, "charts", "kustos"), release, ns); err != nil {
			t.Fatalf("helm upgrade --install of the previous release's chart: %v\n%s", err, out)
		}
		deploy := releaseDeployment(t, release, ns)
		stateNS = argValue(deploy.Spec.Template.Spec.Containers[0].Args, "state-namespace")
		bin := buildKustosIn(t, oldTree, "kustos-previous")
		old := runDeployment(t, ns, deploy, bin)

		quotaAt85(t, quotaNS)
		waitEvents(t, quotaNS, reasonRecommended, 1)

		if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cleanerNS, Name: "scratch"}}); err != nil {
			t.Fatal(err)
		}
		oldSecrets = ownSecretData(t, ns, deploy)
		signer, err := authorship.NewSigner(oldSecrets["--cleaner-author-key-secret"]["key"])
		if err != nil {
			t.Fatalf("the author key Kustos created: %v", err)
		}
		createCleanerSigned(t, signer, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: cleanerNS, Name: "tidy"}, Spec: v1alpha1.CleanerSpec{
			TTL:     "1s",
			Targets: []v1alpha1.Target{{Name: "scratch", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "scratch"}}},
		}})
		cleanerStamp = getCleaner(t, cleanerNS, "tidy").Annotations[authorship.StampAnnotation]
		waitCondition(t, cleanerNS, "tidy", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
		// One report on the ConfigMap, one on the Cleaner.
		waitEvents(t, cleanerNS, "CleanupDue", 2)

		oldCA = webhookCAs(t, release, ns)
		oldLeases = stateLeases(t, stateNS, quotaNS, cleanerNS)
		if len(oldLeases) == 0 {
			t.Fatalf("no state Lease in %s for the quota's or the Cleaner's Keys", stateNS)
		}
		oldEvents = append(kustosEvents(t, quotaNS, reasonRecommended), kustosEvents(t, cleanerNS, "CleanupDue")...)
		oldLeader = leaderOf(t, stateNS, deploy)
		old.stop(t)
	})

	step("2 helm upgrade to this chart", func(t *testing.T) {
		if out, err := helmUpgrade(chartDir(t), release, ns); err != nil {
			t.Fatalf("helm upgrade to this chart with the same values: %v\n%s", err, out)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "cleaners.kustos.io"}, crd); err != nil {
			t.Fatalf("the Cleaner CRD after the upgrade: %v", err)
		}
		if crd.Annotations["meta.helm.sh/release-name"] != release || crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("the CRD's annotations %v: want it in release %s, kept on uninstall", crd.Annotations, release)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1alpha1" && v.Served }) {
			t.Errorf("the CRD no longer serves v1alpha1: %+v", crd.Spec.Versions)
		}
		if want := chartCRD(t); !equality.Semantic.DeepEqual(crd.Spec.Versions, want.Spec.Versions) {
			t.Errorf("the CRD's versions after the upgrade are not this chart's (files/crds): helm upgrade did not upgrade it")
		}
		// The Cleaner written before the upgrade is still stored and served.
		if cl := getCleaner(t, cleanerNS, "tidy"); cl == nil || cl.Annotations[authorship.StampAnnotation] != cleanerStamp {
			t.Errorf("the Cleaner after helm upgrade: %v, want it unchanged", cl)
		}
		// The new manifests carry no caBundle (Kustos puts it in): helm's patch must leave the
		// one in place, or admission breaks until the new replica is ready.
		if got := webhookCAs(t, release, ns); !mapsEqual(got, oldCA) {
			t.Errorf("the webhooks' caBundle changed with helm upgrade, before the new Kustos ran:\n got: %v\nwant: %v", keysOf(got), keysOf(oldCA))
		}
	})

	step("3 this release reads the state", func(t *testing.T) {
		deploy := releaseDeployment(t, release, ns)
		if got := argValue(deploy.Spec.Template.Spec.Containers[0].Args, "state-namespace"); got != stateNS {
			t.Fatalf("the upgrade moved the state namespace from %s to %s: every Lease would be lost", stateNS, got)
		}
		cur := runDeployment(t, ns, deploy, kustosBinary(t))
		eventually(t, "this release's Kustos holds the leader Lease", func() bool {
			h := leaderOf(t, stateNS, deploy)
			return h != "" && h != oldLeader
		})
		secrets := ownSecretData(t, ns, deploy)
		for flag, data := range secrets {
			if !mapsEqual(data, oldSecrets[flag]) {
				t.Errorf("the Secret of %s changed with the upgrade (fields %v, were %v): links already sent, Cleaners' stamps or the webhook's CA break", flag, keysOf(data), keysOf(oldSecrets[flag]))
			}
		}
		if !slices.Equal(keysOf(secrets), keysOf(oldSecrets)) {
			t.Errorf("the Secrets Kustos creates were those of %v, now %v", keysOf(oldSecrets), keysOf(secrets))
		}
		eventually(t, "the webhooks' caBundle", func() bool { return len(webhookCAs(t, release, ns)) == len(oldCA) })
		if got := webhookCAs(t, release, ns); !mapsEqual(got, oldCA) {
			t.Errorf("the webhooks' CA changed with the upgrade")
		}
		// Work the new binary does after its start proves it reconciles; the quota and the
		// Cleaner of the old run were queued before it.
		quotaAt85(t, freshNS)
		waitEvents(t, freshNS, reasonRecommended, 1)
		never(t, quotaNS, reasonRecommended, 1, 5*time.Second)
		if due := kustosEvents(t, cleanerNS, "CleanupDue"); len(due) != 2 {
			t.Errorf("CleanupDue Events after the upgrade: %v, want the 2 of the previous release", messages(due))
		}

		for _, e := range oldEvents {
			var now corev1.Event
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&e), &now); err != nil {
				t.Errorf("%s Event %s on %s %s: %v", e.Reason, e.Name, e.InvolvedObject.Kind, e.InvolvedObject.Name, err)
				continue
			}
			if now.Count > 1 || now.Series != nil {
				t.Errorf("%s on %s %s was reported again after the upgrade (count %d): %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, now.Count, now.Message)
			}
		}
		if recs := cur.logs.records(t, "recommendation"); len(recs) != 1 {
			t.Errorf("this release logged %d recommendations, want 1 (the new quota's only): %v", len(recs), recs)
		}

		if got := stateLeases(t, stateNS, quotaNS, cleanerNS); !mapsEqual(got, oldLeases) {
			t.Errorf("the state Leases changed with the upgrade (a Key with two Leases, or one written anew):\n got: %v\nwant: %v", got, oldLeases)
		}

		cl := getCleaner(t, cleanerNS, "tidy")
		if cl == nil {
			t.Fatal("the Cleaner is gone after the upgrade")
		}
		if cl.Annotations[authorship.StampAnnotation] != cleanerStamp {
			t.Error("the Cleaner's author stamp changed with the upgrade")
		}
		signer, err := authorship.NewSigner(oldSecrets["--cleaner-author-key-secret"]["key"])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (authorship.Cleaners{Signer: signer}).Author(cl); err != nil {
			t.Errorf("the Cleaner's stamp no longer verifies after the upgrade: %v", err)
		}
		waitCondition(t, cleanerNS, "tidy", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
		if errs := cur.logs.records(t, "Reconciler error"); len(errs) > 0 {
			t.Errorf("this release hit errors after the upgrade: %v", errs)
		}
		cur.stop(t)
	})
}

// quotaAt85 is at85 in an existing namespace.
func quotaAt85(t *testing.T, ns string) {
	t.Helper()
	newQuota(t, ns, "compute", rl("requests.cpu", "10"))
	newPod(t, ns, "p1", rl("cpu", "8500m"))
	waitUsed(t, ns, "compute", "requests.cpu", "8500m")
}

// previousReleaseTree extracts previousRelease's sources (what builds the binary, and the
// chart) into a temporary directory with git archive, which needs no work tree. A shallow clone
// does not have the commit: the error says so rather than skipping the test.
func previousReleaseTree(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", previousRelease, "api", "cmd", "internal", "charts", "go.mod", "go.sum")
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s (a shallow clone lacks it: git fetch --unshallow): %v\n%s", previousRelease, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v\n%s", previousRelease, err, out)
	}
	return dir
}

// buildKustosIn builds dir's cmd/kustos as `make build` does. -trimpath keeps the build cache
// independent of the temporary directory, so a second run compiles nothing.
func buildKustosIn(t *testing.T, dir, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/kustos")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kustos in %s: %v\n%s", dir, err, b)
	}
	return out
}

// helmUpgrade runs `helm upgrade --install` of chart as release in ns with upgradeValues,
// against the test's API server; it does not wait for the Deployment (no Pod runs here).
func helmUpgrade(chart, release, ns string) ([]byte, error) {
	return helm(append([]string{"upgrade", "--install", release, chart, "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--timeout", "1m"}, upgradeValues...)...)
}

// adoptCRD hands the Cleaner CRD, which the suite's control plane installed, to release in ns
// the way helm adopts an existing object (its ownership annotations and label), so that the
// previous release's chart installs its CRD over it as on a cluster where it was first. The
// upgrade writes this chart's CRD back; the ownership annotations go when the test ends, and
// the CRD stays (resource-policy keep), as the suite's other tests need it.
func adoptCRD(t *testing.T, release, ns string) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "cleaners.kustos.io"}, crd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crd.DeepCopy())
	metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "meta.helm.sh/release-name", release)
	metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "meta.helm.sh/release-namespace", ns)
	metav1.SetMetaDataLabel(&crd.ObjectMeta, "app.kubernetes.io/managed-by", "Helm")
	if err := k8s.Patch(ctx, crd, patch); err != nil {
		t.Fatalf("handing the Cleaner CRD to release %s: %v", release, err)
	}
	t.Cleanup(func() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "cleaners.kustos.io"}, crd); err != nil {
			t.Errorf("the Cleaner CRD after the test: %v", err)
			return
		}
		patch := client.MergeFrom(crd.DeepCopy())
		delete(crd.Annotations, "meta.helm.sh/release-name")
		delete(crd.Annotations, "meta.helm.sh/release-namespace")
		delete(crd.Labels, "app.kubernetes.io/managed-by")
		if err := k8s.Patch(ctx, crd, patch); err != nil {
			t.Errorf("releasing the Cleaner CRD: %v", err)
		}
	})
}

// chartCRD is the Cleaner CRD this chart installs.
func chartCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "files", "crds", "kustos.io_cleaners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("the chart's CRD: %v", err)
	}
	return crd
}

// releaseDeployment is the Deployment of release as helm stored it (`helm get manifest`).
func releaseDeployment(t *testing.T, release, ns string) *appsv1.Deployment {
	t.Helper()
	out, err := helm("get", "manifest", release, "--namespace", ns, "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatalf("helm get manifest: %v", err)
	}
	for _, o := range decodeManifest(t, out) {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			t.Fatal(err)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("Deployment %s has %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
		}
		return d
	}
	t.Fatalf("release %s renders no Deployment", release)
	return nil
}

// process is a Kustos started from a Deployment.
type process struct {
	cmd     *exec.Cmd
	logs    *logBuffer
	exited  chan struct{}
	exitErr error
}

// runDeployment starts bin as the kubelet would start deploy's container (see
// TestInstallManifest): its args and env, its volumes as files, its ServiceAccount's token; only
// the ports move to free ones. It returns once the readiness probe answers 200.
func runDeployment(t *testing.T, ns string, deploy *appsv1.Deployment, bin string) *process {
	t.Helper()
	pod := deploy.Spec.Template.Spec
	c := pod.Containers[0]
	fsRoot := t.TempDir()
	args := slices.Clone(c.Args)
	for _, m := range c.VolumeMounts {
		mountVolume(t, ns, pod.Volumes, m, filepath.Join(fsRoot, m.MountPath))
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "="+m.MountPath, "="+filepath.Join(fsRoot, m.MountPath))
		}
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		_, port, err := net.SplitHostPort(freeAddr(t))
		if err != nil {
			t.Fatal(err)
		}
		free, err := strconv.Atoi(port)
		if err != nil {
			t.Fatal(err)
		}
		ports[p.Name] = free
		for i, a := range args {
			// --…-address=:8080, and --webhook-port=9443.
			if strings.HasSuffix(a, "=:"+strconv.Itoa(int(p.ContainerPort))) || a == "--webhook-port="+strconv.Itoa(int(p.ContainerPort)) {
				args[i] = strings.TrimSuffix(a, strconv.Itoa(int(p.ContainerPort))) + strconv.Itoa(free)
			}
		}
	}
	podName := deploy.Name + "-7d9f8b6c5-x2k4q"
	environ := []string{"HOME=" + fsRoot}
	for _, e := range c.Env {
		environ = append(environ, e.Name+"="+resolveEnv(t, e, ns, podName, c.Resources))
	}
	args = append(args, "--kubeconfig="+serviceAccountKubeconfig(t, ns, pod.ServiceAccountName))

	p := &process{logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = environ, io.Discard, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", filepath.Base(bin), tail(p.logs.String(), 6000))
		}
	})

	probe := c.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatal("the container has no HTTP readiness probe")
	}
	readyURL := fmt.Sprintf("http://127.0.0.1:%d%s", ports[probe.HTTPGet.Port.String()], probe.HTTPGet.Path)
	eventually(t, filepath.Base(bin)+" ready at "+probe.HTTPGet.Path, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("%s exited before it was ready: %v", filepath.Base(bin), p.exitErr)
		default:
		}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, readyURL, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// stop stops p as the kubelet stops a pod (SIGTERM) and wants exit status 0.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("Kustos did not stop within 30s of SIGTERM")
	}
	if p.exitErr != nil {
		t.Errorf("Kustos exited with %v after SIGTERM, want 0", p.exitErr)
	}
}

// ownSecretData waits for the Secrets Kustos creates itself, named by the container's
// --…-secret arguments, and returns their data by flag.
func ownSecretData(t *testing.T, ns string, deploy *appsv1.Deployment) map[string]map[string][]byte {
	t.Helper()
	out := map[string]map[string][]byte{}
	for _, a := range deploy.Spec.Template.Spec.Containers[0].Args {
		flag, ref, ok := strings.Cut(a, "=")
		if !ok || !strings.HasSuffix(flag, "-secret") {
			continue
		}
		secretNS, name, _ := strings.Cut(ref, "/")
		if secretNS != ns {
			t.Errorf("%s names a Secret outside the release's namespace %s", a, ns)
		}
		s := &corev1.Secret{}
		eventually(t, "Kustos creates Secret "+ref+" ("+flag+")", func() bool {
			return k8s.Get(context.Background(), client.ObjectKey{Namespace: secretNS, Name: name}, s) == nil
		})
		out[flag] = s.Data
	}
	for _, flag := range []string{"--cleaner-author-key-secret", "--extension-key-secret", "--webhook-cert-secret"} {
		if _, ok := out[flag]; !ok {
			t.Errorf("the Deployment has no %s: the test's values should make Kustos create it", flag)
		}
	}
	return out
}

// webhookCAs is the caBundle of every webhook of release's webhook configurations, by
// configuration and webhook name; webhooks without one are left out.
func webhookCAs(t *testing.T, release, ns string) map[string]string {
	t.Helper()
	out, err := helm("get", "manifest", release, "--namespace", ns, "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatalf("helm get manifest: %v", err)
	}
	cas := map[string]string{}
	for _, o := range decodeManifest(t, out) {
		if !strings.HasSuffix(o.GetKind(), "WebhookConfiguration") {
			continue
		}
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(o.GroupVersionKind())
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), w); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
		for _, h := range hooks {
			m, _ := h.(map[string]any)
			if ca, _, _ := unstructured.NestedString(m, "clientConfig", "caBundle"); ca != "" {
				cas[o.GetName()+"/"+fmt.Sprint(m["name"])] = ca
			}
		}
	}
	return cas
}

// stateLeases lists the state Leases in stateNS of Keys about objects in the namespaces
// given, as Key -> Lease names.
func stateLeases(t *testing.T, stateNS string, namespaces ...string) map[string][]string {
	t.Helper()
	var leases coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &leases, client.InNamespace(stateNS)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range leases.Items {
		key := l.Annotations["kustos.io/key"]
		if key != "" && slices.ContainsFunc(namespaces, func(ns string) bool { return strings.Contains(key, "/"+ns+"/") }) {
			out[key] = append(out[key], l.Name)
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// leaderOf is the holder of the leader-election Lease of deploy's Kustos.
func leaderOf(t *testing.T, stateNS string, deploy *appsv1.Deployment) string {
	t.Helper()
	id := argValue(deploy.Spec.Template.Spec.Containers[0].Args, "leader-election-id")
	if id == "" {
		t.Fatal("the Deployment names no --leader-election-id")
	}
	var l coordinationv1.Lease
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: id}, &l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// createCleanerSigned creates cl stamped by signer with the tests' admin as its author, as the
// admission webhook of a Kustos holding signer's key would stamp it.
func createCleanerSigned(t *testing.T, signer *authorship.Signer, cl *v1alpha1.Cleaner) {
	t.Helper()
	dry := cl.DeepCopy()
	if err := kc(t).Create(context.Background(), dry, client.DryRunAll); err != nil {
		t.Fatalf("creating Cleaner %s/%s (dry run): %v", cl.Namespace, cl.Name, err)
	}
	digest, err := authorship.SpecDigest(dry.Spec)
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := signer.Sign(cl.Namespace, cl.Name, digest, adminAuthor, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cl.Annotations = map[string]string{authorship.StampAnnotation: stamp}
	if err := kc(t).Create(context.Background(), cl); err != nil {
		t.Fatalf("creating Cleaner %s/%s: %v", cl.Namespace, cl.Name, err)
	}
}

func mapsEqual[V any](a, b map[string]V) bool {
	return reflect.DeepEqual(a, b)
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
