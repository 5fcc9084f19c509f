package direct_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var nsCounter atomic.Int64

// namespace creates a namespace of the test's own.
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("direct-%d", nsCounter.Add(1))
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// meta is what the refusal tests put on an object.
type meta struct {
	labels, annotations map[string]string
	owners              []metav1.OwnerReference
}

func (m meta) objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: m.labels, Annotations: m.annotations, OwnerReferences: m.owners}
}

func createConfigMap(t *testing.T, ns, name string, data map[string]string, m meta) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: m.objectMeta(ns, name), Data: data}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func createDeployment(t *testing.T, ns, name string, replicas int32, m meta) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: m.objectMeta(ns, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
	if err := k8s.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func createCustom(t *testing.T, gvk schema.GroupVersionKind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	if err := k8s.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func getCustom(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func get[T client.Object](t *testing.T, obj T, ns, name string) T {
	t.Helper()
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func configMapTarget(ns, name string) lifecycle.Target {
	return lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
}

func deploymentTarget(ns, name string) lifecycle.Target {
	return lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name}
}

func customTarget(gvk schema.GroupVersionKind, ns, name string) lifecycle.Target {
	return lifecycle.Target{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: ns, Name: name}
}

// testAllow lets the tests' detector delete and pause every kind the tests create (both are
// explicit opt-ins: an Actuator without Allow deletes and pauses nothing, see
// TestDeleteNotAllowed and TestPauseNotAllowed).
var testAllow = func() allow.Policy {
	var entries []string
	for _, r := range []string{"configmaps", "apps/deployments", "example.com/widgets", "example.com/gadgets"} {
		entries = append(entries, "test:delete:"+r, "test:pause:"+r)
	}
	p, err := allow.Parse(strings.Join(entries, ","), detectors)
	if err != nil {
		panic(err)
	}
	return p
}()

// detectors are the spellings the tests' policies accept: the detector of this package's
// Changes and those a row sets.
var detectors = map[string]string{"expiry": "expiry", "inactivity": "inactivity", "ephemeral": "ephemeral", "test": "test"}

func mustParse(t testing.TB, s string) allow.Policy {
	t.Helper()
	p, err := allow.Parse(s, detectors)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func change(t lifecycle.Target, e lifecycle.Edit) lifecycle.Change {
	return lifecycle.Change{
		Key: lifecycle.KeyFor("test", t), Detector: "test", Target: t, Edit: e,
		Reason: "Test", Summary: "a test change",
	}
}

func setFields(fields ...lifecycle.FieldChange) lifecycle.Edit {
	return lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: fields}
}

func field(to string, path ...string) lifecycle.FieldChange {
	return lifecycle.FieldChange{Path: path, To: to}
}

func fieldFrom(from, to string, path ...string) lifecycle.FieldChange {
	return lifecycle.FieldChange{Path: path, From: from, To: to}
}

var (
	scaleToZero = lifecycle.Edit{Op: lifecycle.EditScaleToZero}
	deleteEdit  = lifecycle.Edit{Op: lifecycle.EditDelete}
)

func setAnnotations(kv ...string) lifecycle.Edit {
	a := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return lifecycle.Edit{Op: lifecycle.EditSetAnnotations, Annotations: a}
}

func apply(ctx context.Context, a *direct.Actuator, c lifecycle.Change) (lifecycle.Outcome, error) {
	return a.Apply(ctx, c, time.Now(), lifecycle.ProposeOptions{})
}

// calls records the writes an Actuator makes through its client.
type calls struct {
	mu             sync.Mutex
	patches        int
	scalePatches   int
	deletes        int
	deleteOptions  []client.DeleteOptions
	deleteFailures []error
}

func (c *calls) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			c.mu.Lock()
			c.patches++
			c.mu.Unlock()
			return cl.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			c.mu.Lock()
			if sub == "scale" {
				c.scalePatches++
			}
			c.mu.Unlock()
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := cl.Delete(ctx, obj, opts...)
			c.recordDelete(err, opts)
			return err
		},
	}
}

