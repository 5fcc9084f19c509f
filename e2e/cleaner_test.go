package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

var (
	cleanerClientOnce sync.Once
	cleanerClient     client.Client
)

// kc is a client that knows Kustos's own kinds.
func kc(t *testing.T) client.Client {
	t.Helper()
	cleanerClientOnce.Do(func() {
		s := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(s)
		_ = v1alpha1.AddToScheme(s)
		c, err := client.New(env.Config, client.Options{Scheme: s})
		if err != nil {
			t.Fatal(err)
		}
		cleanerClient = c
	})
	return cleanerClient
}

func startCleaners(t *testing.T, mode app.Mode) *kustos {
	t.Helper()
	k := startKustos(t, func(o *app.Options) {
		o.Mode = mode
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second}
	})
	dumpOnFailure(t, k)
	return k
}

// dumpOnFailure prints Kustos's log when the test failed.
func dumpOnFailure(t *testing.T, k *kustos) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kustos's log:\n%s", k.logs.String())
		}
	})
}

// exampleCondition is the condition of a Knative preview's Cleaner (a longer form of the one in
// docs/detectors/cleaners.md).
const exampleCondition = `!revisions.items.exists(r,
  r.metadata.annotations["serving.knative.dev/routes"]
    .split(",")
    .exists(route, !route.startsWith("sfj-") && !route.startsWith("preview-"))
  ||
  r.status.conditions
    .filter(c, c.type == "Active")
    .exists(c, c.status == "True" || time - timestamp(c.lastTransitionTime) < duration("360h"))
)`

var (
	ksvcGVK = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
	revGVK  = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Revision"}
)

func createKnative(t *testing.T, gvk schema.GroupVersionKind, ns, name string, labels, annotations map[string]string, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatalf("creating %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	if status != nil {
		u.Object["status"] = status
		if err := k8s.Status().Update(context.Background(), u); err != nil {
			t.Fatalf("writing the status of %s %s/%s: %v", gvk.Kind, ns, name, err)
		}
	}
	return u
}

// inactiveRevision is a preview revision that has not been active since lastActive.
func inactiveRevision(t *testing.T, ns, name, routes string, lastActive time.Time) {
	t.Helper()
	createKnative(t, revGVK, ns, name, map[string]string{"vtex.io/proxy": "p1"},
		map[string]string{"serving.knative.dev/routes": routes},
		map[string]any{"conditions": []any{map[string]any{"type": "Active", "status": "False", "lastTransitionTime": lastActive.UTC().Format(time.RFC3339)}}})
}

func exampleCleaner(ns string) *v1alpha1.Cleaner {
	f := false
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sfj-commit--account"},
		Spec: v1alpha1.CleanerSpec{
			TTL:   "1s",
			Retry: v1alpha1.Retry{Period: "1h", Monotonic: true},
			Targets: []v1alpha1.Target{
				{Name: "nginx", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "service", Name: "sfj-commit--account"},
					Delete: true, IncludeWhenEvaluating: &f},
				{Name: "revisions", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "revision",
					MatchLabels: map[string]string{"vtex.io/proxy": "p1"}}},
			},
			Conditions: []string{exampleCondition},
		},
	}
}

