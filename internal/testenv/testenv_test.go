package testenv_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kustos-dev/kustos/internal/testenv"
)

const waitTimeout = 60 * time.Second

func TestStartFailsWithoutBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := testenv.Start(t.Context(), testenv.Options{BinDir: dir, ControllerManager: true})
	if err == nil {
		t.Fatal("Start succeeded without binaries")
	}
	for _, want := range []string{dir + "/kube-apiserver", dir + "/kube-controller-manager", dir + "/etcd", "make testbin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestAPIServerOnly checks the API server alone, and that it enforces ResourceQuota admission.
// Without kube-controller-manager nobody computes quota status, so the test sets it itself.
func TestAPIServerOnly(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd + kube-apiserver started in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		start := time.Now()
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
		t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	})
	cs := kubernetes.NewForConfigOrDie(env.Config)

	// The kubeconfig file works on its own.
	fileCfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetes.NewForConfigOrDie(fileCfg).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server version via %s: %s", env.Kubeconfig, v.GitVersion)

	ns := createQuotaNamespace(t, cs, "no-kcm", false)
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{
		Hard: q.Spec.Hard,
		Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("800m"), corev1.ResourcePods: resource.MustParse("2")},
	}
	if _, err := cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       podSpec(corev1.RestartPolicyAlways),
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: ") {
		t.Fatalf("pod creation over quota: got %v, want forbidden: exceeded quota", err)
	}
	t.Logf("pod creation over quota: %v", err)
}

// TestControllerManager proves the controller behaviour Kustos depends on: quota status is
// computed, workload controllers report pods rejected by quota as FailedCreate warning events, and
// namespaces are really deleted.
func TestControllerManager(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd + kube-apiserver + kube-controller-manager started in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		start := time.Now()
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
		t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	})
	cs := kubernetes.NewForConfigOrDie(env.Config)

	// Each workload gets its own namespace and quota (requests.cpu=1): with 400m per pod, two
	// pods are admitted and the third is rejected.
	t.Run("Deployment", func(t *testing.T) {
		ns := createQuotaNamespace(t, cs, "deploy", true)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(3)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: podTemplate("web", corev1.RestartPolicyAlways),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := waitForQuotaEvent(t, cs, ns, "ReplicaSet")
		rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, ev.InvolvedObject.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("at the event: ReplicaSet %s spec.replicas=%d status.replicas=%d", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas)
		waitFor(t, "ReplicaSet status.replicas=2", func() (bool, error) {
			rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, rs.Name, metav1.GetOptions{})
			return err == nil && rs.Status.Replicas == 2, err
		})
		logQuota(t, cs, ns)
		waitFor(t, "Deployment condition ReplicaFailure", func() (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentReplicaFailure {
					t.Logf("Deployment condition %s=%s reason=%s message: %s", c.Type, c.Status, c.Reason, c.Message)
					return true, nil
				}
			}
			return false, nil
		})

		// Namespace deletion completes (namespace controller and garbage collector work), with
		// a Deployment, ReplicaSet, pods and events inside.
		start := time.Now()
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "namespace deletion", func() (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
		t.Logf("namespace %s deleted in %v", ns, time.Since(start).Round(time.Millisecond))
	})

	t.Run("Job", func(t *testing.T) {
		ns := createQuotaNamespace(t, cs, "job", true)
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "batch"},
			Spec: batchv1.JobSpec{
				Parallelism: ptr(int32(3)),
				Template:    podTemplate("batch", corev1.RestartPolicyNever),
			},
		}
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForQuotaEvent(t, cs, ns, "Job")
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("at the event: Job %s spec.parallelism=%d status.active=%d", j.Name, *j.Spec.Parallelism, j.Status.Active)
		waitFor(t, "Job status.active=2", func() (bool, error) {
			j, err := cs.BatchV1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{})
			return err == nil && j.Status.Active == 2, err
		})
		logQuota(t, cs, ns)
	})

	t.Run("StatefulSet", func(t *testing.T) {
		ns := createQuotaNamespace(t, cs, "sts", true)
		s := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:            ptr(int32(3)),
				ServiceName:         "db",
				PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template:            podTemplate("db", corev1.RestartPolicyAlways),
			},
		}
		if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForQuotaEvent(t, cs, ns, "StatefulSet")
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("at the event: StatefulSet %s spec.replicas=%d status.replicas=%d", s.Name, *s.Spec.Replicas, s.Status.Replicas)
		logQuota(t, cs, ns)
	})

	// There are no kubelets, but the DaemonSet controller schedules pods itself onto Node
	// objects (it sets spec.nodeName), so three bare Nodes give it three pods to create.
	t.Run("DaemonSet", func(t *testing.T) {
		for i := range 3 {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
			if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ns := createQuotaNamespace(t, cs, "ds", true)
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: podTemplate("agent", corev1.RestartPolicyAlways),
			},
		}
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForQuotaEvent(t, cs, ns, "DaemonSet")
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("at the event: DaemonSet %s status.desiredNumberScheduled=%d currentNumberScheduled=%d",
			ds.Name, ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled)
		logQuota(t, cs, ns)
	})

	// The query Kustos uses finds the events of all workload kinds.
	t.Run("FieldSelector", func(t *testing.T) {
		list, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "reason=FailedCreate,type=Warning",
		})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, ev := range list.Items {
			kinds[ev.InvolvedObject.Kind] = true
			t.Logf("%s %s/%s count=%d: %s", ev.Namespace, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Count, ev.Message)
		}
		// The Deployment's namespace has been deleted, with its events.
		for _, kind := range []string{"Job", "StatefulSet", "DaemonSet"} {
			if !kinds[kind] {
				t.Errorf("no FailedCreate event for a %s in %v", kind, kinds)
			}
		}
	})
}

