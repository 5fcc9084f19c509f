package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

const submitImage = "ghcr.io/kustos-dev/kustos:v1.2.3"

// examEnv creates an exam environment in a fresh namespace: a Deployment whose pod template
// mounts claims, with annotations on the Deployment and on its namespace.
func examEnv(t *testing.T, claims []string, own, nsAnn map[string]string) (string, lifecycle.Change) {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t, "exam")
	if len(nsAnn) > 0 {
		var n corev1.Namespace
		if err := k8s.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil {
			t.Fatal(err)
		}
		n.Annotations = nsAnn
		if err := k8s.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	uid := int64(1000)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "desktop", Image: "desktop:1"}},
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &uid}}
	for _, c := range claims {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	labels := map[string]string{"app": "desktop"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "desktop", Annotations: own},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "desktop"}
	return ns, lifecycle.Change{Key: lifecycle.KeyFor("inactivity", target), Detector: "inactivity", Reason: "ProbeFailed", Target: target,
		Edit: lifecycle.Edit{Op: lifecycle.EditScaleToZero}}
}

// TestSubmission runs the submission step on the real API server. There is no kubelet or
// scheduler here and no `kustos submit` yet in this tree: the test asserts the Job Kustos
// creates and writes the Job's Complete or Failed condition in the Job controller's place.
func TestSubmission(t *testing.T) {
	ctx := context.Background()
	leases := &state.Store{Reader: k8s, Writer: k8s, Namespace: newNamespace(t, "kustos"), Identity: "a"}
	t0 := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	reasons := map[string]string{"inactivity": "ProbeFailed", "expiry": "ExpiryDue"}

	type gated struct {
		g   *Actuator
		n   *next
		now *time.Time
	}
	newGate := func(s *Submission) *gated {
		now := t0
		s.Client, s.Reasons, s.Image, s.Timeout = k8s, reasons, submitImage, 20*time.Minute
		s.Now = func() time.Time { return now }
		n := &next{}
		return &gated{n: n, now: &now, g: &Actuator{Steps: []Step{s}, Next: n, Now: func() time.Time { return now }, Log: logr.Discard()}}
	}
	look := func(t *testing.T, g *gated, c lifecycle.Change, crash bool) error {
		rec, err := leases.Get(ctx, c.Key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.g.Apply(ctx, c, t0, lifecycle.ProposeOptions{Progress: &leaseProgress{store: leases, rec: rec, crash: crash}})
		return err
	}
	jobs := func(t *testing.T, ns string) []batchv1.Job {
		var list batchv1.JobList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	// finish writes the Job's result in the Job controller's place.
	finish := func(t *testing.T, j *batchv1.Job, cond batchv1.JobConditionType) {
		t.Helper()
		now := metav1.Now()
		j.Status.StartTime = &now
		switch cond {
		case batchv1.JobComplete:
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		case batchv1.JobFailed:
			j.Status.Failed = 3
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now}}
		}
		if err := k8s.Status().Update(ctx, j); err != nil {
			t.Fatalf("writing the Job's status: %v", err)
		}
	}
	allowed := egress.MustParseHostNames("uploads.example.edu")
	dest := "https://uploads.example.edu/exams/2026"

	t.Run("the Job's spec: Kustos's image, the template's claims read-only, no token, the target's namespace", func(t *testing.T) {
		ns, c := examEnv(t, []string{"home", "exam-data"}, nil, map[string]string{AnnotationSubmitTo: dest})
		g := newGate(&Submission{AllowedHosts: allowed})
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatalf("first look: %v", err)
		}
		js := jobs(t, ns)
		if len(js) != 1 {
			t.Fatalf("%d Jobs", len(js))
		}
		j := js[0]
		p := j.Spec.Template.Spec
		ct := p.Containers[0]
		if j.Name != ObjectName("submission", c.Key, t0, 1) || ct.Image != submitImage ||
			strings.Join(ct.Args, " ") != "submit --from /data --to "+dest+" --name "+ns+"-desktop-20261127T110000Z" {
			t.Errorf("Job %s: image %s, args %q", j.Name, ct.Image, ct.Args)
		}
		if p.ServiceAccountName != "default" || p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken ||
			p.RestartPolicy != corev1.RestartPolicyNever || p.SecurityContext.RunAsNonRoot == nil || !*p.SecurityContext.RunAsNonRoot ||
			*p.SecurityContext.RunAsUser != 1000 || *ct.SecurityContext.AllowPrivilegeEscalation || !*ct.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("pod spec: %+v", p)
		}
		if *j.Spec.ActiveDeadlineSeconds != 1200 || j.Spec.BackoffLimit == nil || j.Spec.TTLSecondsAfterFinished == nil {
			t.Errorf("job spec: deadline %v, backoff %v, ttl %v", j.Spec.ActiveDeadlineSeconds, j.Spec.BackoffLimit, j.Spec.TTLSecondsAfterFinished)
		}
		want := map[string]string{"exam-data": "/data/exam-data", "home": "/data/home"}
		if len(p.Volumes) != 2 || len(ct.VolumeMounts) != 2 {
			t.Fatalf("volumes %+v, mounts %+v", p.Volumes, ct.VolumeMounts)
		}
		for i, v := range p.Volumes {
			m := ct.VolumeMounts[i]
			if v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly || !m.ReadOnly || want[v.PersistentVolumeClaim.ClaimName] != m.MountPath {
				t.Errorf("volume %+v mounted %+v", v, m)
			}
		}
	})

	t.Run("Complete: the termination goes, once", func(t *testing.T) {
		ns, c := examEnv(t, []string{"exam-data"}, map[string]string{AnnotationSubmitTo: dest}, nil)
		g := newGate(&Submission{AllowedHosts: allowed})
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatalf("first look: %v", err)
		}
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) || g.n.applied != 0 {
			t.Fatalf("while the Job runs: %v, applied %d", err, g.n.applied)
		}
		j := jobs(t, ns)[0]
		if m := j.Spec.Template.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/data" {
			t.Errorf("one claim: mounts %+v", m)
		}
		finish(t, &j, batchv1.JobComplete)
		if err := look(t, g, c, false); err != nil || g.n.applied != 1 {
			t.Fatalf("after Complete: %v, applied %d", err, g.n.applied)
		}
		if len(jobs(t, ns)) != 1 {
			t.Errorf("%d Jobs", len(jobs(t, ns)))
		}
	})

	t.Run("Failed: held, then retried with a new Job; a crash after creating the Job creates no second", func(t *testing.T) {
		ns, c := examEnv(t, []string{"exam-data"}, nil, nil)
		g := newGate(&Submission{Endpoint: dest})
		if err := look(t, g, c, true); !errors.Is(err, errCrash) {
			t.Fatalf("crash: %v", err)
		}
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatalf("after the crash: %v", err)
		}
		js := jobs(t, ns)
		if len(js) != 1 {
			t.Fatalf("%d Jobs after a crash", len(js))
		}
		finish(t, &js[0], batchv1.JobFailed)
		err := look(t, g, c, false)
		var q *lifecycle.QueuedError
		if !errors.As(err, &q) || !q.Failed || q.Reason != "submission" || !strings.Contains(q.Message, "BackoffLimitExceeded") || g.n.applied != 0 {
			t.Fatalf("after Failed: %v, applied %d", err, g.n.applied)
		}
		*g.now = g.now.Add(DefaultRetryAfter)
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatalf("retry: %v", err)
		}
		js = jobs(t, ns)
		if len(js) != 2 || js[0].Name == js[1].Name {
			t.Fatalf("retry: %d Jobs", len(js))
		}
		for i := range js {
			if js[i].Name == ObjectName("submission", c.Key, t0, 2) {
				finish(t, &js[i], batchv1.JobComplete)
			}
		}
		if err := look(t, g, c, false); err != nil || g.n.applied != 1 {
			t.Fatalf("after the retry completed: %v, applied %d", err, g.n.applied)
		}
	})

	t.Run("a tenant's refused destination is treated as absent: a Warning, then the namespace's, the endpoint or nothing", func(t *testing.T) {
		const endpoint = "https://operator.example.org/in"
		for name, tc := range map[string]struct {
			to       string
			allowed  egress.HostNames
			endpoint string
			want     string // the Warning's text
			wantTo   string // where the Job submits ("": no step)
		}{
			"http":                    {"http://uploads.example.edu/x?token=s3cret", allowed, endpoint, "want an https URL", endpoint},
			"credentials":             {"https://u:p@uploads.example.edu/x", allowed, endpoint, "must not carry credentials", endpoint},
			"a host not allowed":      {"https://evil.example.com/x?token=s3cret", allowed, endpoint, "not in --submission-allowed-hosts", endpoint},
			"no allowed hosts at all": {dest, egress.HostNames{}, endpoint, "annotations are refused", endpoint},
			"no endpoint: no step":    {"https://evil.example.com/x", allowed, "", "nothing is submitted", ""},
		} {
			t.Run(name, func(t *testing.T) {
				ns, c := examEnv(t, []string{"d"}, map[string]string{AnnotationSubmitTo: tc.to}, nil)
				rep := &events{}
				g := newGate(&Submission{AllowedHosts: tc.allowed, Endpoint: tc.endpoint, Reporter: rep})
				err := look(t, g, c, false)
				if len(rep.got) != 1 || rep.got[0].reason != ReasonDestinationRefused || !strings.Contains(rep.got[0].message, tc.want) ||
					strings.Contains(rep.got[0].message, "u:p") || strings.Contains(rep.got[0].message, "s3cret") {
					t.Errorf("Events %+v; want one Warning saying %q", rep.got, tc.want)
				}
				js := jobs(t, ns)
				if tc.wantTo == "" {
					if err != nil || len(js) != 0 || g.n.applied != 1 {
						t.Fatalf("Apply: %v, %d Jobs, applied %d; want no step", err, len(js), g.n.applied)
					}
					return
				}
				if !errors.Is(err, lifecycle.ErrQueued) || len(js) != 1 || js[0].Spec.Template.Spec.Containers[0].Args[4] != tc.wantTo {
					t.Fatalf("Apply: %v, Jobs %d; want one to %s", err, len(js), tc.wantTo)
				}
			})
		}
	})

	t.Run("no claim to submit: no step, the change goes at once", func(t *testing.T) {
		ns, c := examEnv(t, nil, nil, nil)
		g := newGate(&Submission{Endpoint: dest})
		if err := look(t, g, c, false); err != nil || g.n.applied != 1 || len(jobs(t, ns)) != 0 {
			t.Fatalf("Apply: %v, applied %d, %d Jobs", err, g.n.applied, len(jobs(t, ns)))
		}
	})

	t.Run("a tenant deletes each Job: after --submission-max-attempts the change goes with a Warning", func(t *testing.T) {
		ns, c := examEnv(t, []string{"d"}, nil, nil)
		rep := &events{}
		g := newGate(&Submission{Endpoint: dest, Attempts: 2})
		g.g.Reporter = rep
		var q *lifecycle.QueuedError
		for attempt := 1; attempt <= 2; attempt++ {
			if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
			for _, j := range jobs(t, ns) {
				if err := k8s.Delete(ctx, &j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
					t.Fatal(err)
				}
			}
			err := look(t, g, c, false)
			if !errors.As(err, &q) || !q.Failed || g.n.applied != 0 {
				t.Fatalf("attempt %d deleted: %v, applied %d", attempt, err, g.n.applied)
			}
			*g.now = q.Until
		}
		if !strings.Contains(q.Message, "attempt 2 of 2") || !strings.Contains(q.Message, "last attempt") {
			t.Errorf("the last failure says %q", q.Message)
		}
		if err := look(t, g, c, false); err != nil || g.n.applied != 1 {
			t.Fatalf("after the last attempt: %v, applied %d", err, g.n.applied)
		}
		if len(rep.got) != 1 || rep.got[0].reason != ReasonSubmittedNothing || !strings.HasPrefix(rep.got[0].message, "submitted nothing: 2 attempts") {
			t.Errorf("Events %+v", rep.got)
		}
		if err := look(t, g, c, false); err != nil || g.n.applied != 2 || len(rep.got) != 1 {
			t.Fatalf("a look again: %v, applied %d, %d Events", err, g.n.applied, len(rep.got))
		}
	})

	t.Run("a Job Kustos did not create holds the name: the attempt fails, the next has a random name", func(t *testing.T) {
		ns, c := examEnv(t, []string{"d"}, nil, nil)
		g := newGate(&Submission{Endpoint: dest})
		// The tenant's Job: Kustos's labels and name, its own image, exits 0.
		fake := SubmissionJob(JobInput{Namespace: ns, Name: ObjectName("submission", c.Key, t0, 1), Key: c.Key, Image: "busybox:1", To: dest,
			Submission: "x", Claims: []string{"d"}, Timeout: time.Minute})
		fake.Spec.Template.Spec.Containers[0].Command = []string{"true"}
		if err := k8s.Create(ctx, fake); err != nil {
			t.Fatal(err)
		}
		finish(t, fake, batchv1.JobComplete)
		err := look(t, g, c, false)
		var q *lifecycle.QueuedError
		if !errors.As(err, &q) || !q.Failed || !strings.Contains(q.Message, "a Job Kustos did not create holds the name") || g.n.applied != 0 {
			t.Fatalf("with the tenant's Job: %v, applied %d", err, g.n.applied)
		}
		*g.now = q.Until
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatalf("the next attempt: %v", err)
		}
		var mine *batchv1.Job
		for i, j := range jobs(t, ns) {
			if j.Name != fake.Name {
				mine = &jobs(t, ns)[i]
			}
		}
		if mine == nil || !strings.HasPrefix(mine.Name, ObjectName("submission", c.Key, t0, 2)+"-") || mine.Spec.Template.Spec.Containers[0].Image != submitImage {
			t.Fatalf("the next attempt's Job: %+v", mine)
		}
		finish(t, mine, batchv1.JobComplete)
		if err := look(t, g, c, false); err != nil || g.n.applied != 1 {
			t.Fatalf("after Kustos's own Job completed: %v, applied %d", err, g.n.applied)
		}
	})

	t.Run("a Job replaced while it runs by one Kustos did not create fails the attempt", func(t *testing.T) {
		ns, c := examEnv(t, []string{"d"}, nil, nil)
		g := newGate(&Submission{Endpoint: dest})
		if err := look(t, g, c, false); !errors.Is(err, lifecycle.ErrQueued) {
			t.Fatal(err)
		}
		j := jobs(t, ns)[0]
		if err := k8s.Delete(ctx, &j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		fake := SubmissionJob(JobInput{Namespace: ns, Name: j.Name, Key: c.Key, Image: submitImage, To: "https://evil.example.com/",
			Submission: "x", Claims: []string{"d"}, Timeout: time.Minute})
		if err := k8s.Create(ctx, fake); err != nil {
			t.Fatal(err)
		}
		finish(t, fake, batchv1.JobComplete)
		err := look(t, g, c, false)
		var q *lifecycle.QueuedError
		if !errors.As(err, &q) || !q.Failed || !strings.Contains(q.Message, "its arguments differ") || g.n.applied != 0 {
			t.Fatalf("%v, applied %d", err, g.n.applied)
		}
	})

	t.Run("not an exam's termination, or nothing names where: not held", func(t *testing.T) {
		_, c := examEnv(t, []string{"d"}, nil, nil)
		s := &Submission{Client: k8s, Reasons: reasons}
		if ok, err := s.Applies(ctx, c); ok || err != nil {
			t.Errorf("no destination: %v, %v", ok, err)
		}
		s.Endpoint = dest
		idle := c
		idle.Reason = "InactivityDue"
		if ok, err := s.Applies(ctx, idle); ok || err != nil {
			t.Errorf("an idle pause: %v, %v", ok, err)
		}
		if ok, err := s.Applies(ctx, c); !ok || err != nil {
			t.Errorf("an exam's termination with --submission-endpoint: %v, %v", ok, err)
		}
	})
}