// createCleaner creates cl as the tests' admin, stamped with the admin as its author as Kustos's
// admission webhook would (these tests run no webhook; internal/admission's
// TestCleanerActsAsItsAuthor runs it): the spec is signed as the API server stores it, with the
// defaults a dry run fills in.
func createCleaner(t *testing.T, cl *v1alpha1.Cleaner) {
	t.Helper()
	dry := cl.DeepCopy()
	if err := kc(t).Create(context.Background(), dry, client.DryRunAll); err != nil {
		t.Fatalf("creating Cleaner %s/%s (dry run): %v", cl.Namespace, cl.Name, err)
	}
	digest, err := authorship.SpecDigest(dry.Spec)
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := authorSigner.Sign(cl.Namespace, cl.Name, digest, adminAuthor, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cl.Annotations == nil {
		cl.Annotations = map[string]string{}
	}
	cl.Annotations[authorship.StampAnnotation] = stamp
	if err := kc(t).Create(context.Background(), cl); err != nil {
		t.Fatalf("creating Cleaner %s/%s: %v", cl.Namespace, cl.Name, err)
	}
}

// getCleaner reads a Cleaner; nil when it is gone.
func getCleaner(t *testing.T, ns, name string) *v1alpha1.Cleaner {
	t.Helper()
	cl := &v1alpha1.Cleaner{}
	err := kc(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cl)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// waitCondition waits until the Cleaner's condition typ has status and reason at its current
// generation, as `kubectl wait --for=condition=...` would, and returns the Cleaner.
func waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.Cleaner {
	t.Helper()
	var cl *v1alpha1.Cleaner
	eventually(t, "Cleaner "+ns+"/"+name+" "+typ+"="+string(status)+" "+reason, func() bool {
		cl = getCleaner(t, ns, name)
		if cl == nil {
			t.Fatalf("Cleaner %s/%s is gone", ns, name)
		}
		c := meta.FindStatusCondition(cl.Status.Conditions, typ)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason) && cl.Status.ObservedGeneration == cl.Generation
	})
	return cl
}

func exists(t *testing.T, gvk schema.GroupVersionKind, ns, name string) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.GetDeletionTimestamp() == nil
}

