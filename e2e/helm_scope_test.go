package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
)

// reachOut rewrites the latest record of release name in ns as a tenant who may write Secrets in
// ns can (helm's storage is a Secret labelled owner=helm): its manifest gains ConfigMap "victim"
// in namespace other, and a pre-delete hook creates ConfigMap "planted" there. Uninstalling it
// as helm does would delete the one and create the other, with the uninstaller's rights.
func reachOut(t *testing.T, ns, name, other string) {
	t.Helper()
	cfg := helmConfig(t, ns)
	rel, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatal(err)
	}
	rel.Manifest += "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: victim\n  namespace: " + other + "\n"
	rel.Hooks = append(rel.Hooks, &release.Hook{Name: "planted", Kind: "ConfigMap", Path: "templates/planted.yaml",
		Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted\n  namespace: " + other + "\n  annotations:\n    helm.sh/hook: pre-delete\n",
		Events:   []release.HookEvent{release.HookPreDelete}})
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatal(err)
	}
}

// newVictim creates ConfigMap "victim" in ns, which no release of any other namespace may touch.
func newVictim(t *testing.T, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim"}, Data: map[string]string{"keep": "me"}}
	if err := k8s.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// untouched fails t when namespace other lost its victim or gained the planted hook object.
func untouched(t *testing.T, other string) {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: other, Name: "victim"}, &corev1.ConfigMap{})
	if err != nil {
		t.Errorf("ConfigMap %s/victim: %v (a release of another namespace deleted it)", other, err)
	}
	err = k8s.Get(context.Background(), client.ObjectKey{Namespace: other, Name: "planted"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s/planted: %v, want not found (a hook of another namespace's release created it)", other, err)
	}
}

// TestCleanerRefusesReleaseOutsideNamespace: a tenant's Cleaner names two releases of its
// namespace, one of which the tenant rewrote to reach into another namespace. Kustos
// uninstalls the ordinary one, refuses the other (a Warning Event naming the object, the
// Cleaner's ActionsDone=False), touches nothing in the other namespace, and keeps refusing it
// at every look with one Event.
func TestCleanerRefusesReleaseOutsideNamespace(t *testing.T) {
	ns := newNamespace(t, "cleaner-reach", nil)
	other := newNamespace(t, "cleaner-victim", nil)
	newVictim(t, other)
	installRelease(t, ns, "evil")
	reachOut(t, ns, "evil", other)
	installRelease(t, ns, "good")
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reach"}, Spec: v1alpha1.CleanerSpec{
		TTL:  "1s",
		Helm: &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "evil", Delete: true}, {Name: "good", Delete: true}}},
	}})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	})
	dumpOnFailure(t, k)

	u := &helmrelease.Uninstaller{Config: env.Config}
	eventually(t, "release good uninstalled", func() bool {
		ok, err := u.Exists(context.Background(), ns, "good")
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	// evil comes first in the Cleaner: whatever was done to it is done.
	untouched(t, other)
	if ok, err := u.Exists(context.Background(), ns, "evil"); err != nil || !ok {
		t.Errorf("release evil: exists %v, %v; want it left alone", ok, err)
	}
	cl := waitCondition(t, ns, "reach", v1alpha1.StepActionsDone, metav1.ConditionFalse, ephemeral.ReasonReleaseOutsideNamespace)
	if c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepActionsDone); !strings.Contains(c.Message, "ConfigMap "+other+"/victim") {
		t.Errorf("ActionsDone: %s", c.Message)
	}
	ev := waitEvents(t, ns, ephemeral.ReasonReleaseOutsideNamespace, 1)[0]
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Cleaner" ||
		!strings.Contains(ev.Message, "ConfigMap "+other+"/victim") || !strings.Contains(ev.Message, "planted") {
		t.Errorf("event %s on %+v: %s", ev.Type, ev.InvolvedObject, ev.Message)
	}
	// Looked at again every second (NotReadyRecheck): refused each time, reported once, and the
	// Cleaner stays.
	never(t, ns, ephemeral.ReasonReleaseOutsideNamespace, 1, 4*time.Second)
	untouched(t, other)
	if getCleaner(t, ns, "reach") == nil {
		t.Fatal("the Cleaner was deleted although one of its releases was not uninstalled")
	}
}

