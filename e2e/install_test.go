package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// TestInstallManifestIsCurrent renders dist/install.yaml again, as `make install-manifest`
// does, and fails when the committed file differs: the plain-manifest install must be the chart
// of the same commit.
func TestInstallManifestIsCurrent(t *testing.T) {
	root := repoRoot(t)
	fresh := filepath.Join(t.TempDir(), "install.yaml")
	cmd := exec.Command("go", "run", "./hack/installmanifest", "-helm", filepath.Join(testBin(t), "helm"),
		"-chart", "charts/kustos", "-values", "hack/install-values.yaml", "-o", fresh)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rendering the install manifest: %v\n%s", err, out)
	}
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		t.Fatalf("dist/install.yaml: %v (run `make install-manifest` and commit it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Fatalf("dist/install.yaml is not what the chart renders (run `make install-manifest` and commit it); first difference at line %d:\n committed: %s\n rendered:  %s",
			i+1, line(gl), line(wl))
	}
}

// TestInstallManifest installs dist/install.yaml on the real control plane as `kubectl apply
// --server-side -f` would (every object, in the file's order) and starts Kustos from the
// manifest's Deployment, with nothing created by hand. There is no
// kubelet, so the test plays its part: it runs bin/kustos with exactly the container's args
// and env (downward-API values resolved for a Pod named like the Deployment's), the volumes'
// Secrets and ConfigMaps written into a directory standing in for the container's file system,
// and the ServiceAccount's token. Only the listening ports move to free ones (the Pod's network
// is not ours). Kustos must become ready on the probe's path and do its job in observer mode: a
// ResourceQuota over its threshold gets its recommendation Event, and no request is forbidden.
// What the manifest leaves to Kustos it must do with the manifest's RBAC: create its Cleaner
// author key and the webhook's serving certificate, and put that CA into both webhook
// configurations.
func TestInstallManifest(t *testing.T) {
	root := repoRoot(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifest(t, data)
	if len(objs) == 0 || objs[0].GetKind() != "Namespace" {
		t.Fatalf("dist/install.yaml must open with its Namespace, so that `kubectl apply -f` can create what lives in it")
	}
	ns := objs[0].GetName()

	var deploy *appsv1.Deployment
	for _, o := range objs {
		if o.GetNamespace() != "" && o.GetNamespace() != ns {
			t.Errorf("%s %s is in namespace %s, not the manifest's %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
		if o.GetKind() == "Secret" {
			t.Errorf("dist/install.yaml carries Secret %s: a published manifest must carry no key material", o.GetName())
		}
		// Server-side apply, as kubectl apply --server-side; the CRD is already there (the
		// suite's control plane installs it) and is taken over, as on a cluster upgraded by hand.
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "Deployment" {
			deploy = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, deploy); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for i := len(objs) - 1; i >= 0; i-- {
			if objs[i].GetKind() == "CustomResourceDefinition" {
				continue // the suite's other tests use it
			}
			if err := client.IgnoreNotFound(k8s.Delete(context.Background(), objs[i])); err != nil {
				t.Errorf("deleting %s %s: %v", objs[i].GetKind(), objs[i].GetName(), err)
			}
		}
	})
	if deploy == nil || len(deploy.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("dist/install.yaml has no Deployment with one container")
	}
	pod := deploy.Spec.Template.Spec
	c := pod.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/kustos" {
		t.Errorf("container command %q, want the image's /kustos", c.Command)
	}
	// The container as the kubelet would start it: its args and env, its volumes as files, its
	// ServiceAccount's token; only the ports move to free ones.
	k := runDeployment(t, ns, deploy, kustosBinary(t))
	logs := k.logs

	quotaNS := at85(t, "install-quota", nil)
	evs := waitEvents(t, quotaNS, reasonRecommended, 1)
	if !strings.Contains(evs[0].Message, "requests.cpu") {
		t.Errorf("recommendation %q does not name requests.cpu", evs[0].Message)
	}
	ownSecrets(t, ns, c.Args)
	for _, o := range objs {
		if !strings.HasSuffix(o.GetKind(), "WebhookConfiguration") {
			continue
		}
		eventually(t, "the CA in "+o.GetKind()+" "+o.GetName(), func() bool {
			w := &unstructured.Unstructured{}
			w.SetGroupVersionKind(o.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), w); err != nil {
				t.Fatal(err)
			}
			hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
			for _, h := range hooks {
				ca, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
				if ca == "" {
					return false
				}
			}
			return len(hooks) > 0
		})
	}
	if errs := logs.records(t, "Reconciler error"); len(errs) > 0 {
		t.Errorf("Kustos hit errors running from dist/install.yaml: %v", errs)
	}
	if strings.Contains(logs.String(), "forbidden") {
		t.Errorf("a request of Kustos was forbidden: the manifest's RBAC is not enough")
	}

	// A normal stop, as the kubelet stops a pod: SIGTERM, exit 0, and no ERROR line on the way
	// (an alert on error lines must not fire at every rollout).
	stoppedAt := len(logs.String())
	k.stop(t)
	for _, line := range strings.Split(logs.String()[stoppedAt:], "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("an ERROR line after SIGTERM: %s", line)
		}
	}
}