func (c *calls) recordDelete(err error, opts []client.DeleteOption) {
	o := client.DeleteOptions{}
	o.ApplyOptions(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes++
	c.deleteOptions = append(c.deleteOptions, o)
	c.deleteFailures = append(c.deleteFailures, err)
}

// TestOps carries out each op on objects no GitOps tool manages, twice: the first Apply
// changes the object, the second finds it already so.
func TestOps(t *testing.T) {
	type want struct {
		scalePatch bool // the write went through the scale subresource
		// patches of the object by the first Apply, when more than one: a rejected patch,
		// one dry run per new field of guessed type, the patch with strings where rejected.
		patches int
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, ns string) lifecycle.Change
		check func(t *testing.T, ns string)
		want  want
	}{
		{
			name: "SetFields ConfigMap data",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createConfigMap(t, ns, "cm", map[string]string{"a": "1", "keep": "x"}, meta{})
				return change(configMapTarget(ns, "cm"), setFields(fieldFrom("1", "2", "data", "a")))
			},
			check: func(t *testing.T, ns string) {
				cm := get(t, &corev1.ConfigMap{}, ns, "cm")
				if cm.Data["a"] != "2" || cm.Data["keep"] != "x" {
					t.Errorf("data = %v, want a=2 keep=x", cm.Data)
				}
			},
		},
		{
			// A new field whose value reads as a number: tried as one, rejected by the API
			// server (ConfigMap data are strings), written as a string.
			name: "SetFields ConfigMap new data key with a numeric value",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{})
				return change(configMapTarget(ns, "cm"), setFields(field("3", "data", "b")))
			},
			check: func(t *testing.T, ns string) {
				if got := get(t, &corev1.ConfigMap{}, ns, "cm").Data["b"]; got != "3" {
					t.Errorf("data.b = %q, want 3", got)
				}
			},
			want: want{patches: 3},
		},
		{
			name: "SetFields Deployment spec.replicas (a number)",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createDeployment(t, ns, "web", 2, meta{})
				return change(deploymentTarget(ns, "web"), setFields(fieldFrom("2", "5", "spec", "replicas")))
			},
			check: func(t *testing.T, ns string) {
				if got := *get(t, &appsv1.Deployment{}, ns, "web").Spec.Replicas; got != 5 {
					t.Errorf("spec.replicas = %d, want 5", got)
				}
			},
		},
		{
			name: "SetFields Deployment labels and a new number field",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createDeployment(t, ns, "web", 1, meta{labels: map[string]string{"team": "a"}})
				return change(deploymentTarget(ns, "web"), setFields(
					fieldFrom("a", "b", "metadata", "labels", "team"),
					field("12", "metadata", "labels", "cost-center"),
					field("30", "spec", "minReadySeconds"),
				))
			},
			check: func(t *testing.T, ns string) {
				d := get(t, &appsv1.Deployment{}, ns, "web")
				if d.Labels["team"] != "b" || d.Labels["cost-center"] != "12" || d.Spec.MinReadySeconds != 30 {
					t.Errorf("labels = %v, minReadySeconds = %d; want team=b cost-center=12, 30", d.Labels, d.Spec.MinReadySeconds)
				}
			},
		},
		{
			name: "SetFields ResourceQuota quantity (a string)",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				q := &corev1.ResourceQuota{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"},
					Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}},
				}
				if err := k8s.Create(t.Context(), q); err != nil {
					t.Fatal(err)
				}
				return change(lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: ns, Name: "compute"},
					setFields(fieldFrom("1", "1500m", "spec", "hard", "requests.cpu")))
			},
			check: func(t *testing.T, ns string) {
				q := get(t, &corev1.ResourceQuota{}, ns, "compute")
				if got := q.Spec.Hard[corev1.ResourceRequestsCPU]; got.Cmp(resource.MustParse("1500m")) != 0 {
					t.Errorf("spec.hard[requests.cpu] = %s, want 1500m", got.String())
				}
			},
		},
		{
			name: "SetFields custom resource: new integer, new string of digits, boolean",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createCustom(t, gadgetGVK, ns, "g", map[string]any{"enabled": false})
				return change(customTarget(gadgetGVK, ns, "g"), setFields(
					field("3", "spec", "replicas"),
					field("7", "spec", "color"), // a string in the schema: the retry writes "7"
					fieldFrom("false", "true", "spec", "enabled"),
				))
			},
			check: func(t *testing.T, ns string) {
				spec := getCustom(t, gadgetGVK, ns, "g").Object["spec"].(map[string]any)
				if spec["replicas"] != int64(3) || spec["color"] != "7" || spec["enabled"] != true {
					t.Errorf("spec = %#v, want replicas=3 color=\"7\" enabled=true", spec)
				}
			},
			want: want{patches: 4},
		},
		{
			name: "SetAnnotations ConfigMap",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createConfigMap(t, ns, "cm", nil, meta{annotations: map[string]string{"keep": "x", "expiry": "old"}})
				return change(configMapTarget(ns, "cm"), setAnnotations("expiry", "2030-01-01T00:00:00Z", "kustos.dev/why", "extended"))
			},
			check: func(t *testing.T, ns string) {
				a := get(t, &corev1.ConfigMap{}, ns, "cm").Annotations
				if a["keep"] != "x" || a["expiry"] != "2030-01-01T00:00:00Z" || a["kustos.dev/why"] != "extended" {
					t.Errorf("annotations = %v", a)
				}
			},
		},
		{
			name: "SetAnnotations cluster-scoped Namespace",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				return change(lifecycle.Target{Version: "v1", Kind: "Namespace", Name: ns}, setAnnotations("kustos.dev/note", "n"))
			},
			check: func(t *testing.T, ns string) {
				if got := get(t, &corev1.Namespace{}, "", ns).Annotations["kustos.dev/note"]; got != "n" {
					t.Errorf("annotation = %q, want n", got)
				}
			},
		},
		{
			name: "ScaleToZero Deployment through the scale subresource",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createDeployment(t, ns, "web", 3, meta{})
				return change(deploymentTarget(ns, "web"), scaleToZero)
			},
			check: func(t *testing.T, ns string) {
				if got := *get(t, &appsv1.Deployment{}, ns, "web").Spec.Replicas; got != 0 {
					t.Errorf("spec.replicas = %d, want 0", got)
				}
			},
			want: want{scalePatch: true},
		},
		{
			name: "ScaleToZero custom resource through its scale subresource",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createCustom(t, widgetGVK, ns, "w", map[string]any{"replicas": int64(2)})
				return change(customTarget(widgetGVK, ns, "w"), scaleToZero)
			},
			check: func(t *testing.T, ns string) {
				if got := getCustom(t, widgetGVK, ns, "w").Object["spec"].(map[string]any)["replicas"]; got != int64(0) {
					t.Errorf("spec.replicas = %v, want 0", got)
				}
			},
			want: want{scalePatch: true},
		},
		{
			name: "ScaleToZero custom resource without a scale subresource: spec.replicas",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createCustom(t, gadgetGVK, ns, "g", map[string]any{"replicas": int64(4)})
				return change(customTarget(gadgetGVK, ns, "g"), scaleToZero)
			},
			check: func(t *testing.T, ns string) {
				if got := getCustom(t, gadgetGVK, ns, "g").Object["spec"].(map[string]any)["replicas"]; got != int64(0) {
					t.Errorf("spec.replicas = %v, want 0", got)
				}
			},
		},
		{
			name: "Delete ConfigMap",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				createConfigMap(t, ns, "cm", nil, meta{})
				return change(configMapTarget(ns, "cm"), deleteEdit)
			},
			check: func(t *testing.T, ns string) {
				err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm"}, &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("get after delete: %v, want NotFound", err)
				}
			},
		},
		{
			// With a finalizer the object stays, being deleted: the second Apply sees that.
			name: "Delete Deployment with a finalizer",
			setup: func(t *testing.T, ns string) lifecycle.Change {
				d := createDeployment(t, ns, "web", 1, meta{})
				d.Finalizers = []string{"example.com/hold"}
				if err := k8s.Update(t.Context(), d); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					// Let it go (t.Context is done in cleanups).
					_ = k8s.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
				})
				return change(deploymentTarget(ns, "web"), deleteEdit)
			},
			check: func(t *testing.T, ns string) {
				if d := get(t, &appsv1.Deployment{}, ns, "web"); d.DeletionTimestamp == nil {
					t.Error("deletionTimestamp not set")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := namespace(t)
			c := tc.setup(t, ns)
			var rec calls
			a := &direct.Actuator{Allow: testAllow, Client: interceptor.NewClient(k8s, rec.funcs())}

			out, err := apply(ctx, a, c)
			if err != nil {
				t.Fatalf("first Apply: %v", err)
			}
			if !out.Applied || out.Proposal != nil {
				t.Errorf("first Apply: Outcome = %+v, want Applied", out)
			}
			tc.check(t, ns)
			if got := rec.scalePatches > 0; got != tc.want.scalePatch {
				t.Errorf("wrote through the scale subresource: %v, want %v", got, tc.want.scalePatch)
			}
			if tc.want.patches > 0 && rec.patches != tc.want.patches {
				t.Errorf("%d patches, want %d", rec.patches, tc.want.patches)
			}
			if tc.want.scalePatch && rec.patches > 0 {
				t.Errorf("%d patches of the object itself, want none (the scale subresource only)", rec.patches)
			}
			for i, o := range rec.deleteOptions {
				if o.Preconditions == nil || o.Preconditions.UID == nil || o.Preconditions.ResourceVersion == nil ||
					o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationBackground {
					t.Errorf("delete %d: options %+v, want UID and resourceVersion preconditions and Background propagation", i, o)
				}
			}

			writes := rec.patches + rec.scalePatches + rec.deletes
			out, err = apply(ctx, a, c)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if out.Applied {
				t.Errorf("second Apply: Outcome = %+v, want not Applied", out)
			}
			if again := rec.patches + rec.scalePatches + rec.deletes - writes; again != 0 {
				t.Errorf("second Apply wrote %d times, want 0", again)
			}
			tc.check(t, ns)
		})
	}
}

