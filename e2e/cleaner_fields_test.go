package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// TestCleanerFieldsGrow: the Cleaners' cache keeps of a Deployment only the fields their
// conditions read. A first Cleaner reads spec.replicas, so the Deployment is cached with that
// field; a second Cleaner on it reads spec.template.metadata.labels, which the cached copy does
// not hold: it reads the Deployment from the API server and sees the right value (its condition
// holds, it does not fail on a missing field). The first Cleaner still works: once the
// Deployment is scaled to zero, it finds its cleanup due.
func TestCleanerFieldsGrow(t *testing.T) {
	ns := newNamespace(t, "cleaner-fields", nil)
	newEnvironmentOf(t, ns, "web", 1, nil)
	cleaner := func(name, cond string) *v1alpha1.Cleaner {
		return &v1alpha1.Cleaner{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.CleanerSpec{
				TTL:   "1s",
				Retry: v1alpha1.Retry{Period: "1h"},
				Targets: []v1alpha1.Target{
					{Name: "web", Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", Name: "web"}, Delete: true},
				},
				Conditions: []string{cond},
			},
		}
	}
	createCleaner(t, cleaner("replicas", `web.spec.replicas == 0`))
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeObserve
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second}
	})
	dumpOnFailure(t, k)
	cl := waitCondition(t, ns, "replicas", v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, "ConditionsPending")
	if ev := cl.Status.LastEvaluation; ev == nil || ev.Due || len(ev.Results) != 1 || ev.Results[0].Error != "" {
		t.Fatalf("first Cleaner: lastEvaluation = %+v, want its condition false without an error", ev)
	}

	liveBefore := counterValue(t, metrics.CleanerLiveReads)
	createCleaner(t, cleaner("labels", `web.spec.template.metadata.labels.app == "web"`))
	cl = waitCondition(t, ns, "labels", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
	if ev := cl.Status.LastEvaluation; ev == nil || !ev.Due || len(ev.Results) != 1 || !ev.Results[0].Value {
		t.Fatalf("second Cleaner: lastEvaluation = %+v, want due with its condition true (it read a copy trimmed without the pod template?)", ev)
	}
	if n := counterValue(t, metrics.CleanerLiveReads) - liveBefore; n < 1 {
		t.Errorf("live reads of targets: %v, want at least 1 (the copy cached for the first Cleaner holds no pod template)", n)
	}

	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](0)
	if err := k8s.Update(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
	// Due, it reports the cleanup (an Event on the Cleaner); the Deployment controller's
	// status writes that follow withdraw it again in observer mode, so the Event is what stays.
	eventually(t, "a CleanupDue Event on the first Cleaner", func() bool {
		for _, e := range kustosEvents(t, ns, "CleanupDue") {
			if e.InvolvedObject.Kind == "Cleaner" && e.InvolvedObject.Name == "replicas" {
				return true
			}
		}
		return false
	})
}