// TestCleanerObserverMode: the example Cleaner over two inactive preview revisions is due; in
// observer mode Kustos says so — one CleanupDue Event on the Service it would delete and one on the
// Cleaner — and deletes nothing.
func TestCleanerObserverMode(t *testing.T) {
	ns := newNamespace(t, "cleaner-observe", nil)
	createKnative(t, ksvcGVK, ns, "sfj-commit--account", nil, nil, nil)
	inactiveRevision(t, ns, "sfj-commit--account-00001", "sfj-commit,preview-commit", time.Now().Add(-400*time.Hour))
	inactiveRevision(t, ns, "sfj-commit--account-00002", "sfj-commit", time.Now().Add(-500*time.Hour))
	createCleaner(t, exampleCleaner(ns))
	k := startCleaners(t, app.ModeObserve)

	cl := waitCondition(t, ns, "sfj-commit--account", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
	defer func() {
		// kustos status: a row for the Cleaner (Ready) and one for the Key of the Service it
		// reported, with the time of that decision.
		rows, err := statusreport.Gather(context.Background(), kc(t), k.opts.StateNamespace, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var cleanerRow, keyRow bool
		for _, r := range rows {
			switch r.Target {
			case "Cleaner.kustos.io/" + ns + "/sfj-commit--account":
				cleanerRow = r.Ready == "True"
			case "Service.serving.knative.dev/" + ns + "/sfj-commit--account":
				// The Key is ephemeral/…; people read the detector as cleaner.
				keyRow = r.Detector == "cleaner" && r.LastAction != nil && r.Pending == ""
			}
		}
		if !cleanerRow || !keyRow {
			t.Errorf("kustos status rows (Cleaner Ready: %v, Service Key decided: %v): %+v", cleanerRow, keyRow, rows)
		}
	}()
	evs := waitEvents(t, ns, "CleanupDue", 2)
	if ready := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", ready)
	}
	if cl.Status.LastEvaluation == nil || !cl.Status.LastEvaluation.Due || len(cl.Status.LastEvaluation.Results) != 1 || !cl.Status.LastEvaluation.Results[0].Value {
		t.Errorf("lastEvaluation = %+v, want due with condition 0 true", cl.Status.LastEvaluation)
	}
	wantResolved := []string{"sfj-commit--account-00001.revisions.serving.knative.dev/v1", "sfj-commit--account-00002.revisions.serving.knative.dev/v1",
		"sfj-commit--account.services.serving.knative.dev/v1"}
	if strings.Join(cl.Status.ResolvedTargets, " ") != strings.Join(wantResolved, " ") {
		t.Errorf("resolvedTargets = %v, want %v", cl.Status.ResolvedTargets, wantResolved)
	}
	var onService, onCleaner int
	for _, e := range evs {
		switch e.InvolvedObject.Kind {
		case "Service":
			onService++
		case "Cleaner":
			onCleaner++
		}
	}
	if onService != 1 || onCleaner != 1 {
		t.Errorf("CleanupDue events: %d on the Service, %d on the Cleaner; want one each: %v", onService, onCleaner, messages(evs))
	}
	never(t, ns, "CleanupDue", 2, 3*time.Second)
	if !exists(t, ksvcGVK, ns, "sfj-commit--account") || getCleaner(t, ns, "sfj-commit--account") == nil {
		t.Fatal("observer mode deleted something")
	}
	// The metrics name the detector cleaner, as people do: the Cleaner's reconciles and its
	// pipeline's health alike (its Keys keep the ephemeral prefix).
	for _, name := range []string{"kustos_reconcile_duration_seconds", "kustos_changes_failing"} {
		if got := detectorLabels(t, name); !got["cleaner"] || got["ephemeral"] {
			t.Errorf("%s has detector labels %v, want cleaner and never ephemeral", name, got)
		}
	}
}

// detectorLabels are the values of the detector label of the metric name in this process.
func detectorLabels(t *testing.T, name string) map[string]bool {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "detector" {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// TestCleanerDirect: in direct mode the due Cleaner deletes the target marked for deletion (not
// the others) and then itself.
func TestCleanerDirect(t *testing.T) {
	ns := newNamespace(t, "cleaner-direct", nil)
	createKnative(t, ksvcGVK, ns, "sfj-commit--account", nil, nil, nil)
	inactiveRevision(t, ns, "sfj-commit--account-00001", "sfj-commit", time.Now().Add(-400*time.Hour))
	createCleaner(t, exampleCleaner(ns))
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second, LeaseGrace: time.Second}
		o.LeaseSweepInterval = time.Second
	})

	eventually(t, "the Service and the Cleaner deleted", func() bool {
		return !exists(t, ksvcGVK, ns, "sfj-commit--account") && getCleaner(t, ns, "sfj-commit--account") == nil
	})
	if !exists(t, revGVK, ns, "sfj-commit--account-00001") {
		t.Error("the revision (delete: false) was deleted")
	}
	// One for the Service, one for the Cleaner itself: it goes through the pipeline like any
	// object it deletes.
	waitEvents(t, ns, "CleanedUp", 2)
	// The deleted Service's Key leaves no Lease behind once the sweep saw it gone.
	eventually(t, "the Service's state Lease swept", func() bool {
		var leases coordinationv1.LeaseList
		if err := k8s.List(context.Background(), &leases, client.InNamespace(k.opts.StateNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases.Items {
			if strings.HasPrefix(l.Annotations["kustos.io/key"], "ephemeral/") {
				return false
			}
		}
		return len(k.logs.records(t, "deleted the state leases of deleted objects")) > 0
	})
}

// TestCleanerNotYetDue: an active revision keeps the Cleaner waiting; the monotonic search
// cannot find a time within the horizon (activity does not end by itself), so the next
// evaluation is a period away; when the revision goes inactive (a watched change) the Cleaner
// is evaluated at once and acts.
func TestCleanerNotYetDue(t *testing.T) {
	ns := newNamespace(t, "cleaner-pending", nil)
	createKnative(t, ksvcGVK, ns, "sfj-commit--account", nil, nil, nil)
	rev := createKnative(t, revGVK, ns, "sfj-commit--account-00001", map[string]string{"vtex.io/proxy": "p1"},
		map[string]string{"serving.knative.dev/routes": "sfj-commit"},
		map[string]any{"conditions": []any{map[string]any{"type": "Active", "status": "True", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}})
	createCleaner(t, exampleCleaner(ns))
	start := time.Now()
	startCleaners(t, app.ModeDirect)

	cl := waitCondition(t, ns, "sfj-commit--account", v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, "ConditionsPending")
	if next := cl.Status.NextScheduledEvaluation; next == nil || next.Time.Before(start.Add(59*time.Minute)) {
		t.Fatalf("nextScheduledEvaluation = %v, want about an hour from now", next)
	}
	if ready := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True (nothing is wrong, the cleanup is just not due)", ready)
	}

	// The revision went inactive 400h ago: due at once, through the watch, not in an hour.
	rev.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Active", "status": "False",
		"lastTransitionTime": time.Now().Add(-400 * time.Hour).UTC().Format(time.RFC3339)}}}
	if err := k8s.Status().Update(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Service and the Cleaner deleted after the revision went inactive", func() bool {
		return !exists(t, ksvcGVK, ns, "sfj-commit--account") && getCleaner(t, ns, "sfj-commit--account") == nil
	})
}