// TestRefusals: objects a GitOps tool manages or a controller owns are never changed, by any
// op, and the error names what was found.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name      string
		meta      meta
		tracking  []string // Actuator.ArgoTrackingLabels
		kind      error
		mentioned []string
	}{
		{
			name: "Flux kustomize-controller label",
			meta: meta{labels: map[string]string{
				"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
			}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`label kustomize.toolkit.fluxcd.io/name="apps"`, "Flux"},
		},
		{
			name:      "Flux helm-controller label",
			meta:      meta{labels: map[string]string{"helm.toolkit.fluxcd.io/name": "podinfo"}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`label helm.toolkit.fluxcd.io/name="podinfo"`, "Flux"},
		},
		{
			name:      "Flux kustomize-controller annotation",
			meta:      meta{annotations: map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`annotation kustomize.toolkit.fluxcd.io/reconcile="disabled"`},
		},
		{
			name:      "Flux helm-controller annotation",
			meta:      meta{annotations: map[string]string{"helm.toolkit.fluxcd.io/driftDetection": "disabled"}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`annotation helm.toolkit.fluxcd.io/driftDetection="disabled"`},
		},
		{
			name:      "Argo CD tracking annotation",
			meta:      meta{annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:x/web"}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`annotation argocd.argoproj.io/tracking-id="shop:apps/Deployment:x/web"`, "Argo CD"},
		},
		{
			name:      "Argo CD default tracking label",
			meta:      meta{labels: map[string]string{"argocd.argoproj.io/instance": "shop"}},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`label argocd.argoproj.io/instance="shop"`, "Argo CD"},
		},
		{
			name:      "Argo CD tracking label configured as app.kubernetes.io/instance",
			meta:      meta{labels: map[string]string{"app.kubernetes.io/instance": "shop"}},
			tracking:  []string{"app.kubernetes.io/instance"},
			kind:      lifecycle.ErrManagedByGitOps,
			mentioned: []string{`label app.kubernetes.io/instance="shop"`, "Argo CD"},
		},
		{
			name: "controller ownerReference",
			meta: meta{owners: []metav1.OwnerReference{{
				APIVersion: "example.com/v1", Kind: "Widget", Name: "parent", UID: "0000-owner", Controller: ptr.To(true),
			}}},
			kind:      lifecycle.ErrSourceNotEditable,
			mentioned: []string{"owner Widget.example.com parent", "0000-owner"},
		},
	}
	edits := []lifecycle.Edit{
		setFields(fieldFrom("2", "5", "spec", "replicas")),
		scaleToZero,
		deleteEdit,
		setAnnotations("kustos.dev/note", "n"),
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := namespace(t)
			before := createDeployment(t, ns, "web", 2, tc.meta)
			a := &direct.Actuator{Allow: testAllow, Client: k8s, ArgoTrackingLabels: tc.tracking}
			for _, e := range edits {
				out, err := apply(ctx, a, change(deploymentTarget(ns, "web"), e))
				if !errors.Is(err, tc.kind) {
					t.Fatalf("%s: err = %v, want %v", e.Op, err, tc.kind)
				}
				if out.Applied {
					t.Errorf("%s: Outcome = %+v, want not Applied", e.Op, out)
				}
				for _, m := range append([]string{"Deployment.apps " + ns + "/web", string(e.Op)}, tc.mentioned...) {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("%s: error %q does not mention %q", e.Op, err, m)
					}
				}
			}
			after := get(t, &appsv1.Deployment{}, ns, "web")
			if after.UID != before.UID || after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the refused object changed: uid %s→%s, resourceVersion %s→%s",
					before.UID, after.UID, before.ResourceVersion, after.ResourceVersion)
			}
		})
	}

	t.Run("message", func(t *testing.T) {
		ns := namespace(t)
		createConfigMap(t, ns, "cm", nil, meta{labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}})
		_, err := apply(t.Context(), &direct.Actuator{Allow: testAllow, Client: k8s}, change(configMapTarget(ns, "cm"), setAnnotations("a", "b")))
		want := "direct: SetAnnotations ConfigMap " + ns + `/cm: the object carries the label kustomize.toolkit.fluxcd.io/name="apps": ` +
			"it is managed by Flux, so the change belongs in Git: managed by a GitOps tool"
		if err == nil || err.Error() != want {
			t.Errorf("error:\n got %v\nwant %s", err, want)
		}
	})
}

