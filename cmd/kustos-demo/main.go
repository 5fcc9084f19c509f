// Command kustos-demo is `make demo`: it shows Kustos doing its main job with no cluster and no
// credentials. It starts a real control plane (etcd, kube-apiserver, kube-controller-manager from
// bin/), runs the kustos binary in observer mode against it, creates a few tenant namespaces,
// prints what Kustos recommended — the Events and the JSON log lines. Then, in PR mode, it starts
// a local GitHub-compatible server (internal/gitops/githubtest) holding a small GitOps
// repository, runs a second kustos with --mode=pr --enable-auto-merge, prints the pull request it
// opens (title, body, diff), turns the required check green and prints the merge. The same
// PR-mode Kustos then runs the Cleaner act: a Knative-shaped preview environment that is not in
// Git, the seed's Cleaner over it, the value of its condition, the exact second the monotonic
// search scheduled, the deletion at that second and the CloudEvent a local sdk-go sink received.
// Then the expiry act: preview environments in Git with a lifetime, the owner's warning with
// one-time extension links at a webhook, a link clicked and written back to Git by a pull
// request, the other preview removed by a pull request at its deadline. Last, the inactivity
// act: a real Prometheus scraping ingress-nginx's and the bastion's metrics (an exporter plays
// them), two lab environments in Git, one used and one idle, the idle one's alerts (Events, and
// notices at a webhook) and its pause (spec.replicas: 0) by a pull request. It shuts everything
// down at the end. -acts runs some of the acts only (e.g. -acts inactivity).
//
// It is a separate binary, not a `kustos demo` subcommand, so that the controller image does not
// carry the test control plane's code.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/testenv"
)

const stateNamespace = "kustos-system"

// The acts, in the order they run.
const (
	actObserver   = "observer"
	actPR         = "pr"
	actCleaner    = "cleaner"
	actExpiry     = "expiry"
	actInactivity = "inactivity"
)

var allActs = []string{actObserver, actPR, actCleaner, actExpiry, actInactivity}

// parseActs reads -acts: a comma-separated subset of allActs.
func parseActs(list string) (map[string]bool, error) {
	acts := map[string]bool{}
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !slices.Contains(allActs, a) {
			return nil, fmt.Errorf("unknown act %q; the acts are %s", a, strings.Join(allActs, ", "))
		}
		acts[a] = true
	}
	switch {
	case len(acts) == 0:
		return nil, errors.New("no act")
	case acts[actCleaner] && !acts[actPR]:
		return nil, fmt.Errorf("%s needs %s: the Cleaner act runs with the Kustos the PR act started", actCleaner, actPR)
	}
	return acts, nil
}

