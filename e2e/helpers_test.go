package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/quota"
)

// tick is how often waits poll; wait is the longest a test waits for the real controllers.
const (
	tick = 200 * time.Millisecond
	wait = 60 * time.Second
)

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// newNamespace creates a namespace named after the test, with annotations, deleted at the end.
// namespaceSeq numbers the namespaces of one run. A random suffix per namespace collided:
// with a few hundred "kustos-state" namespaces a run, two draws of five digits met often
// enough that a test found its name taken by one still being deleted. Starting at a random
// point keeps names from repeating between runs on one control plane.
var namespaceSeq = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(rand.Int64N(100000))
	return &n
}()

func newNamespace(t *testing.T, prefix string, annotations map[string]string) string {
	t.Helper()
	name := nonDNS.ReplaceAllString(strings.ToLower(prefix), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("%s-%05d", strings.Trim(name, "-"), namespaceSeq.Add(1)%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

// newQuota creates a ResourceQuota and waits until the real quota controller computed its
// status.
func newQuota(t *testing.T, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if err := k8s.Create(context.Background(), q); err != nil {
		t.Fatalf("creating quota %s/%s: %v", ns, name, err)
	}
	eventually(t, "quota status computed", func() bool {
		var got corev1.ResourceQuota
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(q), &got) == nil && len(got.Status.Hard) == len(hard)
	})
}

// newPod creates a Pending pod (there is no scheduler) that counts against the quota.
func newPod(t *testing.T, ns, name string, requests corev1.ResourceList) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.invalid/app:1",
			Resources: corev1.ResourceRequirements{Requests: requests},
		}}},
	}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
}

// waitUsed waits until the quota controller counted the expected usage.
func waitUsed(t *testing.T, ns, name string, res corev1.ResourceName, want string) {
	t.Helper()
	wantQ := resource.MustParse(want)
	eventually(t, fmt.Sprintf("quota %s/%s used %s = %s", ns, name, res, want), func() bool {
		var got corev1.ResourceQuota
		if k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got) != nil {
			return false
		}
		u, ok := got.Status.Used[res]
		return ok && u.Cmp(wantQ) == 0
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", wait, what)
		}
		time.Sleep(tick)
	}
}

// kustosEvents lists the Events Kustos wrote in a namespace with a reason, oldest first.
func kustosEvents(t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == "kustos" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitEvents waits until exactly n Kustos events with reason exist in ns (more is a failure).
func waitEvents(t *testing.T, ns, reason string, n int) []corev1.Event {
	t.Helper()
	var got []corev1.Event
	eventually(t, fmt.Sprintf("%d %s event(s) in %s", n, reason, ns), func() bool {
		got = kustosEvents(t, ns, reason)
		if len(got) > n {
			t.Fatalf("want %d %s events in %s, got %d: %v", n, reason, ns, len(got), messages(got))
		}
		return len(got) == n
	})
	return got
}

// never asserts that no more than n Kustos events with reason are in ns now and during d
// (d = 0 checks once).
func never(t *testing.T, ns, reason string, n int, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		if got := kustosEvents(t, ns, reason); len(got) > n {
			t.Fatalf("want at most %d %s events in %s, got %d: %v", n, reason, ns, len(got), messages(got))
		}
		if !time.Now().Before(end) {
			return
		}
		time.Sleep(tick)
	}
}

func messages(evs []corev1.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Message
	}
	return out
}

// logBuffer collects Kustos's JSON log lines; safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the log lines whose msg is msg, decoded.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	data := append([]byte(nil), b.buf.Bytes()...)
	b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// kustos is one running Kustos, in-process, with its own state namespace unless told.
type kustos struct {
	opts app.Options
	logs *logBuffer
	stop func()
}

// startKustos starts Kustos with the defaults of `kustos run`, changed by mutate.
func startKustos(t *testing.T, mutate func(*app.Options)) *kustos {
	t.Helper()
	return startKustosAs(t, env.Config, mutate)
}

// startKustosAs starts Kustos talking to the API server with cfg's identity.
func startKustosAs(t *testing.T, cfg *rest.Config, mutate func(*app.Options)) *kustos {
	t.Helper()
	return startKustosWith(t, cfg, kustosOptions(t, mutate))
}

// kustosOptions are the e2e tests' Options (observer mode, a state namespace of the test's
// own), changed by mutate.
func kustosOptions(t *testing.T, mutate func(*app.Options)) app.Options {
	t.Helper()
	threshold, _ := quota.ParseThreshold("80")
	increment, _ := quota.ParseIncrement("20%")
	o := app.Options{
		Mode:                    app.ModeObserve,
		Defaults:                quota.Settings{Threshold: threshold, Increment: increment},
		DefaultCooldown:         time.Hour,
		LeaseSweepInterval:      12 * time.Hour,
		LeaderElectionID:        "kustos",
		MetricsAddr:             "0",
		HealthAddr:              "0",
		MaxConcurrentReconciles: 4,
		Instance:                "e2e",
		InProcessReplica:        true,
	}
	if mutate != nil {
		mutate(&o)
	}
	if o.Cleaners.AuthorKeyFile == "" && o.Cleaners.AuthorKeySecret == "" {
		o.Cleaners.AuthorKeyFile = authorKeyFile
	}
	if o.Allow == nil {
		// Deletions and pauses are opt-ins (--allow); the tests of what a detector deletes or
		// pauses opt in to the kinds they use, as an operator would. A test of the refusal
		// passes a policy without them (allow.Policy{}: nothing).
		o.Allow = e2eAllow
	}
	if o.StateNamespace == "" {
		o.StateNamespace = newNamespace(t, "kustos-state", nil)
	}
	return o
}

// e2eAllow lets every detector delete and pause the kinds the e2e tests create, and uninstall
// helm releases.
var e2eAllow = func() allow.Policy {
	kinds := []string{"namespaces", "configmaps", "services", "secrets", "apps/deployments", "apps/statefulsets", "kustos.io/cleaners",
		"serving.knative.dev/services", "serving.knative.dev/revisions", "example.com/widgets"}
	var entries []string
	for d := range app.PolicyDetectors {
		for _, k := range kinds {
			entries = append(entries, d+":delete:"+k, d+":pause:"+k)
		}
		entries = append(entries, d+":delete:helm.sh/releases")
	}
	p, err := allow.Parse(strings.Join(entries, ","), app.PolicyDetectors)
	if err != nil {
		panic(err)
	}
	return p
}()

func startKustosWith(t *testing.T, cfg *rest.Config, o app.Options) *kustos {
	t.Helper()
	logs := &logBuffer{}
	o.Log = logr.FromSlogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mgr, err := app.NewManager(t.Context(), cfg, o)
	if err != nil {
		t.Fatalf("creating Kustos: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	k := &kustos{opts: o, logs: logs}
	k.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Kustos stopped with an error: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Kustos did not stop within 30s")
			}
		})
	}
	t.Cleanup(k.stop)
	return k
}

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// deploymentOf is a Deployment of replicas pods requesting cpu each.
func deploymentOf(ns, name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: "registry.invalid/app:1",
					Resources: corev1.ResourceRequirements{Requests: rl("cpu", cpu)},
				}}},
			},
		},
	}
}

// String is everything logged so far (for a failing test's report).
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