// TestNotRefused: marks that do not say a GitOps tool manages the object.
func TestNotRefused(t *testing.T) {
	tests := []struct {
		name     string
		meta     meta
		tracking []string
	}{
		{
			// Helm charts set it without any Argo CD: not a tracking label unless configured.
			name: "app.kubernetes.io/instance with the default tracking labels",
			meta: meta{labels: map[string]string{"app.kubernetes.io/instance": "shop", "app.kubernetes.io/managed-by": "Helm"}},
		},
		{
			name:     "argocd.argoproj.io/instance when another tracking label is configured",
			meta:     meta{labels: map[string]string{"argocd.argoproj.io/instance": "shop"}},
			tracking: []string{"example.com/argo-app"},
		},
		{
			name: "ownerReference that is not the controller",
			meta: meta{owners: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "0000-owner"}}},
		},
		{
			name: "other fluxcd.io keys",
			meta: meta{annotations: map[string]string{"fluxcd.io/automated": "true", "notification.toolkit.fluxcd.io/x": "y"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			createDeployment(t, ns, "web", 2, tc.meta)
			a := &direct.Actuator{Allow: testAllow, Client: k8s, ArgoTrackingLabels: tc.tracking}
			out, err := apply(t.Context(), a, change(deploymentTarget(ns, "web"), scaleToZero))
			if err != nil || !out.Applied {
				t.Fatalf("Apply = %+v, %v; want Applied", out, err)
			}
		})
	}
}

// TestSetFieldsConflict: a field that no longer holds what the detector saw is not written.
func TestSetFieldsConflict(t *testing.T) {
	tests := []struct {
		name  string
		field lifecycle.FieldChange
		msg   string
	}{
		{"different value", fieldFrom("1", "2", "data", "a"), `data.a is "9", not "1" as the detector saw`},
		{"absent field", fieldFrom("1", "2", "data", "missing"), `data.missing is <absent>, not "1" as the detector saw`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			before := createConfigMap(t, ns, "cm", map[string]string{"a": "9"}, meta{})
			_, err := apply(t.Context(), &direct.Actuator{Allow: testAllow, Client: k8s}, change(configMapTarget(ns, "cm"), setFields(tc.field)))
			if !errors.Is(err, lifecycle.ErrSourceConflict) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want ErrSourceConflict saying %q", err, tc.msg)
			}
			if after := get(t, &corev1.ConfigMap{}, ns, "cm"); after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the object was written: %v", after.Data)
			}
		})
	}
}

