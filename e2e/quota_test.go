package e2e

import (
	"context"
	"encoding/json"
	"math/big"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/state"
)

const reasonRecommended = quota.ReasonQuotaResizeRecommended

// at85 makes a namespace whose quota "compute" (requests.cpu 10) is 85% used by a Pending pod.
func at85(t *testing.T, prefix string, annotations map[string]string) string {
	t.Helper()
	ns := newNamespace(t, prefix, annotations)
	newQuota(t, ns, "compute", rl("requests.cpu", "10"))
	newPod(t, ns, "p1", rl("cpu", "8500m"))
	waitUsed(t, ns, "compute", "requests.cpu", "8500m")
	return ns
}

func TestThresholdFromRealQuotaStatus(t *testing.T) {
	k := startKustos(t, nil)
	ns := newNamespace(t, t.Name(), nil)
	newQuota(t, ns, "compute", rl("requests.cpu", "10", "requests.memory", "20Gi"))
	newPod(t, ns, "p1", rl("cpu", "8500m", "memory", "4Gi"))
	waitUsed(t, ns, "compute", "requests.cpu", "8500m")

	evs := waitEvents(t, ns, reasonRecommended, 1)
	e := evs[0]
	if want := "requests.cpu should be increased from 10 to 12 (used 8500m of 10 = 85% ≥ 80%)"; e.Message != want {
		t.Errorf("event message\n got: %s\nwant: %s", e.Message, want)
	}
	if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "ResourceQuota" || e.InvolvedObject.Name != "compute" {
		t.Errorf("event is %s on %s %s, want Warning on ResourceQuota compute", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name)
	}
	// Memory is at 20%: nothing for it.
	never(t, ns, reasonRecommended, 1, 2*time.Second)

	recs := k.logs.records(t, "recommendation")
	if len(recs) != 1 {
		t.Fatalf("want 1 recommendation log line, got %d: %v", len(recs), recs)
	}
	for field, want := range map[string]string{
		"namespace": ns, "quota": "compute", "resource": "requests.cpu", "current": "10",
		"used": "8500m", "recommended": "12", "trigger": "threshold", "detector": "quota",
	} {
		if got := recs[0][field]; got != want {
			t.Errorf("log field %s = %v, want %q", field, got, want)
		}
	}

	var lease coordinationv1.Lease
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: k.opts.StateNamespace, Name: "state-" + ns + "-compute"}, &lease); err != nil {
		t.Fatalf("state lease: %v", err)
	}
	if lease.Labels[state.LabelManagedBy] != "kustos" {
		t.Errorf("lease labels %v lack %s=kustos", lease.Labels, state.LabelManagedBy)
	}
	lm, err := time.Parse(time.RFC3339Nano, lease.Annotations["resizer.io/last-modified"])
	if err != nil || time.Since(lm) > time.Minute {
		t.Errorf("lease last-modified %q is not a recent time: %v", lease.Annotations["resizer.io/last-modified"], err)
	}
	if p := lease.Annotations[state.AnnotationPending]; p != "" {
		t.Errorf("pending decision left in lease: %s", p)
	}
}

func TestDeficitFromRealWorkloads(t *testing.T) {
	startKustos(t, nil)
	cpu2 := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "registry.invalid/app:1",
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")},
	}}}
	labels := map[string]string{"app": "x"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: cpu2}

	cases := []struct {
		name string
		// object fails to fit: the quota (requests.cpu 3) holds one of its 2-cpu pods.
		object func(ns string) client.Object
		// want is the recommended event message.
		want *regexp.Regexp
	}{{
		name: "Deployment",
		object: func(ns string) client.Object {
			return &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template,
				},
			}
		},
		// 1 pod runs (2 of 3), 4 are missing: 2 + 4×2 = 10.
		want: regexp.MustCompile(`^requests\.cpu should be increased from 3 to 10 \(ReplicaSet web-[a-z0-9]+ cannot create 4 more pods requesting 2 each; used 2 of 3\)$`),
	}, {
		name: "Job",
		object: func(ns string) client.Object {
			tpl := *template.DeepCopy()
			tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
				Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](3), Completions: ptr.To[int32](3), Template: tpl},
			}
		},
		// 1 active, 2 missing: 2 + 2×2 = 6.
		want: regexp.MustCompile(`^requests\.cpu should be increased from 3 to 6 \(Job batch cannot create 2 more pods requesting 2 each; used 2 of 3\)$`),
	}, {
		name: "ParallelStatefulSet",
		object: func(ns string) client.Object {
			return &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template,
					ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
				},
			}
		},
		want: regexp.MustCompile(`^requests\.cpu should be increased from 3 to 6 \(StatefulSet db cannot create 2 more pods requesting 2 each; used 2 of 3\)$`),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, tc.name, nil)
			newQuota(t, ns, "compute", rl("requests.cpu", "3"))
			if err := k8s.Create(context.Background(), tc.object(ns)); err != nil {
				t.Fatal(err)
			}
			evs := waitEvents(t, ns, reasonRecommended, 1)
			if !tc.want.MatchString(evs[0].Message) {
				t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, tc.want)
			}
			// The workload keeps failing (observer mode changes nothing), but the cooldown holds.
			never(t, ns, reasonRecommended, 1, 3*time.Second)
		})
	}
}