// TestCleanerMonotonicSchedule: a monotonic condition that turns true in a few seconds is
// evaluated exactly at that second (status.nextScheduledEvaluation), and the target is deleted
// then, not before.
func TestCleanerMonotonicSchedule(t *testing.T) {
	ns := newNamespace(t, "cleaner-monotonic", nil)
	if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(8 * time.Second).Truncate(time.Second)
	createCleaner(t, &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "timer"},
		Spec: v1alpha1.CleanerSpec{
			TTL: "1s", Retry: v1alpha1.Retry{Period: "1h", Monotonic: true},
			Targets:    []v1alpha1.Target{{Name: "preview", Reference: v1alpha1.Reference{Version: "v1", Kind: "configmaps", Name: "preview"}, Delete: true}},
			Conditions: []string{`preview != null && time >= timestamp("` + at.UTC().Format(time.RFC3339) + `")`},
		},
	})
	startCleaners(t, app.ModeDirect)

	cl := waitCondition(t, ns, "timer", v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, "ConditionsPending")
	if next := cl.Status.NextScheduledEvaluation; next == nil || !next.Time.Equal(at) {
		t.Fatalf("nextScheduledEvaluation = %v, want exactly %v", next, at)
	}
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	eventually(t, "the ConfigMap deleted", func() bool { return !exists(t, cmGVK, ns, "preview") })
	if gone := time.Now(); gone.Before(at) {
		t.Fatalf("deleted at %v, before the condition held (%v)", gone, at)
	}
	// The condition reads the object it deletes (preview != null is false now): the cleanup,
	// recorded as due, still ends with the Cleaner deleted.
	eventually(t, "the Cleaner deleted", func() bool { return getCleaner(t, ns, "timer") == nil })
}