// TestAllowedHosts: --submission-allowed-hosts is matched by egress's name rules (a leading
// dot for every name below).
func TestAllowedHosts(t *testing.T) {
	allowed := egress.MustParseHostNames("uploads.example.edu", ".labs.example.edu")
	for _, tc := range []struct {
		to   string
		want bool
	}{{"https://uploads.example.edu/x", true}, {"https://UPLOADS.example.edu./x", true}, {"https://a.labs.example.edu/x", true},
		{"https://labs.example.edu/x", false}, {"https://evil-uploads.example.edu/x", false}, {"https://uploads.example.edu.evil.com/x", false}} {
		t.Run(tc.to, func(t *testing.T) {
			if err := CheckDestination(tc.to, AnnotationSubmitTo+" on Namespace/a", allowed); (err == nil) != tc.want {
				t.Errorf("CheckDestination(%q) = %v", tc.to, err)
			}
		})
	}
	if _, err := egress.ParseHostNames([]string{"*.labs.example.edu"}); err == nil || !strings.Contains(err.Error(), "leading dot") {
		t.Errorf("a wildcard: %v", err)
	}
}

// TestClaimsOf: the claims an environment's pod template names — persistentVolumeClaim volumes,
// KubeVirt dataVolumes, a StatefulSet's claim templates for each replica — and nothing else.
func TestClaimsOf(t *testing.T) {
	vol := func(kind, key, name string) any { return map[string]any{"name": "v", kind: map[string]any{key: name}} }
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"a Deployment's claims, sorted, not its emptyDir", map[string]any{"kind": "Deployment", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"volumes": []any{vol("persistentVolumeClaim", "claimName", "home"), vol("emptyDir", "medium", ""), vol("persistentVolumeClaim", "claimName", "data")}}}}}, "data,home"},
		{"a KubeVirt VM's dataVolume", map[string]any{"kind": "VirtualMachine", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"volumes": []any{vol("dataVolume", "name", "exam-disk"), vol("containerDisk", "image", "x")}}}}}, "exam-disk"},
		{"a StatefulSet's claim templates per replica", map[string]any{"kind": "StatefulSet", "metadata": map[string]any{"name": "db"}, "spec": map[string]any{
			"replicas": int64(2), "volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}}}, "data-db-0,data-db-1"},
		{"a paused StatefulSet keeps its first replica's", map[string]any{"kind": "StatefulSet", "metadata": map[string]any{"name": "db"}, "spec": map[string]any{
			"replicas": int64(0), "volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}}}, "data-db-0"},
		{"no pod template", map[string]any{"kind": "ConfigMap"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := ClaimsOf(&unstructured.Unstructured{Object: tc.obj})
			if err != nil || strings.Join(got, ",") != tc.want {
				t.Errorf("ClaimsOf = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestSubmissionOfANamespace: a Namespace removed at its expiry submits every claim in it, each
// at /data/<claim>, from a Job in that namespace.
func TestSubmissionOfANamespace(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "exam-ns")
	for _, name := range []string{"home", "scratch"} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if err := k8s.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	target := lifecycle.Target{Version: "v1", Kind: "Namespace", Name: ns}
	c := lifecycle.Change{Key: lifecycle.KeyFor("expiry", target), Detector: "expiry", Reason: "ExpiryDue", Target: target, Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
	s := &Submission{Client: k8s, Reasons: map[string]string{"expiry": "ExpiryDue"}, Endpoint: "https://uploads.example.edu/in", Image: submitImage}
	if ok, err := s.Applies(ctx, c); !ok || err != nil {
		t.Fatalf("Applies: %v, %v", ok, err)
	}
	if err := s.Start(ctx, c, "kustos-submission-test-1"); err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "kustos-submission-test-1"}, &j); err != nil {
		t.Fatal(err)
	}
	var mounts []string
	for _, m := range j.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	args := j.Spec.Template.Spec.Containers[0].Args
	if strings.Join(mounts, ",") != "/data/home,/data/scratch" || len(args) != 7 || args[5] != "--name" || !strings.HasPrefix(args[6], ns+"-20") {
		t.Errorf("mounts %v, args %q", mounts, args)
	}
}

// events records the Events a Reporter is asked to write, one per id.
type events struct {
	ids map[string]bool
	got []event
}

type event struct{ reason, message string }

func (e *events) Notify(_ context.Context, _ corev1.ObjectReference, eventType, reason, message, id string, _ time.Time) error {
	if e.ids == nil {
		e.ids = map[string]bool{}
	}
	if e.ids[id] || eventType != corev1.EventTypeWarning {
		return nil
	}
	e.ids[id] = true
	e.got = append(e.got, event{reason, message})
	return nil
}