// TestNotFound: Delete of a missing object is done; anything else says the object is missing.
func TestNotFound(t *testing.T) {
	ns := namespace(t)
	a := &direct.Actuator{Allow: testAllow, Client: k8s}
	out, err := apply(t.Context(), a, change(configMapTarget(ns, "missing"), deleteEdit))
	if err != nil || out.Applied {
		t.Errorf("Delete of a missing object: %+v, %v; want not Applied, no error", out, err)
	}
	for _, e := range []lifecycle.Edit{setFields(field("1", "data", "a")), scaleToZero, setAnnotations("a", "b")} {
		_, err := apply(t.Context(), a, change(deploymentTarget(ns, "missing"), e))
		if !errors.Is(err, lifecycle.ErrSourceNotFound) || !strings.Contains(err.Error(), "Deployment.apps "+ns+"/missing") {
			t.Errorf("%s of a missing object: err = %v, want ErrSourceNotFound naming it", e.Op, err)
		}
	}
}

// TestInvalid: Changes the actuator cannot carry out, whatever the cluster holds.
func TestInvalid(t *testing.T) {
	ns := namespace(t)
	createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{})
	createDeployment(t, ns, "web", 1, meta{})
	cm, web := configMapTarget(ns, "cm"), deploymentTarget(ns, "web")
	tests := []struct {
		name string
		c    lifecycle.Change
		msg  string
	}{
		{"kind not served", change(lifecycle.Target{Group: "example.com", Version: "v1", Kind: "Nothing", Namespace: ns, Name: "x"}, deleteEdit),
			"serves no kind Nothing in example.com/v1"},
		{"namespaced kind without namespace", change(configMapTarget("", "cm"), deleteEdit), "namespaced but the target has no namespace"},
		{"cluster-scoped kind with namespace", change(lifecycle.Target{Version: "v1", Kind: "Namespace", Namespace: ns, Name: ns}, deleteEdit),
			"cluster-scoped but the target has a namespace"},
		{"no name", change(configMapTarget(ns, ""), deleteEdit), "lacks a version, kind or name"},
		{"unknown op", change(cm, lifecycle.Edit{Op: "Explode"}), `unknown edit "Explode"`},
		{"no fields", change(cm, setFields()), "no fields to set"},
		{"no annotations", change(cm, setAnnotations()), "no annotations to set"},
		{"status", change(web, setFields(field("1", "status", "replicas"))), "status is written by the object's controller"},
		{"metadata.name", change(cm, setFields(field("x", "metadata", "name"))), "only metadata.labels and metadata.annotations"},
		{"through a list", change(web, setFields(field("img:2", "spec", "template", "spec", "containers", "0", "image"))),
			"spec.template.spec.containers holds a list, not a map"},
		{"map, not a value", change(web, setFields(field("x", "spec", "selector"))), "spec.selector holds a map, not a single value"},
		{"not a number", change(web, setFields(field("many", "spec", "replicas"))), `spec.replicas: holds a number and "many" is none`},
		{"field and a field below it", change(cm, setFields(field("x", "data", "b"), field("y", "data", "b", "c"))), "data.b is set and so is data.b.c"},
		{"ScaleToZero without replicas", change(cm, scaleToZero), "no scale subresource and the object no spec.replicas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apply(t.Context(), &direct.Actuator{Allow: testAllow, Client: k8s}, tc.c)
			if !errors.Is(err, lifecycle.ErrInvalidChange) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want ErrInvalidChange saying %q", err, tc.msg)
			}
		})
	}
}