// TestCleanerSelectorCreation: a new object matching a selector target is seen at once (the
// selector kind is indexed, not only the objects resolved before).
func TestCleanerSelectorCreation(t *testing.T) {
	ns := newNamespace(t, "cleaner-selector", nil)
	mk := func(name string) {
		if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"run": "r1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("step-1")
	createCleaner(t, &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"},
		Spec: v1alpha1.CleanerSpec{
			TTL: "1s", Retry: v1alpha1.Retry{Period: "1h"},
			Targets: []v1alpha1.Target{{Name: "steps", Delete: true,
				Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", MatchLabels: map[string]string{"run": "r1"}}}},
			Conditions: []string{`steps.items.size() >= 2`},
		},
	})
	startCleaners(t, app.ModeDirect)
	waitCondition(t, ns, "run", v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, "ConditionsPending")
	mk("step-2")
	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	eventually(t, "both steps and the Cleaner deleted", func() bool {
		return !exists(t, cmGVK, ns, "step-1") && !exists(t, cmGVK, ns, "step-2") && getCleaner(t, ns, "run") == nil
	})
}

// TestCleanerRefusals: what cannot work is a clear Ready=False with a reason and a Warning
// Event, and the other Cleaners go on.
func TestCleanerRefusals(t *testing.T) {
	ns := newNamespace(t, "cleaner-refusals", nil)
	named := func(name, group, kind, namespace string) v1alpha1.Target {
		return v1alpha1.Target{Name: name, Reference: v1alpha1.Reference{APIGroup: group, Version: "v1", Kind: kind, Name: "x", Namespace: namespace}}
	}
	cases := []struct {
		name, reason, message string
		spec                  v1alpha1.CleanerSpec
	}{
		{"bad-cel", "InvalidSpec", "spec.conditions[1]", v1alpha1.CleanerSpec{TTL: "1s", Conditions: []string{"true", "time >"}}},
		{"other-namespace", "Forbidden", "spec.targets[0].reference.namespace", v1alpha1.CleanerSpec{TTL: "1s", Targets: []v1alpha1.Target{named("cm", "", "ConfigMap", "kube-system")}}},
		{"cluster-scoped", "Forbidden", "Namespace is cluster-scoped", v1alpha1.CleanerSpec{TTL: "1s", Targets: []v1alpha1.Target{named("ns", "", "namespaces", "")}}},
		{"unknown-kind", "KindNotFound", `no kind "widgets"`, v1alpha1.CleanerSpec{TTL: "1s", Targets: []v1alpha1.Target{named("w", "example.com", "widgets", "")}}},
	}
	for _, tc := range cases {
		createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}, Spec: tc.spec})
	}
	// One good Cleaner among them still acts.
	if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fine"}}); err != nil {
		t.Fatal(err)
	}
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fine"}, Spec: v1alpha1.CleanerSpec{
		TTL: "1s", Targets: []v1alpha1.Target{{Name: "fine", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "fine"}}}}})
	startCleaners(t, app.ModeDirect)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := waitCondition(t, ns, tc.name, v1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)
			if c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, tc.message) {
				t.Errorf("Ready message %q does not contain %q", c.Message, tc.message)
			}
		})
	}
	eventually(t, "the good Cleaner acted", func() bool { return getCleaner(t, ns, "fine") == nil })
	warnings := 0
	for _, reason := range []string{"InvalidSpec", "Forbidden", "KindNotFound"} {
		warnings += len(kustosEvents(t, ns, reason))
	}
	if warnings != len(cases) {
		t.Errorf("%d Warning events for %d refused Cleaners, want one each", warnings, len(cases))
	}
}

// startCleanersPR starts Kustos with Cleaners in PR mode against g, auto-merging, and shows its
// log when the test fails.
func startCleanersPR(t *testing.T, g *gitops) {
	t.Helper()
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	}))
	dumpOnFailure(t, k)
}

// TestCleanerPRMode: in PR mode a target that the GitOps repository defines is removed by one
// pull request (its file deleted and taken out of the kustomization); a target that no manifest
// defines is deleted directly; the Cleaner waits until the GitOps tool has removed the object
// after the merge, then goes.
func TestCleanerPRMode(t *testing.T) {
	ns := newNamespace(t, "cleaner-pr", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the preview", "preview.yaml", "# the preview of commit abc\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: preview\ndata:\n  commit: abc\n")
	for _, name := range []string{"preview", "scratch"} {
		if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL: "1s",
		Targets: []v1alpha1.Target{
			{Name: "preview", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "preview"}},
			{Name: "scratch", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "scratch"}},
		},
	}})
	startCleanersPR(t, g)

	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	eventually(t, "scratch (not in Git) deleted directly", func() bool { return !exists(t, cmGVK, ns, "scratch") })
	p := g.waitPR(t, "the removal PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if _, ok := g.s.FileAt(ghOwner, ghRepo, "main", dir+"preview.yaml"); ok {
		t.Error("preview.yaml is still in the base branch after the merge")
	}
	if k, _ := g.s.FileAt(ghOwner, ghRepo, "main", dir+"kustomization.yaml"); strings.Contains(k, "preview.yaml") {
		t.Errorf("the kustomization still lists preview.yaml:\n%s", k)
	}
	if !strings.Contains(p.Head, "ephemeral") {
		t.Errorf("PR head %q does not name the ephemeral Key", p.Head)
	}
	// Merged, not yet synced: the object is still there and the Cleaner waits for it.
	if getCleaner(t, ns, "preview") == nil || !exists(t, cmGVK, ns, "preview") {
		t.Fatal("the Cleaner or the preview went before the GitOps tool removed the preview")
	}
	// The GitOps tool syncs the merge.
	if err := k8s.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Cleaner deleted", func() bool { return getCleaner(t, ns, "preview") == nil })
	g.onePR(t, 2*time.Second)
}