func TestMissingSpecIsReportedNotRaised(t *testing.T) {
	startKustos(t, nil)
	ns := newNamespace(t, t.Name(), nil)
	newQuota(t, ns, "compute", rl("limits.cpu", "4"))
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nolimits"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "n"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "n"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/app:1"}}},
			},
		},
	}
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, ns, quota.ReasonQuotaSpecMissing, 1)
	if want := regexp.MustCompile(`^ReplicaSet nolimits-[a-z0-9]+ cannot create pods: quota compute requires it to specify limits\.cpu`); !want.MatchString(evs[0].Message) {
		t.Errorf("event message %q does not match %s", evs[0].Message, want)
	}
	never(t, ns, reasonRecommended, 0, 2*time.Second)
}

func TestAnnotations(t *testing.T) {
	startKustos(t, nil)

	t.Run("opt-out", func(t *testing.T) {
		optedOut := at85(t, "opted-out", map[string]string{"resizer.io/enabled": "false"})
		control := at85(t, "control", nil)
		waitEvents(t, control, reasonRecommended, 1)
		never(t, optedOut, reasonRecommended, 0, 2*time.Second)
	})

	t.Run("per-resource threshold beats the default", func(t *testing.T) {
		ns := newNamespace(t, "per-resource", map[string]string{"resizer.io/cpu-threshold": "90%"})
		newQuota(t, ns, "compute", rl("requests.cpu", "10", "requests.memory", "10Gi"))
		newPod(t, ns, "p1", rl("cpu", "8500m", "memory", "8704Mi")) // 85% of both
		waitUsed(t, ns, "compute", "requests.memory", "8704Mi")
		evs := waitEvents(t, ns, reasonRecommended, 1)
		if want := "requests.memory should be increased from 10Gi to 12Gi (used 8704Mi of 10Gi = 85% ≥ 80%)"; evs[0].Message != want {
			t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, want)
		}
	})

	t.Run("namespace threshold and increment", func(t *testing.T) {
		ns := newNamespace(t, "namespace-wide", map[string]string{"resizer.io/threshold": "50", "resizer.io/increment": "0.5"})
		newQuota(t, ns, "compute", rl("requests.cpu", "10"))
		newPod(t, ns, "p1", rl("cpu", "6"))
		evs := waitEvents(t, ns, reasonRecommended, 1)
		if want := "requests.cpu should be increased from 10 to 15 (used 6 of 10 = 60% ≥ 50%)"; evs[0].Message != want {
			t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, want)
		}
	})

	t.Run("invalid annotation falls back and is reported", func(t *testing.T) {
		ns := at85(t, "invalid", map[string]string{"resizer.io/cpu-threshold": "abc", "resizer.io/increment": "50%"})
		evs := waitEvents(t, ns, reasonRecommended, 1)
		// The bad threshold falls back to 80%; the good increment still applies.
		if want := "requests.cpu should be increased from 10 to 15 (used 8500m of 10 = 85% ≥ 80%)"; evs[0].Message != want {
			t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, want)
		}
		var warned []corev1.Event
		eventually(t, "InvalidAnnotation event on the namespace", func() bool {
			warned = nil
			for _, e := range kustosEvents(t, metav1.NamespaceDefault, quota.ReasonInvalidAnnotation) {
				if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == ns {
					warned = append(warned, e)
				}
			}
			return len(warned) > 0
		})
		if len(warned) != 1 {
			t.Fatalf("want 1 InvalidAnnotation event, got %d: %v", len(warned), messages(warned))
		}
		if want := regexp.MustCompile(`resizer\.io/cpu-threshold="abc".*using 80%`); !want.MatchString(warned[0].Message) {
			t.Errorf("InvalidAnnotation message %q does not match %s", warned[0].Message, want)
		}
	})
}

