package helmrelease

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
)

// testKube is the Uninstaller's kubeClient for namespace, on the test's API server.
func testKube(t *testing.T, namespace string) *kubeClient {
	t.Helper()
	getter := newRESTClientGetter(restConfig, namespace)
	mapper, err := getter.ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &kubeClient{ctx: context.Background(), decoder: scope.Decoder{Mapper: mapper, Namespace: namespace}, dynamic: dyn,
		discovery: k8s.Discovery(), log: t.Logf}
}

const hookPod = `apiVersion: v1
kind: Pod
metadata:
  name: hook
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
`

// A hook Pod is ready when it succeeded, fails when it failed or times out, and a hook of
// another kind is ready once created: helm's WatchUntilReady, against the API server.
func TestWatchUntilReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		// then happens to the Pod 300 ms after the watch starts: a phase, or "delete".
		then string
		want string // a substring of the error; empty: ready
	}{
		{"pod succeeds", hookPod, string(corev1.PodSucceeded), ""},
		{"pod fails", hookPod, string(corev1.PodFailed), "pod hook failed"},
		{"pod runs on past the timeout", hookPod, string(corev1.PodRunning), "Pod hook: timed out waiting for the condition"},
		{"pod deleted meanwhile (helm takes that as done)", hookPod, "delete", ""},
		{"a ConfigMap is ready when created", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n", "", ""},
		{"a pod named by generateName succeeds", strings.Replace(hookPod, "name: hook", "generateName: hook-", 1), string(corev1.PodSucceeded), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			k := testKube(t, ns)
			objs, err := k.Build(strings.NewReader(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Create(objs); err != nil {
				t.Fatal(err)
			}
			name := objs[0].Name // the server's, for generateName
			if !strings.HasPrefix(name, "hook") {
				t.Fatalf("created %q", name)
			}
			if tc.then != "" {
				time.AfterFunc(300*time.Millisecond, func() {
					ctx := context.Background()
					if tc.then == "delete" {
						_ = k8s.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
						return
					}
					p, err := k8s.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					p.Status.Phase = corev1.PodPhase(tc.then)
					if _, err := k8s.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
						t.Error(err)
					}
				})
			}
			start := time.Now()
			err = k.WatchUntilReady(objs, 3*time.Second)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("WatchUntilReady: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("WatchUntilReady = %v, want %q", err, tc.want)
			}
			if tc.want == "" && tc.then == "" && time.Since(start) > time.Second {
				t.Errorf("a ConfigMap took %v to be ready", time.Since(start))
			}
		})
	}
}

// A hook Job is done when complete, fails when failed, and waits otherwise (helm's waitForJob).
func TestJobDone(t *testing.T) {
	job := func(conds ...map[string]any) *unstructured.Unstructured {
		list := make([]any, 0, len(conds))
		for _, c := range conds {
			list = append(list, c)
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j"}, "status": map[string]any{"conditions": list, "active": int64(1)}}}
	}
	cond := func(typ, status, reason string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason}
	}
	k := &kubeClient{log: t.Logf}
	for _, tc := range []struct {
		name string
		job  *unstructured.Unstructured
		done bool
		err  string
	}{
		{"running", job(), false, ""},
		{"complete", job(cond("SuccessCriteriaMet", "True", ""), cond("Complete", "True", "")), true, ""},
		{"failed", job(cond("FailureTarget", "True", ""), cond("Failed", "True", "BackoffLimitExceeded")), true, "job j failed: BackoffLimitExceeded"},
		{"complete false", job(cond("Complete", "False", "")), false, ""},
		{"status of the wrong shape", &unstructured.Unstructured{Object: map[string]any{"status": "x"}}, true, "job j:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, err := k.jobDone(tc.job, "j")
			if done != tc.done || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("jobDone = %v, %v; want %v, %q", done, err, tc.done, tc.err)
			}
		})
	}
}