// TestCleanerDefinedInGitGoesByPR: a Cleaner whose own manifest lives in the GitOps repository
// is not deleted behind the GitOps tool's back once its cleanup is done (Flux or Argo CD would
// create it again): a pull request removes its manifest, and the Cleaner goes when the tool
// syncs. Its CloudEvent-less cleanup is not redone while it waits.
func TestCleanerDefinedInGitGoesByPR(t *testing.T) {
	ns := newNamespace(t, "cleaner-git", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the Cleaner", "cleaner.yaml", "# removes the scratch ConfigMap\napiVersion: kustos.io/v1alpha1\nkind: Cleaner\n"+
		"metadata:\n  name: tidy\nspec:\n  ttl: 1s\n  targets:\n    - name: scratch\n      delete: true\n      reference: {version: v1, kind: ConfigMap, name: scratch}\n")
	if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch"}}); err != nil {
		t.Fatal(err)
	}
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidy"}, Spec: v1alpha1.CleanerSpec{
		TTL: "1s",
		Targets: []v1alpha1.Target{
			{Name: "scratch", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "scratch"}},
		},
	}})
	startCleanersPR(t, g)

	cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	eventually(t, "scratch (not in Git) deleted directly", func() bool { return !exists(t, cmGVK, ns, "scratch") })
	p := g.waitPR(t, "the PR removing the Cleaner's manifest merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if _, ok := g.s.FileAt(ghOwner, ghRepo, "main", dir+"cleaner.yaml"); ok {
		t.Error("cleaner.yaml is still in the base branch after the merge")
	}
	if !strings.Contains(p.Head, "ephemeral") || !strings.Contains(p.Title, "tidy") {
		t.Errorf("PR %q from %q does not name the Cleaner's ephemeral Key", p.Title, p.Head)
	}
	// Merged, not yet synced: the Cleaner is still there, as the GitOps tool has not removed it.
	time.Sleep(2 * time.Second)
	if getCleaner(t, ns, "tidy") == nil {
		t.Fatal("the Cleaner was deleted directly although its manifest is in Git")
	}
	// The GitOps tool syncs the merge.
	if err := kc(t).Delete(context.Background(), &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidy"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Cleaner gone", func() bool { return getCleaner(t, ns, "tidy") == nil })
	g.onePR(t, 2*time.Second)
}

// TestCleanerDeclinedPRBlocks: in PR mode, a Cleaner whose pull request a person closed
// unmerged says so — ActionsDone=False with reason CleanupBlocked naming the target kept — instead
// of the report from before its TTL (NothingDue, "the TTL ends at" a time long past), which it
// kept for good: a declined pull request is as final as a refusal in direct mode.
func TestCleanerDeclinedPRBlocks(t *testing.T) {
	ns := newNamespace(t, "cleaner-declined", nil)
	g := newGitOps(t, ns)
	g.addManifest("add the preview", "preview.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: preview\n")
	if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}}); err != nil {
		t.Fatal(err)
	}
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL:     "1s",
		Targets: []v1alpha1.Target{{Name: "preview", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "preview"}}},
	}})
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	}))
	dumpOnFailure(t, k)

	p := g.waitPR(t, "the removal PR opened", func(p githubtest.PullRequest) bool { return p.State == "open" })
	g.s.ClosePR(ghOwner, ghRepo, p.Number)
	cl := waitCondition(t, ns, "preview", v1alpha1.StepActionsDone, metav1.ConditionFalse, ephemeral.ReasonCleanupBlocked)
	if c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepActionsDone); !strings.Contains(c.Message, "ConfigMap/"+ns+"/preview") {
		t.Errorf("ActionsDone message %q does not name the ConfigMap kept", c.Message)
	}
	if !exists(t, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ns, "preview") {
		t.Error("the ConfigMap whose removal was declined is gone")
	}
}