func TestCooldown(t *testing.T) {
	const cooldown = 5 * time.Second
	startKustos(t, func(o *app.Options) { o.DefaultCooldown = cooldown })
	ns := at85(t, t.Name(), nil)
	first := waitEvents(t, ns, reasonRecommended, 1)[0]

	newPod(t, ns, "p2", rl("cpu", "500m"))
	waitUsed(t, ns, "compute", "requests.cpu", "9")
	never(t, ns, reasonRecommended, 1, cooldown/2)

	// When the cooldown ends Kustos looks again on its own (no new status update needed).
	evs := waitEvents(t, ns, reasonRecommended, 2)
	second := evs[0]
	if second.Name == first.Name {
		second = evs[1]
	}
	if want := "requests.cpu should be increased from 10 to 12 (used 9 of 10 = 90% ≥ 80%)"; second.Message != want {
		t.Errorf("second event message\n got: %s\nwant: %s", second.Message, want)
	}
	if gap := second.LastTimestamp.Sub(first.LastTimestamp.Time); gap < cooldown-time.Second {
		t.Errorf("second recommendation came %s after the first, inside the %s cooldown", gap, cooldown)
	}
}

func TestStaleEventsIgnoredAfterLastModified(t *testing.T) {
	const cooldown = 3 * time.Second
	startKustos(t, func(o *app.Options) { o.DefaultCooldown = cooldown })
	ns := newNamespace(t, t.Name(), nil)
	newQuota(t, ns, "compute", rl("requests.cpu", "10"))
	newPod(t, ns, "p1", rl("cpu", "7")) // 70%: below the threshold
	waitUsed(t, ns, "compute", "requests.cpu", "7")

	// A FailedCreate event as the API server words it, from an owner Kustos cannot look up, so
	// that only the event's timestamp decides.
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "legacy.failed"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "legacy", APIVersion: "apps/v1"},
		Reason:         "FailedCreate",
		Type:           corev1.EventTypeWarning,
		Message:        `Error creating: pods "legacy-1" is forbidden: exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=7, limited: requests.cpu=10`,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: corev1.EventSource{Component: "e2e"},
	}
	if err := k8s.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, ns, reasonRecommended, 1)
	if want := "requests.cpu should be increased from 10 to 12 (a workload cannot create 1 more pod requesting 4 each; used 7 of 10)"; evs[0].Message != want {
		t.Errorf("event message\n got: %s\nwant: %s", evs[0].Message, want)
	}

	// After the cooldown the old event is still there, but it is older than last-modified.
	never(t, ns, reasonRecommended, 1, cooldown+2*time.Second)

	// The same failure happening again (aggregation bumps lastTimestamp) is new evidence.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ev), ev); err != nil {
		t.Fatal(err)
	}
	ev.LastTimestamp = metav1.NewTime(time.Now().Add(time.Second))
	ev.Count = 2
	if err := k8s.Update(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, ns, reasonRecommended, 2)
}

func TestRestartKeepsState(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	first := startKustos(t, func(o *app.Options) { o.StateNamespace = stateNS; o.LeaderElection = true })
	ns := at85(t, t.Name(), nil)
	waitEvents(t, ns, reasonRecommended, 1)
	first.stop()

	startKustos(t, func(o *app.Options) { o.StateNamespace = stateNS; o.LeaderElection = true })
	// A new namespace proves the new instance is deciding...
	control := at85(t, "control", nil)
	waitEvents(t, control, reasonRecommended, 1)
	// ...and the first quota stays inside its cooldown, remembered in the Lease.
	never(t, ns, reasonRecommended, 1, 2*time.Second)
}

