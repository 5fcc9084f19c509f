package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// newTenant is a user who may write Secrets, ConfigMaps and Jobs in ns, and delete every one of
// them but Secrets other than the release's records and "victim2": what a tenant may do, by
// RBAC, which allows and never denies.
func newTenant(t *testing.T, ns string) authorship.Author {
	t.Helper()
	user := "tenant-" + ns
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"delete"},
			ResourceNames: []string{"sh.helm.release.v1.preview.v1", "victim2"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"*"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return authorship.Author{Username: user, Groups: []string{"system:authenticated"}}
}

// asTenant is helm's configuration for ns with the tenant's rights (impersonated).
func asTenant(t *testing.T, ns string, tenant authorship.Author) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &env.Kubeconfig, &ns
	flags.Impersonate, flags.ImpersonateGroup = &tenant.Username, &tenant.Groups
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// rewriteAsTenant rewrites the latest record of release name in ns as the tenant: its manifest
// is one document that says ConfigMap "harmless" and holds Secret "victim" in items (read as a
// list whatever its kind), and a pre-delete hook holds a Job and, after `---`, Secret
// "victim2" (every document of a hook is deleted, then created).
func rewriteAsTenant(t *testing.T, ns, name string, tenant authorship.Author) {
	t.Helper()
	cfg := asTenant(t, ns, tenant)
	rel, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatal(err)
	}
	rel.Manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: harmless\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: victim\n"
	rel.Hooks = append(rel.Hooks, &release.Hook{Name: "h", Kind: "Job", Path: "templates/h.yaml", Events: []release.HookEvent{release.HookPreDelete},
		Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: victim2\nstringData:\n  planted: \"yes\"\n"})
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatalf("the tenant rewriting its release: %v", err)
	}
}

// newSecrets creates Secrets "victim" and "victim2" in ns, holding keep=me.
func newSecrets(t *testing.T, ns string) {
	t.Helper()
	for _, name := range []string{"victim", "victim2"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"keep": "me"}}
		if err := k8s.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// secretsUntouched fails t unless Secrets victim and victim2 are as newSecrets made them and no
// hook of the release ran.
func secretsUntouched(t *testing.T, ns, name string) {
	t.Helper()
	for _, name := range []string{"victim", "victim2"} {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			t.Errorf("Secret %s: %v", name, err)
			continue
		}
		if string(s.Data["keep"]) != "me" || s.Data["planted"] != nil {
			t.Errorf("Secret %s was replaced: %v", name, s.Data)
		}
	}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-pre-delete"}, &corev1.ConfigMap{})
	if err == nil {
		t.Error("a pre-delete hook ran")
	}
}

// createCleanerBy is createCleaner with author's stamp, as the admission webhook stamps a Cleaner
// the author applied.
func createCleanerBy(t *testing.T, cl *v1alpha1.Cleaner, author authorship.Author) {
	t.Helper()
	dry := cl.DeepCopy()
	if err := kc(t).Create(context.Background(), dry, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	digest, err := authorship.SpecDigest(dry.Spec)
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := authorSigner.Sign(cl.Namespace, cl.Name, digest, author, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cl.Annotations = map[string]string{authorship.StampAnnotation: stamp}
	if err := kc(t).Create(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
}

// TestCleanerReleaseAsItsAuthor: a tenant who may write Secrets, but not delete Secret
// "victim", rewrites its release so that its one manifest document says ConfigMap but holds
// the Secret in items, and a hook holds a second document. Its Cleaner is refused with
// MissingPermission naming the Secret: nothing is deleted, no hook runs.
func TestCleanerReleaseAsItsAuthor(t *testing.T) {
	ns := newNamespace(t, "cleaner-author", nil)
	tenant := newTenant(t, ns)
	newSecrets(t, ns)
	installRelease(t, ns, "preview")
	rewriteAsTenant(t, ns, "preview", tenant)
	createCleanerBy(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL:  "1s",
		Helm: &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "preview", Delete: true}}},
	}}, tenant)
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	})
	dumpOnFailure(t, k)

	cl := waitCondition(t, ns, "preview", v1alpha1.StepActionsDone, metav1.ConditionFalse, ephemeral.ReasonMissingPermission)
	if c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepActionsDone); !strings.Contains(c.Message, `delete secrets "victim" in `+ns) {
		t.Errorf("ActionsDone: %s", c.Message)
	}
	waitEvents(t, ns, ephemeral.ReasonMissingPermission, 1)
	time.Sleep(2 * time.Second) // looked at again (NotReadyRecheck): refused each time
	secretsUntouched(t, ns, "preview")
	if ok, err := (&helmrelease.Uninstaller{Config: env.Config}).Exists(context.Background(), ns, "preview"); err != nil || !ok {
		t.Errorf("release preview: exists %v, %v; want it left alone", ok, err)
	}
}

// TestReleaseRewrittenAfterAuthorAsked: the author's requests are asked on the release as it
// was (all allowed), the tenant then rewrites it, and the helm release actuator, asking the same
// reviewer on the revision it reads to act on, refuses it: nothing is deleted, no hook runs.
func TestReleaseRewrittenAfterAuthorAsked(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "release-flip", nil)
	tenant := newTenant(t, ns)
	newSecrets(t, ns)
	installRelease(t, ns, "preview")
	reviewer := &authorship.Reviewer{Client: k8s}
	u := &helmrelease.Uninstaller{Config: env.Config, Timeout: time.Minute}

	requests, found, err := u.Touches(ctx, ns, "preview")
	if err != nil || !found {
		t.Fatalf("Touches = %v, %v", found, err)
	}
	for _, at := range requests { // what the detector's authorize asks
		if ok, err := reviewer.Allowed(ctx, tenant, at); err != nil || !ok {
			t.Fatalf("the tenant may not %s (%v): the release as installed should be theirs to remove", at, err)
		}
	}
	rewriteAsTenant(t, ns, "preview", tenant)

	a := helmrelease.Actuator{Releases: u, Access: reviewer}
	c := lifecycle.Change{Key: lifecycle.KeyFor(ephemeral.DetectorName, lifecycle.ReleaseTarget(ns, "preview")), Detector: ephemeral.DetectorName,
		Target: lifecycle.ReleaseTarget(ns, "preview"), Edit: lifecycle.Edit{Op: lifecycle.EditDelete},
		OnBehalfOf: &lifecycle.Principal{User: tenant.Username, Groups: tenant.Groups}}
	_, err = a.Apply(ctx, c, time.Now(), lifecycle.ProposeOptions{})
	var denied *helmrelease.DeniedError
	if !errors.Is(err, lifecycle.ErrAuthorDenied) || !errors.As(err, &denied) {
		t.Fatalf("Apply: %v; want the rewritten release refused for its author", err)
	}
	t.Log(err)
	secretsUntouched(t, ns, "preview")
	if ok, err := u.Exists(ctx, ns, "preview"); err != nil || !ok {
		t.Errorf("release preview: exists %v, %v; want it left alone", ok, err)
	}
}