// ownSecrets waits for the Secrets Kustos creates itself, named by its --…-secret arguments
// (namespace/name), and deletes them when the test ends: they are not in the manifest.
func ownSecrets(t *testing.T, ns string, args []string) {
	t.Helper()
	found := 0
	for _, a := range args {
		flag, ref, ok := strings.Cut(a, "=")
		if !ok || !strings.HasSuffix(flag, "-secret") {
			continue
		}
		secretNS, name, _ := strings.Cut(ref, "/")
		if secretNS != ns {
			t.Errorf("%s names a Secret outside the manifest's namespace %s", a, ns)
		}
		found++
		s := &corev1.Secret{}
		eventually(t, "Kustos creates Secret "+ref+" ("+flag+")", func() bool {
			return k8s.Get(context.Background(), client.ObjectKey{Namespace: secretNS, Name: name}, s) == nil
		})
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
	}
	if found == 0 {
		t.Error("the Deployment names no Secret Kustos creates (--cleaner-author-key-secret, --webhook-cert-secret)")
	}
}

// decodeManifest reads every object of a multi-document YAML file, in order.
func decodeManifest(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding the manifest: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// mountVolume writes what the kubelet would mount for m (a Secret's or ConfigMap's keys as
// files, read from the API server) into dir.
func mountVolume(t *testing.T, ns string, volumes []corev1.Volume, m corev1.VolumeMount, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range volumes {
		if v.Name != m.Name {
			continue
		}
		files := map[string][]byte{}
		switch {
		case v.Secret != nil:
			var s corev1.Secret
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.Secret.SecretName}, &s); err != nil {
				t.Fatalf("volume %s: Secret %s: %v", v.Name, v.Secret.SecretName, err)
			}
			files = s.Data
		case v.ConfigMap != nil:
			var cm corev1.ConfigMap
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, &cm); err != nil {
				t.Fatalf("volume %s: ConfigMap %s: %v", v.Name, v.ConfigMap.Name, err)
			}
			for k, s := range cm.Data {
				files[k] = []byte(s)
			}
		case v.EmptyDir != nil:
		default:
			t.Fatalf("volume %s: the test does not know how to mount %+v", v.Name, v.VolumeSource)
		}
		for k, b := range files {
			if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Fatalf("volume mount %s names no volume of the Pod", m.Name)
}

// resolveEnv gives an env var the value the kubelet would: literal, the Pod's own name or
// namespace, or a resource of the container. Anything else fails the test, so a new kind of
// variable in the chart is not silently left out.
func resolveEnv(t *testing.T, e corev1.EnvVar, ns, pod string, res corev1.ResourceRequirements) string {
	t.Helper()
	switch {
	case e.ValueFrom == nil:
		return e.Value
	case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
		return ns
	case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
		return pod
	case e.ValueFrom.ResourceFieldRef != nil:
		r := e.ValueFrom.ResourceFieldRef.Resource
		list := res.Limits
		if strings.HasPrefix(r, "requests.") {
			list = res.Requests
		}
		q, ok := list[corev1.ResourceName(r[strings.Index(r, ".")+1:])]
		if !ok {
			t.Fatalf("env %s: the container sets no %s", e.Name, r)
		}
		return strconv.FormatInt(q.Value(), 10)
	}
	t.Fatalf("env %s: the test does not know how to resolve %+v", e.Name, e.ValueFrom)
	return ""
}

// serviceAccountKubeconfig writes a kubeconfig holding a token of the ServiceAccount (the
// TokenRequest API, as the kubelet's projected token), so Kustos has exactly its rights.
func serviceAccountKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	if sa == "" {
		t.Fatal("the Pod names no ServiceAccount")
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatalf("ServiceAccount %s/%s: the manifest does not create it", ns, sa)
		}
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: sa}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kustosBinary builds cmd/kustos as `make build` does.
func kustosBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kustos")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/kustos")
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kustos: %v\n%s", err, b)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// testBin is where `make testbin` put helm and the control plane.
func testBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(testenv.EnvTestBin); bin != "" {
		return bin
	}
	return filepath.Join(repoRoot(t), "bin")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