func main() {
	kustosBin := flag.String("kustos", "bin/kustos", "path of the kustos binary to run")
	timeout := flag.Duration("timeout", 4*time.Minute, "give up after this long")
	actList := flag.String("acts", strings.Join(allActs, ","), "comma-separated acts to run (always in this order): "+
		strings.Join(allActs, ", ")+"; "+actCleaner+" runs with the Kustos of "+actPR)
	flag.Parse()
	acts, err := parseActs(*actList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustos-demo: -acts:", err)
		os.Exit(2)
	}
	if err := demo(*kustosBin, *timeout, acts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func demo(kustosBin string, timeout time.Duration, acts map[string]bool, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()

	step(out, "starting a real control plane (etcd, kube-apiserver, kube-controller-manager)")
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	// Kustos's CRDs, and the Knative-shaped CRDs of the Cleaner act.
	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true, CRDDirectoryPaths: []string{
		filepath.Join(root, "charts", "kustos", "files", "crds"), filepath.Join(root, "e2e", "testdata", "crds")}})
	if err != nil {
		return err
	}
	defer func() {
		step(out, "stopping the control plane")
		if serr := env.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNamespace}}); err != nil {
		return err
	}

	took := map[string]time.Duration{}
	timed := func(name string, f func() error) error {
		t0 := time.Now()
		defer func() { took[name] = time.Since(t0) }()
		return f()
	}
	if acts[actObserver] {
		if err := timed(actObserver, func() error { return observerAct(ctx, kustosBin, env.Kubeconfig, c, out) }); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	if acts[actPR] || acts[actExpiry] || acts[actInactivity] {
		var quota func(s *githubtest.Server, tb *demoTB, tokenFile string) error
		if acts[actPR] {
			quota = func(s *githubtest.Server, tb *demoTB, tokenFile string) error {
				return timed(actPR, func() error {
					return quotaAct(ctx, kustosBin, env.Kubeconfig, c, s, tb, tokenFile, out, func() error {
						if !acts[actCleaner] {
							return nil
						}
						fmt.Fprintln(out)
						return timed(actCleaner, func() error { return cleanerAct(ctx, c, out) })
					})
				})
			}
		}
		if err := prAct(out, quota, func(s *githubtest.Server, tb *demoTB, tokenFile string) error {
			if acts[actExpiry] {
				fmt.Fprintln(out)
				if err := timed(actExpiry, func() error { return expiryAct(ctx, kustosBin, env.Kubeconfig, c, s, tb, tokenFile, out) }); err != nil {
					return err
				}
			}
			if acts[actInactivity] {
				fmt.Fprintln(out)
				if err := timed(actInactivity, func() error { return inactivityAct(ctx, kustosBin, env.Kubeconfig, c, s, tb, tokenFile, out) }); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("PR mode: %w", err)
		}
	}
	took[actPR] -= took[actCleaner] // the Cleaner act runs inside the PR act, with its Kustos
	var acted []string
	for _, a := range allActs {
		if acts[a] {
			acted = append(acted, fmt.Sprintf("%s %s", a, took[a].Round(time.Second)))
		}
	}
	fmt.Fprintf(out, "Demo done in %s (%s).\n", time.Since(start).Round(time.Second), strings.Join(acted, ", "))
	return nil
}

// observerAct is the demo's first act: Kustos in observer mode, the Events and log lines it
// writes about four tenants. It stops its Kustos before returning: one Kustos per cluster from
// here on, or the observer would report (CleanupDue) the Cleaner that the PR-mode Kustos acts on,
// and both would write its status.
func observerAct(ctx context.Context, kustosBin, kubeconfig string, c client.Client, out io.Writer) (err error) {
	start := time.Now()
	step(out, "starting kustos run (observer mode, the default)")
	var logs bytes.Buffer
	cmd := exec.Command(kustosBin, "run", "--kubeconfig="+kubeconfig, "--state-namespace="+stateNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stderr = &syncWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s (run `make build`): %w", kustosBin, err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()

	step(out, "creating tenants:")
	tenants := []tenant{
		{name: "team-a", about: "pods use 8500m of 10 CPUs (85%) and 12Gi of 20Gi memory (60%)",
			hard: rl("requests.cpu", "10", "requests.memory", "20Gi"),
			pods: []corev1.ResourceList{rl("cpu", "8500m", "memory", "12Gi")}},
		{name: "team-b", about: "a Deployment of 4 × 1500m CPU in a 4-CPU quota: only 2 pods fit",
			hard: rl("requests.cpu", "4"), deployment: &deployment{replicas: 4, cpu: "1500m"}},
		{name: "team-c", about: `85% used, but opted out with resizer.io/enabled: "false"`,
			annotations: map[string]string{"resizer.io/enabled": "false"},
			hard:        rl("requests.cpu", "10"), pods: []corev1.ResourceList{rl("cpu", "8500m")}},
		{name: "team-d", about: `85% used, with a typo in resizer.io/cpu-threshold: "ninety"`,
			annotations: map[string]string{"resizer.io/cpu-threshold": "ninety"},
			hard:        rl("requests.cpu", "10"), pods: []corev1.ResourceList{rl("cpu", "8500m")}},
	}
	for _, t := range tenants {
		fmt.Fprintf(out, "     %-7s %s\n", t.name, t.about)
		if err := t.create(ctx, c); err != nil {
			return fmt.Errorf("tenant %s: %w", t.name, err)
		}
	}

	step(out, "waiting for Kustos's recommendations")
	want := map[string]bool{"team-a": true, "team-b": true, "team-d": true}
	var events []corev1.Event
	for {
		if events, err = kustosEvents(ctx, c); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range events {
			if e.Reason == "QuotaResizeRecommended" {
				seen[e.Namespace] = true
			}
		}
		if len(seen) >= len(want) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no recommendation for every tenant: %w; kustos logged:\n%s", ctx.Err(), logs.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
	time.Sleep(2 * time.Second) // anything else Kustos has to say
	if events, err = kustosEvents(ctx, c); err != nil {
		return err
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Events written by Kustos (kubectl get events -A --field-selector source=kustos):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tOBJECT\tTYPE\tREASON\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", e.Namespace, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
	}
	_ = tw.Flush()

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Recommendation log lines (JSON, one per recommendation):")
	recs := 0
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "recommendation" {
			fmt.Fprintln(out, "  "+sc.Text())
			recs++
		}
	}

	for _, e := range events {
		if e.Namespace == "team-c" {
			return errors.New("team-c opted out but got a recommendation")
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Summary: %d recommendation(s), %d event(s); team-c (opted out) untouched; nothing in the cluster was changed. (%s)\n",
		recs, len(events), time.Since(start).Round(time.Second))
	return nil
}

type deployment struct {
	replicas int32
	cpu      string
}

type tenant struct {
	name, about string
	annotations map[string]string
	hard        corev1.ResourceList
	pods        []corev1.ResourceList
	deployment  *deployment
}

func (t tenant) create(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.name, Annotations: t.annotations}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.name, Name: "compute"},
		Spec:       corev1.ResourceQuotaSpec{Hard: t.hard},
	}); err != nil {
		return err
	}
	// Pods are admitted against the quota only once its status exists.
	for {
		var q corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: t.name, Name: "compute"}, &q); err != nil {
			return err
		}
		if len(q.Status.Hard) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	for i, req := range t.pods {
		if err := c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: t.name, Name: fmt.Sprintf("app-%d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Requests: req}}}},
		}); err != nil {
			return err
		}
	}
	if d := t.deployment; d != nil {
		labels := map[string]string{"app": "web"}
		if err := c.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: t.name, Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(d.replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1",
						Resources: corev1.ResourceRequirements{Requests: rl("cpu", d.cpu)}}}},
				},
			},
		}); err != nil {
			return err
		}
	}
	return nil
}

func kustosEvents(ctx context.Context, c client.Client) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == "kustos" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Message < out[j].Message
	})
	return out, nil
}

func step(out io.Writer, s string) { fmt.Fprintln(out, "==> "+s) }

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// syncWriter lets the child's stderr be read while it is being written.
type syncWriter struct {
	w *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