// TestDeleteRace: the delete is conditional on the UID and resourceVersion read, so an object
// replaced or changed between the read and the delete is never deleted unchecked. A Change
// names no UID: Delete deletes the object that carries the name when Apply reads it, after
// checking that one.
func TestDeleteRace(t *testing.T) {
	tests := []struct {
		name string
		// concurrently runs before the actuator's n-th delete call (1-based) reaches the API
		// server.
		concurrently func(t *testing.T, ns string, n int)
		// check runs after Apply; old is the UID the object had when the test began.
		check func(t *testing.T, ns string, old string, out lifecycle.Outcome, err error, rec *calls)
	}{
		{
			name: "replaced by an object Flux manages",
			concurrently: func(t *testing.T, ns string, n int) {
				if n == 1 {
					recreate(t, ns, meta{labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}})
				}
			},
			check: func(t *testing.T, ns, old string, out lifecycle.Outcome, err error, rec *calls) {
				if !errors.Is(err, lifecycle.ErrManagedByGitOps) {
					t.Fatalf("err = %v, want ErrManagedByGitOps (the replacement is Flux's)", err)
				}
				if rec.deletes != 1 || !apierrors.IsConflict(rec.deleteFailures[0]) {
					t.Errorf("deletes = %d %v, want 1 that failed its precondition", rec.deletes, rec.deleteFailures)
				}
				cm := get(t, &corev1.ConfigMap{}, ns, "cm")
				if cm.UID == types.UID(old) {
					t.Error("the old object is still there")
				}
				if *rec.deleteOptions[0].Preconditions.UID != types.UID(old) {
					t.Errorf("the delete was conditional on UID %s, want the one read, %s", *rec.deleteOptions[0].Preconditions.UID, old)
				}
			},
		},
		{
			name: "replaced by an unmanaged object",
			concurrently: func(t *testing.T, ns string, n int) {
				if n == 1 {
					recreate(t, ns, meta{})
				}
			},
			check: func(t *testing.T, ns, old string, out lifecycle.Outcome, err error, rec *calls) {
				if err != nil || !out.Applied {
					t.Fatalf("Apply = %+v, %v; want Applied", out, err)
				}
				if rec.deletes != 2 || !apierrors.IsConflict(rec.deleteFailures[0]) || rec.deleteFailures[1] != nil {
					t.Fatalf("deletes = %d %v, want a failed precondition then a delete", rec.deletes, rec.deleteFailures)
				}
				first, second := *rec.deleteOptions[0].Preconditions.UID, *rec.deleteOptions[1].Preconditions.UID
				if first != types.UID(old) || second == types.UID(old) {
					t.Errorf("delete preconditions: UIDs %s then %s; want the old one (%s), then the replacement's read anew", first, second, old)
				}
			},
		},
		{
			name: "updated once",
			concurrently: func(t *testing.T, ns string, n int) {
				if n == 1 {
					touch(t, ns)
				}
			},
			check: func(t *testing.T, ns, old string, out lifecycle.Outcome, err error, rec *calls) {
				if err != nil || !out.Applied {
					t.Fatalf("Apply = %+v, %v; want Applied", out, err)
				}
				if rec.deletes != 2 || !apierrors.IsConflict(rec.deleteFailures[0]) {
					t.Fatalf("deletes = %d %v, want a failed precondition then a delete", rec.deletes, rec.deleteFailures)
				}
				if *rec.deleteOptions[1].Preconditions.UID != types.UID(old) {
					t.Errorf("second delete's UID %s, want %s", *rec.deleteOptions[1].Preconditions.UID, old)
				}
			},
		},
		{
			name:         "updated before every delete",
			concurrently: func(t *testing.T, ns string, _ int) { touch(t, ns) },
			check: func(t *testing.T, ns, old string, out lifecycle.Outcome, err error, rec *calls) {
				if err == nil || !apierrors.IsConflict(err) || out.Applied {
					t.Fatalf("Apply = %+v, %v; want a conflict", out, err)
				}
				// Worth retrying: no finding kind.
				if errorsIsAny(err, lifecycle.ErrSourceNotFound, lifecycle.ErrSourceConflict, lifecycle.ErrInvalidChange,
					lifecycle.ErrManagedByGitOps, lifecycle.ErrSourceNotEditable) {
					t.Errorf("err = %v matches a finding kind", err)
				}
				if !strings.Contains(err.Error(), "changed concurrently twice") {
					t.Errorf("err = %v", err)
				}
				if cm := get(t, &corev1.ConfigMap{}, ns, "cm"); cm.UID != types.UID(old) {
					t.Error("the object was replaced")
				}
			},
		},
		{
			name: "deleted by someone else",
			concurrently: func(t *testing.T, ns string, n int) {
				if n != 1 {
					return
				}
				if err := k8s.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}); err != nil {
					t.Error(err)
				}
			},
			check: func(t *testing.T, ns, old string, out lifecycle.Outcome, err error, rec *calls) {
				if err != nil || out.Applied {
					t.Fatalf("Apply = %+v, %v; want done, not Applied", out, err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			old := string(createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{}).UID)
			rec := &calls{}
			funcs := rec.funcs()
			n := 0
			funcs.Delete = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				n++
				tc.concurrently(t, ns, n)
				err := cl.Delete(ctx, obj, opts...)
				rec.recordDelete(err, opts)
				return err
			}
			a := &direct.Actuator{Allow: testAllow, Client: interceptor.NewClient(k8s, funcs)}
			out, err := apply(t.Context(), a, change(configMapTarget(ns, "cm"), deleteEdit))
			tc.check(t, ns, old, out, err, rec)
		})
	}
}

