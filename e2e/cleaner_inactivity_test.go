package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
)

// TestCleanerReadsWhatInactivityTrims: with the inactivity detector on, the manager's cache
// holds Deployments trimmed to what that detector reads (no pod template, no status); a
// Cleaner whose conditions read a Deployment's pod template and status still
// sees the whole object and finds its cleanup due.
func TestCleanerReadsWhatInactivityTrims(t *testing.T) {
	live := startLiveActivity(t, false)
	ns := newNamespace(t, "cleaner-trim", nil)
	newEnvironmentOf(t, ns, "web", 1, nil)
	createCleaner(t, &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.CleanerSpec{
			TTL:   "1s",
			Retry: v1alpha1.Retry{Period: "1h"},
			Targets: []v1alpha1.Target{
				{Name: "web", Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", Name: "web"}, Delete: true},
			},
			Conditions: []string{
				`web.spec.template.spec.containers.exists(c, c.resources.requests.cpu == "100m")`,
				`has(web.status) || web.spec.replicas == 1`,
			},
		},
	})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeObserve
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second}
		inactivityDetector(o, live.prom.URL, sourcesWithRange(t, "3s"))
	})
	dumpOnFailure(t, k)

	cl := waitCondition(t, ns, "web", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
	ev := cl.Status.LastEvaluation
	if ev == nil || !ev.Due || len(ev.Results) != 2 {
		t.Fatalf("lastEvaluation = %+v, want due with both conditions true", ev)
	}
	for i, r := range ev.Results {
		if !r.Value {
			t.Errorf("condition %d = %+v, want true (the Cleaner read a trimmed Deployment?)", i, r)
		}
	}
	waitEvents(t, ns, "CleanupDue", 2) // one on the Cleaner, one on the Deployment
}

// TestCleanerSharesExpiryMetadata: with the expiry detector on, Cleaners read the metadata of
// its kinds from the manager's cache (one informer for both), which then keeps every label and
// annotation, not only the expiry detector's: a Cleaner that selects Deployments by a label and
// tests an annotation neither of which is the expiry detector's finds its cleanup due, and the
// expiry detector still reads its own annotations (an unusable ttl is reported). With the
// inactivity detector on as well, Deployments are held as objects in the Cleaners' target cache
// and both read their metadata from there: the same outcome.
func TestCleanerSharesExpiryMetadata(t *testing.T) {
	for _, withInactivity := range []bool{false, true} {
		name := "metadata informer"
		if withInactivity {
			name = "objects held for inactivity"
		}
		t.Run(name, func(t *testing.T) { cleanerSharesExpiryMetadata(t, withInactivity) })
	}
}

func cleanerSharesExpiryMetadata(t *testing.T, withInactivity bool) {
	var promURL string
	if withInactivity {
		promURL = startLiveActivity(t, false).prom.URL
	}
	ns := newNamespace(t, "cleaner-shared", nil)
	d := deploymentOf(ns, "preview", 1, "100m")
	d.Labels = map[string]string{"team": "a"}
	d.Annotations = map[string]string{"ci.example.com/merged": "true", expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "five days"}
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	createCleaner(t, &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "previews"},
		Spec: v1alpha1.CleanerSpec{
			TTL:   "1s",
			Retry: v1alpha1.Retry{Period: "1h"},
			Targets: []v1alpha1.Target{{Name: "previews", Delete: true,
				Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", MatchLabels: map[string]string{"team": "a"}}}},
			Conditions: []string{`previews.items.size() == 1 && previews.items.all(p, p.metadata.annotations["ci.example.com/merged"] == "true")`},
		},
	})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeObserve
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second}
		expiryOptions(o)
		if withInactivity {
			inactivityDetector(o, promURL, sourcesWithRange(t, "3s"))
		}
	})
	dumpOnFailure(t, k)

	cl := waitCondition(t, ns, "previews", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
	if ev := cl.Status.LastEvaluation; ev == nil || !ev.Due || len(ev.Results) != 1 || !ev.Results[0].Value {
		t.Fatalf("lastEvaluation = %+v, want due with its condition true", ev)
	}
	waitEvents(t, ns, expiry.ReasonInvalidExpiry, 1)
}

// TestInactivityReadsTrimmedFields: the inactivity detector's targets are cached with only the
// fields it reads, in the manager's cache or, with Cleaners on, in the Cleaners' target cache
// (one informer for both detectors, trimmed to the union of what they read); a target's pause
// field and template reference (here a Knative Service's spec.running and spec.templateRef,
// next to a spec the trim drops) still decide: the running one, whose timeout comes from its
// template, is alerted about; the paused one is not.
func TestInactivityReadsTrimmedFields(t *testing.T) {
	for _, cleaners := range []bool{false, true} {
		name := "manager's cache"
		if cleaners {
			name = "Cleaners' target cache"
		}
		t.Run(name, func(t *testing.T) { inactivityReadsTrimmedFields(t, cleaners) })
	}
}

func inactivityReadsTrimmedFields(t *testing.T, cleaners bool) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity-trim", nil)
	tpl := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "course",
		Annotations: map[string]string{inactivity.AnnotationTimeout: "3s"}}}
	if err := k8s.Create(context.Background(), tpl); err != nil {
		t.Fatal(err)
	}
	for name, running := range map[string]bool{"running": true, "paused": false} {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"running": running, "templateRef": map[string]any{"name": "course"},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "registry.invalid/app:1"}}}}}}}
		u.SetGroupVersionKind(ksvcGVK)
		u.SetNamespace(ns)
		u.SetName(name)
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeObserve
		inactivityDetector(o, live.prom.URL, sourcesWithRange(t, "3s"))
		o.Inactivity.Kinds = []schema.GroupVersionKind{ksvcGVK}
		o.Inactivity.Settings.Pause = inactivity.Pause{Field: []string{"spec", "running"}, Value: "false"}
		o.Inactivity.TemplateRef = []string{"spec", "templateRef"}
		o.Inactivity.TemplateKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")
		o.Cleaners.Enabled = cleaners
	})
	dumpOnFailure(t, k)

	alert := waitEvents(t, ns, inactivity.ReasonInactive, 1)[0]
	if alert.InvolvedObject.Name != "running" {
		t.Errorf("alert about %s: %s", alert.InvolvedObject.Name, alert.Message)
	}
	for _, e := range kustosEvents(t, ns, inactivity.ReasonInactive) {
		if e.InvolvedObject.Name == "paused" {
			t.Errorf("the paused target was alerted about: %s", e.Message)
		}
	}
}
