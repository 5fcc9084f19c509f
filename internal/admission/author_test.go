package admission_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/admission"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// authorWebhookConfig registers the author stamper as the chart does.
func authorWebhookConfig() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kustos-cleaner-authors"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "authors.cleaners.kustos.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "kustos-system", Name: "kustos-webhook", Path: ptr.To(admission.AuthorPath),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"kustos.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cleaners"},
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
}

// TestCleanerActsAsItsAuthor runs Kustos in direct mode with its webhooks behind the real
// kube-apiserver, and has tenants (impersonated users with namespaced RBAC) write Cleaners:
//   - nobody can name another author: what a request writes into kustos.io/author is replaced
//     by the webhook's stamp on create, update and patch, and a status update keeps it;
//   - alice may delete ConfigMaps but not Secrets: her Cleaner over a Secret and a ConfigMap
//     deletes neither and reports MissingPermission naming the Secret;
//   - bob may delete both: the same Cleaner of his deletes both;
//   - a condition over a Secret sees its metadata, never its data;
//   - a helm release is uninstalled only for an author who may delete its storage Secrets and
//     its objects;
//   - a spec changed while the webhook did not run (its configuration deleted) no longer acts
//     as its stamped author.
func TestCleanerActsAsItsAuthor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := startControlPlane(ctx, t, envtest.WebhookInstallOptions{
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhookConfig()},
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{authorWebhookConfig()},
	})
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, rbacv1.AddToScheme, admissionregistrationv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "team-a"
	for _, n := range []string{"kustos-system", ns} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	// A tenant may write Cleaners and delete ConfigMaps in team-a; bob may delete Secrets too.
	rules := map[string][]rbacv1.PolicyRule{
		"cleaner-author": {
			{APIGroups: []string{"kustos.io"}, Resources: []string{"cleaners"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"kustos.io"}, Resources: []string{"cleaners/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "delete"}},
		},
		"secret-deleter": {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"delete"}}},
	}
	for name, r := range rules {
		if err := admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: r}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(role, user string) {
		if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role + "-" + user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}); err != nil {
			t.Fatal(err)
		}
	}
	bind("cleaner-author", "alice")
	bind("cleaner-author", "bob")
	bind("secret-deleter", "bob")
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"tenants"}}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := as("alice"), as("bob")

	keyFile := filepath.Join(t.TempDir(), "author-key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("0123456789abcdef", 4)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startKustos(ctx, t, env, func(o *app.Options) {
		o.Mode, o.Instance, o.MaxConcurrentReconciles = app.ModeDirect, "author-test", 2
		o.InProcessReplica = true // another test of this package runs a manager too
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second, AuthorKeyFile: keyFile}
		// Deletion is an opt-in (--allow): the kinds these Cleaners delete, and helm releases.
		var err error
		if o.Allow, err = allow.Parse("cleaner:delete:secrets,cleaner:delete:configmaps,cleaner:delete:kustos.io/cleaners,cleaner:delete:helm.sh/releases", app.PolicyDetectors); err != nil {
			t.Fatal(err)
		}
	})

	stampOf := func(name string) map[string]any {
		t.Helper()
		var cl v1alpha1.Cleaner
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cl); err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(cl.Annotations[authorship.StampAnnotation]), &st); err != nil {
			t.Fatalf("Cleaner %s: annotation %q: %v", name, cl.Annotations[authorship.StampAnnotation], err)
		}
		return st
	}
	userOf := func(st map[string]any) string {
		a, _ := st["author"].(map[string]any)
		u, _ := a["user"].(string)
		return u
	}
	cleaner := func(name string, targets ...v1alpha1.Target) *v1alpha1.Cleaner {
		return &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.CleanerSpec{TTL: "1s", Targets: targets}}
	}
	target := func(name, kind, object string) v1alpha1.Target {
		return v1alpha1.Target{Name: name, Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: kind, Name: object}}
	}
	objects := func(suffix string) (secret, configMap client.Object) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db" + suffix}, StringData: map[string]string{"password": "hunter2"}}
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache" + suffix}}
		for _, o := range []client.Object{s, c} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		return s, c
	}
	exists := func(o client.Object) bool {
		t.Helper()
		err := admin.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	forged := `{"v":1,"author":{"user":"system:admin","groups":["system:masters"]},"spec":"x","at":1,"mac":"x"}`

	t.Run("nobody names another author", func(t *testing.T) {
		cl := cleaner("forged", target("cm", "ConfigMap", "nothing"))
		cl.Spec.TTL = "1h" // never due: only the stamp is looked at
		cl.Annotations = map[string]string{authorship.StampAnnotation: forged}
		if err := alice.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		first := stampOf("forged")
		if userOf(first) != "alice" {
			t.Fatalf("after create with a forged annotation the stamp names %q, want alice: %v", userOf(first), first)
		}
		key := client.ObjectKey{Namespace: ns, Name: "forged"}
		// An update of the annotation alone: the stamp stays alice's, as it was.
		if err := retryUpdate(ctx, alice, key, func(c *v1alpha1.Cleaner) { c.Annotations[authorship.StampAnnotation] = forged }); err != nil {
			t.Fatal(err)
		}
		if got := stampOf("forged"); got["mac"] != first["mac"] {
			t.Errorf("an update of the annotation changed the stamp: %v", got)
		}
		// A merge patch of the annotation with a spec change: a new stamp, alice's again.
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{authorship.StampAnnotation: forged}},
			"spec": map[string]any{"ttl": "2h"}}
		body, _ := json.Marshal(patch)
		if err := alice.Patch(ctx, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"}}, client.RawPatch(types.MergePatchType, body)); err != nil {
			t.Fatal(err)
		}
		if got := stampOf("forged"); userOf(got) != "alice" || got["mac"] == first["mac"] {
			t.Errorf("after a patch changing the spec and the annotation the stamp is %v, want a new one of alice", got)
		}
		// A patch removing the annotation: put back.
		if err := alice.Patch(ctx, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"kustos.io/author":null}}}`))); err != nil {
			t.Fatal(err)
		}
		if got := stampOf("forged"); userOf(got) != "alice" {
			t.Errorf("a patch removing the stamp left %v", got)
		}
		// The status subresource: metadata in the request is ignored by the API server.
		before := stampOf("forged")
		var cur v1alpha1.Cleaner
		if err := alice.Get(ctx, key, &cur); err != nil {
			t.Fatal(err)
		}
		cur.Annotations[authorship.StampAnnotation] = forged
		if err := alice.Status().Update(ctx, &cur); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		if got := stampOf("forged"); got["mac"] != before["mac"] {
			t.Errorf("a status update changed the stamp to %v", got)
		}
	})

	t.Run("the author may not delete the Secret: nothing is deleted", func(t *testing.T) {
		secret, cm := objects("-a")
		if err := alice.Create(ctx, cleaner("alice", target("db", "Secret", "db-a"), target("cache", "ConfigMap", "cache-a"))); err != nil {
			t.Fatal(err)
		}
		c := waitFor(ctx, t, admin, ns, "alice", v1alpha1.StepActionsDone, metav1.ConditionFalse, "MissingPermission")
		if !strings.Contains(c.Message, `"alice"`) || !strings.Contains(c.Message, `delete secrets "db-a" in team-a`) {
			t.Errorf("message %q does not name alice and the Secret", c.Message)
		}
		time.Sleep(2 * time.Second) // a few more looks
		if !exists(secret) || !exists(cm) {
			t.Errorf("Secret there: %v, ConfigMap there: %v; want both kept (all or nothing)", exists(secret), exists(cm))
		}
		var evs corev1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, e := range evs.Items {
			warned = warned || (e.Reason == "MissingPermission" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "alice")
		}
		if !warned {
			t.Error("no MissingPermission Warning Event on the Cleaner")
		}
	})

	t.Run("the author may delete both: both go", func(t *testing.T) {
		secret, cm := objects("-b")
		if err := bob.Create(ctx, cleaner("bob", target("db", "Secret", "db-b"), target("cache", "ConfigMap", "cache-b"))); err != nil {
			t.Fatal(err)
		}
		eventually(t, "bob's Secret and ConfigMap deleted", func() bool { return !exists(secret) && !exists(cm) })
	})

	t.Run("a condition over a Secret sees its metadata only", func(t *testing.T) {
		secret, _ := objects("-d")
		cl := cleaner("secret-metadata", target("db", "Secret", "db-d"))
		f := false
		cl.Spec.Targets = append(cl.Spec.Targets, v1alpha1.Target{Name: "cache", IncludeWhenEvaluating: &f,
			Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "cache-d"}})
		// Kustos never caches Secret data: the condition holds only when the Secret it reads
		// has its name but no data.
		cl.Spec.Conditions = []string{`db != null && db.metadata.name == "db-d" && !has(db.data) && !has(db.stringData)`}
		if err := bob.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the Secret deleted on a condition over its metadata", func() bool { return !exists(secret) })
	})

	t.Run("a helm release goes only when its author may delete its storage and objects", func(t *testing.T) {
		for _, rel := range []string{"web-a", "web-b"} {
			installRelease(t, env, ns, rel)
		}
		releaseSecret := func(rel string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + rel + ".v1"}}
		}
		withRelease := func(name, rel string) *v1alpha1.Cleaner {
			cl := cleaner(name)
			cl.Spec.Helm = &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: rel, Delete: true}}}
			return cl
		}
		if err := alice.Create(ctx, withRelease("alice-helm", "web-a")); err != nil {
			t.Fatal(err)
		}
		if err := bob.Create(ctx, withRelease("bob-helm", "web-b")); err != nil {
			t.Fatal(err)
		}
		c := waitFor(ctx, t, admin, ns, "alice-helm", v1alpha1.StepActionsDone, metav1.ConditionFalse, "MissingPermission")
		if !strings.Contains(c.Message, `delete secrets "sh.helm.release.v1.web-a.v1" in team-a`) {
			t.Errorf("message %q does not name the release's storage Secret", c.Message)
		}
		eventually(t, "bob's release uninstalled", func() bool { return !exists(releaseSecret("web-b")) })
		if !exists(releaseSecret("web-a")) || !exists(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-a-data"}}) {
			t.Error("alice's release was uninstalled")
		}
	})

	t.Run("a spec changed without the webhook acts as nobody", func(t *testing.T) {
		secret, _ := objects("-c")
		cl := cleaner("bypass", target("cache", "ConfigMap", "cache-c"))
		cl.Spec.TTL = "1h"
		if err := bob.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, authorWebhookConfig()); err != nil {
			t.Fatal(err)
		}
		// The API server notices the deletion after a moment: a dry run shows when.
		eventually(t, "the API server stops calling the author webhook", func() bool {
			probe := cleaner("probe", target("cache", "ConfigMap", "cache-c"))
			return admin.Create(ctx, probe, client.DryRunAll) == nil && probe.Annotations[authorship.StampAnnotation] == ""
		})
		if err := retryUpdate(ctx, alice, client.ObjectKey{Namespace: ns, Name: "bypass"}, func(c *v1alpha1.Cleaner) {
			c.Spec.TTL = "1s"
			c.Spec.Targets = []v1alpha1.Target{target("db", "Secret", "db-c")}
		}); err != nil {
			t.Fatal(err)
		}
		if got := userOf(stampOf("bypass")); got != "bob" {
			t.Fatalf("without the webhook the stamp names %q, want bob's kept", got)
		}
		c := waitFor(ctx, t, admin, ns, "bypass", v1alpha1.StepActionsDone, metav1.ConditionFalse, "MissingPermission")
		if !strings.Contains(c.Message, "cannot be verified") || !strings.Contains(c.Message, "spec changed") {
			t.Errorf("message %q does not say that the spec changed since its author was stamped", c.Message)
		}
		if !exists(secret) {
			t.Error("the Secret was deleted on bob's stamp for alice's spec")
		}
	})
}

// installRelease installs a chart of one ConfigMap as release name in ns with the helm library,
// as `helm install` would.
func installRelease(t *testing.T, env *testenv.Env, ns, name string) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &env.Kubeconfig, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.Namespace, in.ReleaseName, in.Timeout = ns, name, time.Minute
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: "0.1.0"},
		Templates: []*chart.File{
			{Name: "templates/data.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-data\ndata:\n  a: b\n")},
		},
	}
	if _, err := in.RunWithContext(context.Background(), c, nil); err != nil {
		t.Fatalf("installing release %s/%s: %v", ns, name, err)
	}
}

// retryUpdate reads, mutates and updates a Cleaner until no conflict (Kustos writes its status).
func retryUpdate(ctx context.Context, c client.Client, key client.ObjectKey, mutate func(*v1alpha1.Cleaner)) error {
	for {
		var cur v1alpha1.Cleaner
		if err := c.Get(ctx, key, &cur); err != nil {
			return err
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		mutate(&cur)
		if err := c.Update(ctx, &cur); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// waitFor waits until the Cleaner's condition typ has status and reason at its generation.
func waitFor(ctx context.Context, t *testing.T, c client.Client, ns, name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, name+" "+typ+"="+string(status)+" "+reason, func() bool {
		var cl v1alpha1.Cleaner
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cl); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(cl.Status.Conditions, typ)
		if cond == nil || cond.Status != status || cond.Reason != reason || cl.Status.ObservedGeneration != cl.Generation {
			return false
		}
		got = *cond
		return true
	})
	return got
}