func TestLeaseSweepAfterNamespaceDeleted(t *testing.T) {
	k := startKustos(t, func(o *app.Options) { o.LeaseSweepInterval = time.Second })
	ns := at85(t, t.Name(), nil)
	waitEvents(t, ns, reasonRecommended, 1)
	key := client.ObjectKey{Namespace: k.opts.StateNamespace, Name: "state-" + ns + "-compute"}
	var lease coordinationv1.Lease
	if err := k8s.Get(context.Background(), key, &lease); err != nil {
		t.Fatalf("state lease: %v", err)
	}
	// A Lease of a namespace that still exists survives sweeps.
	time.Sleep(2 * time.Second)
	if err := k8s.Get(context.Background(), key, &lease); err != nil {
		t.Fatalf("state lease of a live namespace was removed: %v", err)
	}

	if err := k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace gone and its state lease swept", func() bool {
		err := k8s.Get(context.Background(), key, &lease)
		return apierrors.IsNotFound(err)
	})
}

// Two replicas without leader election (a split brain, or a misconfiguration) still report a
// decision once: the state Lease's resourceVersion lets only one of them record it.
func TestTwoReplicasReportOnce(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	startKustos(t, func(o *app.Options) { o.StateNamespace = stateNS; o.Instance = "replica-a" })
	startKustos(t, func(o *app.Options) { o.StateNamespace = stateNS; o.Instance = "replica-b" })
	var namespaces []string
	for i := range 5 {
		namespaces = append(namespaces, at85(t, "race-"+string(rune('a'+i)), nil))
	}
	for _, ns := range namespaces {
		waitEvents(t, ns, reasonRecommended, 1)
	}
	for _, ns := range namespaces {
		never(t, ns, reasonRecommended, 1, 500*time.Millisecond)
	}
}

// A crash after the decision was recorded in the Lease but before its Event was written: the
// next Kustos finds the pending decision, reports it once and clears it.
func TestPendingDecisionIsReplayedAfterCrash(t *testing.T) {
	stateNS := newNamespace(t, "kustos-state", nil)
	ns := newNamespace(t, t.Name(), nil)
	newQuota(t, ns, "compute", rl("requests.cpu", "10"))

	decided := time.Now().Add(-time.Minute).UTC()
	d := quota.Decide(quota.Snapshot{
		Now: decided, Namespace: ns, Quota: "compute",
		Hard: rl("requests.cpu", "10"), Used: rl("requests.cpu", "9"),
		Policy: quota.Policy{Enabled: true, Namespace: quota.Settings{Threshold: mustRat(t, quota.ParseThreshold, "80"), Increment: mustRat(t, quota.ParseIncrement, "20%")}, Cooldown: time.Hour},
	})
	pending, err := json.Marshal(d.Change())
	if err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: stateNS, Name: "state-" + ns + "-compute",
		Labels: map[string]string{state.LabelManagedBy: state.ManagedByValue, state.LabelDetector: "quota", state.LabelTargetNamespace: ns},
		Annotations: map[string]string{
			state.AnnotationKey: "quota/" + ns + "/compute", state.AnnotationTargetName: "compute",
			state.AnnotationLastModified: decided.Format(time.RFC3339Nano),
			state.AnnotationPending:      string(pending),
		},
	}}
	if err := k8s.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	startKustos(t, func(o *app.Options) { o.StateNamespace = stateNS })
	evs := waitEvents(t, ns, reasonRecommended, 1)
	if want := "requests.cpu should be increased from 10 to 12 (used 9 of 10 = 90% ≥ 80%)"; evs[0].Message != want {
		t.Errorf("replayed event message\n got: %s\nwant: %s", evs[0].Message, want)
	}
	eventually(t, "pending decision cleared", func() bool {
		var got coordinationv1.Lease
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(lease), &got) == nil &&
			got.Annotations[state.AnnotationPending] == "" &&
			got.Annotations[state.AnnotationLastModified] == decided.Format(time.RFC3339Nano)
	})
	never(t, ns, reasonRecommended, 1, time.Second)
}

func mustRat(t *testing.T, parse func(string) (*big.Rat, error), s string) *big.Rat {
	t.Helper()
	r, err := parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