// TestWriteRace: a field changed between the read and the write is never overwritten.
func TestWriteRace(t *testing.T) {
	t.Run("SetFields re-checks From", func(t *testing.T) {
		ns := namespace(t)
		createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{})
		rec := &calls{}
		funcs := rec.funcs()
		funcs.Patch = func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			rec.patches++
			if rec.patches == 1 {
				cm := get(t, &corev1.ConfigMap{}, ns, "cm")
				cm.Data["a"] = "7"
				if err := k8s.Update(ctx, cm); err != nil {
					t.Error(err)
				}
			}
			return cl.Patch(ctx, obj, p, opts...)
		}
		a := &direct.Actuator{Allow: testAllow, Client: interceptor.NewClient(k8s, funcs)}
		_, err := apply(t.Context(), a, change(configMapTarget(ns, "cm"), setFields(fieldFrom("1", "2", "data", "a"))))
		if !errors.Is(err, lifecycle.ErrSourceConflict) {
			t.Fatalf("err = %v, want ErrSourceConflict after the re-read", err)
		}
		if got := get(t, &corev1.ConfigMap{}, ns, "cm").Data["a"]; got != "7" {
			t.Errorf("data.a = %q, want the concurrent 7", got)
		}
		if rec.patches != 1 {
			t.Errorf("%d patches, want 1", rec.patches)
		}
	})

	t.Run("ScaleToZero through the scale subresource is conditional", func(t *testing.T) {
		ns := namespace(t)
		createDeployment(t, ns, "web", 3, meta{})
		var failures []error
		funcs := interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if len(failures) == 0 {
					touchDeployment(t, ns)
				}
				err := cl.SubResource(sub).Patch(ctx, obj, p, opts...)
				failures = append(failures, err)
				return err
			},
		}
		a := &direct.Actuator{Allow: testAllow, Client: interceptor.NewClient(k8s, funcs)}
		out, err := apply(t.Context(), a, change(deploymentTarget(ns, "web"), scaleToZero))
		if err != nil || !out.Applied {
			t.Fatalf("Apply = %+v, %v; want Applied", out, err)
		}
		if len(failures) != 2 || !apierrors.IsConflict(failures[0]) || failures[1] != nil {
			t.Errorf("scale patches: %v, want a conflict then success", failures)
		}
		d := get(t, &appsv1.Deployment{}, ns, "web")
		if *d.Spec.Replicas != 0 || d.Labels["touched"] == "" {
			t.Errorf("replicas = %d, labels = %v; want 0 and the concurrent label kept", *d.Spec.Replicas, d.Labels)
		}
	})
}

// recreate deletes the test's ConfigMap and creates another with the same name.
func recreate(t *testing.T, ns string, m meta) {
	t.Helper()
	ctx := t.Context()
	if err := k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, ns, "cm", map[string]string{"a": "replacement"}, m)
}

var touches atomic.Int64

// touch changes the test's ConfigMap (a new resourceVersion, the same UID).
func touch(t *testing.T, ns string) {
	t.Helper()
	cm := get(t, &corev1.ConfigMap{}, ns, "cm")
	cm.Data["touched"] = fmt.Sprint(touches.Add(1))
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}

func touchDeployment(t *testing.T, ns string) {
	t.Helper()
	d := get(t, &appsv1.Deployment{}, ns, "web")
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels["touched"] = fmt.Sprint(touches.Add(1))
	if err := k8s.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// TestDeletePreconditions: a Delete that carries the version the detector decided on (a
// Cleaner's evaluated object) deletes only that version; an object changed or replaced since —
// before the read, or between the read and the delete — is left alone with ErrSourceConflict,
// so that it is decided again.
func TestDeletePreconditions(t *testing.T) {
	tests := []struct {
		name string
		// before runs after the decision, before Apply; during before the actuator's delete call.
		before, during func(t *testing.T, ns string)
		wantDeleted    bool
	}{
		{name: "unchanged: deleted", wantDeleted: true},
		{name: "updated since the decision", before: func(t *testing.T, ns string) { touch(t, ns) }},
		{name: "replaced since the decision", before: func(t *testing.T, ns string) { recreate(t, ns, meta{}) }},
		{name: "updated between the read and the delete", during: func(t *testing.T, ns string) { touch(t, ns) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			decided := createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{})
			if tc.before != nil {
				tc.before(t, ns)
			}
			funcs := interceptor.Funcs{Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if tc.during != nil {
					tc.during(t, ns)
					tc.during = nil
				}
				return cl.Delete(ctx, obj, opts...)
			}}
			a := &direct.Actuator{Allow: testAllow, Client: interceptor.NewClient(k8s, funcs)}
			edit := deleteEdit
			edit.Preconditions = &lifecycle.Preconditions{UID: string(decided.UID), ResourceVersion: decided.ResourceVersion}
			out, err := apply(t.Context(), a, change(configMapTarget(ns, "cm"), edit))
			err2 := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm"}, &corev1.ConfigMap{})
			if tc.wantDeleted {
				if err != nil || !out.Applied || !apierrors.IsNotFound(err2) {
					t.Fatalf("Apply = %+v, %v (object still there: %v); want it deleted", out, err, err2 == nil)
				}
				return
			}
			if !errors.Is(err, lifecycle.ErrSourceConflict) || out.Applied {
				t.Fatalf("Apply = %+v, %v; want ErrSourceConflict", out, err)
			}
			if err2 != nil {
				t.Fatalf("the object is gone: %v", err2)
			}
		})
	}
}