// createQuotaNamespace creates a namespace with a quota requests.cpu=1, pods=10 and, if
// waitStatus, waits until the quota controller has computed the quota's status.
func createQuotaNamespace(t *testing.T, cs kubernetes.Interface, prefix string, waitStatus bool) string {
	t.Helper()
	ctx := t.Context()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("1"),
			corev1.ResourcePods:        resource.MustParse("10"),
		}},
	}
	if _, err := cs.CoreV1().ResourceQuotas(ns.Name).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitStatus {
		return ns.Name
	}
	start := time.Now()
	waitFor(t, "quota status", func() (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns.Name).Get(ctx, q.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, hasUsed := q.Status.Used[corev1.ResourceRequestsCPU]
		return len(q.Status.Hard) == 2 && hasUsed, nil
	})
	t.Logf("quota status of %s computed in %v", ns.Name, time.Since(start).Round(time.Millisecond))
	return ns.Name
}

// waitForQuotaEvent waits for a FailedCreate warning event about an object of kind whose message
// reports exceeded quota, and logs it.
func waitForQuotaEvent(t *testing.T, cs kubernetes.Interface, ns, kind string) corev1.Event {
	t.Helper()
	start := time.Now()
	var found corev1.Event
	waitFor(t, "FailedCreate event for a "+kind, func() (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=" + kind + ",reason=FailedCreate,type=Warning",
		})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if strings.Contains(ev.Message, "exceeded quota: ") {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("after %v: event %s %s/%s source=%q reportingController=%q count=%d message:\n%s",
		time.Since(start).Round(time.Millisecond), found.Reason, found.InvolvedObject.Kind, found.InvolvedObject.Name,
		found.Source.Component, found.ReportingController, found.Count, found.Message)
	return found
}

func logQuota(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(t.Context(), "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("quota status: hard=%s used=%s", resources(q.Status.Hard), resources(q.Status.Used))
}

func resources(l corev1.ResourceList) string {
	var s []string
	for name, q := range l {
		s = append(s, fmt.Sprintf("%s=%s", name, q.String()))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func podTemplate(app string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       podSpec(restart),
	}
}

// podSpec requests 400m CPU. The image is never pulled: there is no kubelet.
func podSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("400m"),
			}},
		}},
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ptr[T any](v T) *T { return &v }

// TestRestartAPIServer checks that the API server comes back from a restart as the same server
// to everyone who knew it: a clientset and the kubeconfig file made before still work (same
// address, serving certificate and client credentials), what was written before is still there
// (same etcd), and kube-controller-manager, whose own kubeconfig was made at Start, still acts.
func TestRestartAPIServer(t *testing.T) {
	ctx := t.Context()
	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	cs := kubernetes.NewForConfigOrDie(env.Config)
	fileCfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fileCS := kubernetes.NewForConfigOrDie(fileCfg)
	before := createQuotaNamespace(t, cs, "before", true)

	for i, down := range []time.Duration{0, 2 * time.Second} {
		start := time.Now()
		if err := env.RestartAPIServer(ctx, down); err != nil {
			t.Fatalf("restart %d (down %v): %v", i, down, err)
		}
		t.Logf("restart %d: down %v, serving again after %v", i, down, time.Since(start).Round(time.Millisecond))

		for name, c := range map[string]kubernetes.Interface{"Config": cs, "Kubeconfig": fileCS} {
			if _, err := c.CoreV1().ResourceQuotas(before).Get(ctx, "compute", metav1.GetOptions{}); err != nil {
				t.Fatalf("restart %d: the quota written before, read through the %s made before: %v", i, name, err)
			}
		}
		// The controller manager relists and keeps computing quota status.
		createQuotaNamespace(t, cs, fmt.Sprintf("after-%d", i), true)
	}
}