// TestExpiryRefusesReleaseOutsideNamespace: two releases with the same lifetime, one rewritten by
// its tenant to reach into another namespace. At the deadline Kustos uninstalls the ordinary one;
// the other is refused with one Warning Event naming the object, and nothing in the other
// namespace is touched.
func TestExpiryRefusesReleaseOutsideNamespace(t *testing.T) {
	ns := newNamespace(t, "expiry-reach", nil)
	other := newNamespace(t, "expiry-victim", nil)
	newVictim(t, other)
	values := map[string]any{"ec_owner": "ana@example.com", "ec_ttl": "3s"}
	installReleaseWith(t, ns, "evil", values)
	reachOut(t, ns, "evil", other)
	installReleaseWith(t, ns, "shop", values)
	startExpiryHelmKustos(t)
	waitReleaseGone(t, ns, "shop")
	// Past shop's deadline and the interval after its warning: evil is as due as shop was.
	never(t, ns, expiry.ReasonReleaseOutsideNamespace, 1, expiryInterval+time.Second)
	untouched(t, other)
	if ok, err := (&helmrelease.Uninstaller{Config: env.Config}).Exists(context.Background(), ns, "evil"); err != nil || !ok {
		t.Errorf("release evil: exists %v, %v; want it left alone", ok, err)
	}
	ev := waitEvents(t, ns, expiry.ReasonReleaseOutsideNamespace, 1)[0]
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != expiry.ReleaseKind || ev.InvolvedObject.Name != "evil" ||
		!strings.Contains(ev.Message, "ConfigMap "+other+"/victim") || !strings.Contains(ev.Message, "planted") {
		t.Errorf("event %s on %+v: %s", ev.Type, ev.InvolvedObject, ev.Message)
	}
	if n := len(kustosEvents(t, ns, expiry.ReasonExpiryWarning)); n != 1 {
		t.Errorf("%d ExpiryWarning events, want 1 (shop's; none for the refused release)", n)
	}
	for _, e := range kustosEvents(t, ns, expiry.ReasonExpired) {
		if e.InvolvedObject.Name == "evil" {
			t.Errorf("an Expired event about the refused release: %s", e.Message)
		}
	}
}

// TestCleanerObserverReportsReleaseOutsideNamespace: observer mode reports what Kustos would do,
// so it reports the refusal too (and touches nothing, as always).
func TestCleanerObserverReportsReleaseOutsideNamespace(t *testing.T) {
	ns := newNamespace(t, "cleaner-observe-reach", nil)
	other := newNamespace(t, "cleaner-observe-victim", nil)
	newVictim(t, other)
	installRelease(t, ns, "evil")
	reachOut(t, ns, "evil", other)
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reach"}, Spec: v1alpha1.CleanerSpec{
		TTL:  "1s",
		Helm: &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "evil", Delete: true}}},
	}})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeObserve
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	})
	dumpOnFailure(t, k)

	waitCondition(t, ns, "reach", v1alpha1.StepActionsDone, metav1.ConditionFalse, ephemeral.ReasonReleaseOutsideNamespace)
	ev := waitEvents(t, ns, ephemeral.ReasonReleaseOutsideNamespace, 1)[0]
	if !strings.Contains(ev.Message, "ConfigMap "+other+"/victim") {
		t.Errorf("event: %s", ev.Message)
	}
	for _, e := range kustosEvents(t, ns, ephemeral.ReasonCleanupDue) {
		if strings.Contains(e.Message, "evil") {
			t.Errorf("CleanupDue announces the refused release: %s", e.Message)
		}
	}
	untouched(t, other)
}