// TestDeleteNotAllowed: deletion is an explicit opt-in per detector and resource. A Delete
// the policy does not allow makes no delete call, leaves the object and says which detector
// may not delete which resource and how to allow it; other edits are not affected.
func TestDeleteNotAllowed(t *testing.T) {
	tests := []struct {
		name        string
		policy      string // --allow
		detector    string
		edit        lifecycle.Edit
		wantDeleted bool
	}{
		{name: "no policy: nothing is deleted", detector: "expiry", edit: deleteEdit},
		{name: "another detector's kind", policy: "ephemeral:delete:configmaps", detector: "expiry", edit: deleteEdit},
		{name: "another kind of the detector", policy: "expiry:delete:apps/deployments", detector: "expiry", edit: deleteEdit},
		{name: "a pause is no deletion", policy: "expiry:pause:configmaps", detector: "expiry", edit: deleteEdit},
		{name: "allowed", policy: "expiry:delete:configmaps", detector: "expiry", edit: deleteEdit, wantDeleted: true},
		{name: "an annotation needs no delete right", detector: "expiry", edit: setAnnotations("a", "b")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			createConfigMap(t, ns, "cm", map[string]string{"a": "1"}, meta{})
			rec := &calls{}
			a := &direct.Actuator{Allow: mustParse(t, tc.policy), Client: interceptor.NewClient(k8s, rec.funcs())}
			c := change(configMapTarget(ns, "cm"), tc.edit)
			c.Detector = tc.detector
			out, err := apply(t.Context(), a, c)
			gone := apierrors.IsNotFound(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm"}, &corev1.ConfigMap{}))
			switch {
			case tc.wantDeleted:
				if err != nil || !out.Applied || !gone {
					t.Fatalf("Apply = %+v, %v (gone: %v); want it deleted", out, err, gone)
				}
			case tc.edit.Op != lifecycle.EditDelete:
				if err != nil || !out.Applied {
					t.Fatalf("Apply = %+v, %v; want the annotation written", out, err)
				}
			default:
				if !errors.Is(err, lifecycle.ErrDeleteNotAllowed) || out.Applied {
					t.Fatalf("Apply = %+v, %v; want ErrDeleteNotAllowed", out, err)
				}
				for _, want := range []string{"expiry detector may not delete configmaps", "--allow=expiry:delete:configmaps", "--allow-delete=expiry:configmaps"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if gone || rec.deletes != 0 {
					t.Fatalf("the refused delete reached the API server (%d calls, gone: %v)", rec.deletes, gone)
				}
			}
		})
	}
}

// TestPauseNotAllowed: a pause is an explicit opt-in per detector and resource, like a
// deletion. A ScaleToZero, or a SetFields of a detector whose SetFields pause (Pausers), that
// the policy does not allow writes nothing and says how to allow it; another detector's
// SetFields (a resize) needs no pause right.
func TestPauseNotAllowed(t *testing.T) {
	pauseField := setFields(field("0", "spec", "replicas"))
	tests := []struct {
		name       string
		policy     string // --allow
		detector   string
		edit       lifecycle.Edit
		wantPaused bool
	}{
		{name: "no policy: nothing is scaled", detector: "inactivity", edit: scaleToZero},
		{name: "a deletion is no pause", policy: "inactivity:delete:apps/deployments", detector: "inactivity", edit: scaleToZero},
		{name: "another detector's kind", policy: "inactivity:pause:apps/deployments", detector: "expiry", edit: scaleToZero},
		{name: "another kind of the detector", policy: "inactivity:pause:apps/statefulsets", detector: "inactivity", edit: scaleToZero},
		{name: "scale to zero allowed", policy: "inactivity:pause:apps/deployments", detector: "inactivity", edit: scaleToZero, wantPaused: true},
		{name: "a pause field without the opt-in", detector: "inactivity", edit: pauseField},
		{name: "a pause field allowed", policy: "inactivity:pause:apps/deployments", detector: "inactivity", edit: pauseField, wantPaused: true},
		{name: "a resize needs no pause right", detector: "quota", edit: pauseField, wantPaused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			createDeployment(t, ns, "web", 2, meta{})
			rec := &calls{}
			a := &direct.Actuator{Allow: mustParse(t, tc.policy), Pausers: []string{"inactivity", "expiry"}, Client: interceptor.NewClient(k8s, rec.funcs())}
			c := change(deploymentTarget(ns, "web"), tc.edit)
			c.Detector = tc.detector
			out, err := apply(t.Context(), a, c)
			replicas := *get(t, &appsv1.Deployment{}, ns, "web").Spec.Replicas
			if tc.wantPaused {
				if err != nil || !out.Applied || replicas != 0 {
					t.Fatalf("Apply = %+v, %v (replicas %d); want it paused", out, err, replicas)
				}
				return
			}
			if !errors.Is(err, lifecycle.ErrPauseNotAllowed) || errors.Is(err, lifecycle.ErrDeleteNotAllowed) || out.Applied {
				t.Fatalf("Apply = %+v, %v; want ErrPauseNotAllowed", out, err)
			}
			want := fmt.Sprintf("--allow=%s:pause:apps/deployments", tc.detector)
			for _, want := range []string{tc.detector + " detector may not pause apps/deployments", want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if replicas != 2 || rec.patches != 0 || rec.scalePatches != 0 {
				t.Fatalf("the refused pause reached the API server (%d patches, %d scale patches, replicas %d)", rec.patches, rec.scalePatches, replicas)
			}
		})
	}
}
