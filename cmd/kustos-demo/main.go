// Command kustos-demo is `make demo`: it shows Kustos doing its main job with no cluster and no
// credentials. It starts a real control plane (etcd, kube-apiserver, kube-controller-manager from
// bin/), runs the kustos binary in observer mode against it, creates a few tenant namespaces,
// prints what Kustos recommended — the Events and the JSON log lines, among them the shrink of an
// over-sized quota sized from its usage window in a real Prometheus (backfilled history). Then, in
// PR mode, it starts a local GitHub-compatible server (internal/gitops/githubtest) holding a small
// GitOps repository, runs a second kustos with --mode=pr --enable-auto-merge, prints the pull
// request it opens (title, body, diff), turns the required check green and prints the merge, and
// the shrink's pull request with the chart of its usage window. The same PR-mode Kustos then
// runs the Cleaner act: a Knative-shaped preview environment that is not in Git, the example
// Cleaner over it, the value of its condition, the exact second the monotonic search scheduled, the
// deletion at that second and the CloudEvent a local sdk-go sink received. Then the expiry act:
// preview environments in Git with a lifetime, the owner's warning with one-time extension links at
// a webhook, a link clicked and written back to Git by a pull request, the other preview removed by
// a pull request at its deadline. Then the inactivity act: a real Prometheus scraping
// ingress-nginx's and the bastion's metrics (an exporter plays them), two lab environments in Git,
// one used and one idle, the idle one's alerts (Events, and notices at a webhook), its pause
// (spec.replicas: 0) by a pull request, and its owner resuming it by the pause notice's link. Last, the vSphere act: govmomi's vCenter simulator in this
// process, lab VMs with an owner and a lifetime in their notes, one extended by its owner's link,
// one quarantined (powered off, renamed, moved), one without notes reported as an orphan. It shuts
// everything down at the end. -acts runs some of the acts only (e.g. -acts inactivity).
//
// Each act has its own deadline, sized for a loaded 2-core machine (actDeadlines; -timeout sets
// them all). When an act fails, the demo says which act and which step failed, shows the last
// lines of that act's Kustos log and the Events in its namespaces, and exits with status 1.
//
// It is a separate binary, not a `kustos demo` subcommand, so that the controller image does not
// carry the test control plane's code.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
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
	"github.com/kustos-dev/kustos/internal/detect/quota"
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
	actVSphere    = "vsphere"
)

var allActs = []string{actObserver, actPR, actCleaner, actExpiry, actInactivity, actVSphere}

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
	timeout := flag.Duration("timeout", 0, "give up on an act after this long (0: each act's own deadline, sized for a loaded 2-core machine)")
	actList := flag.String("acts", strings.Join(allActs, ","), "comma-separated acts to run (always in this order): "+
		strings.Join(allActs, ", ")+"; "+actCleaner+" runs with the Kustos of "+actPR)
	flag.Parse()
	acts, err := parseActs(*actList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustos-demo: -acts:", err)
		os.Exit(2)
	}
	if err := demo(*kustosBin, *timeout, acts, os.Stdout, os.Stderr); err != nil {
		os.Exit(1) // demo has reported it on errOut
	}
}

// demo runs the acts on one control plane. On failure it writes to errOut which act and step
// failed, that act's Kustos log tail and the Events of its namespaces, then stops everything.
func demo(kustosBin string, timeout time.Duration, acts map[string]bool, out, errOut io.Writer) (err error) {
	start := time.Now()
	ctx := context.Background() // each act bounds itself (acts.run)
	r := newActs(out, timeout)
	gh := &gitHub{tb: &demoTB{}}
	usage := &quotaUsage{tb: gh.tb} // Prometheus with team-f's quota usage, for the observer and PR acts
	var env *testenv.Env
	var c client.Client
	stopEnv := func() error {
		if env == nil {
			return nil
		}
		step(out, "stopping the control plane")
		e := env
		env = nil
		return e.Stop()
	}
	defer func() {
		// Contract violations (requests or responses that do not match GitHub's OpenAPI
		// description) fail the demo too.
		err = errors.Join(err, gh.finish())
		if err != nil {
			r.report(errOut, c, err) // while the control plane still serves its Events
		}
		if serr := stopEnv(); serr != nil && err == nil {
			err = serr
			fmt.Fprintln(errOut, "demo failed: stopping the control plane:", serr)
		}
	}()

	if err := r.run(ctx, actSetup, func(ctx context.Context, a *act) (err error) {
		a.step("starting a real control plane (etcd, kube-apiserver, kube-controller-manager)")
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		// Kustos's CRDs, and the Knative-shaped CRDs of the Cleaner act.
		env, err = testenv.Start(ctx, testenv.Options{ControllerManager: true, CRDDirectoryPaths: []string{
			filepath.Join(root, "charts", "kustos", "files", "crds"), filepath.Join(root, "e2e", "testdata", "crds")}})
		if err != nil {
			return err
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := v1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		if c, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNamespace}})
	}); err != nil {
		return err
	}

	if acts[actObserver] {
		if err := r.run(ctx, actObserver, func(ctx context.Context, a *act) error {
			return observerAct(ctx, a, kustosBin, env.Kubeconfig, c, usage)
		}); err != nil {
			return err
		}
	}
	if acts[actPR] {
		if err := r.run(ctx, actPR, func(ctx context.Context, a *act) error {
			if err := gh.start(a); err != nil {
				return err
			}
			return quotaAct(ctx, a, kustosBin, env.Kubeconfig, c, gh, usage, func() error {
				if !acts[actCleaner] {
					return nil
				}
				return r.run(ctx, actCleaner, func(ctx context.Context, cl *act) error {
					a.mu.Lock()
					logOf, logs := a.logOf, a.logs
					a.mu.Unlock()
					cl.useLogs(logOf, logs) // the PR act's Kustos acts on the Cleaner
					cl.watch(prStateNamespace)
					return cleanerAct(ctx, cl, c)
				})
			})
		}); err != nil {
			return err
		}
	}
	// The expiry and inactivity acts: each with a Kustos of its own on the same GitHub server.
	for _, later := range []struct {
		name string
		run  func(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client, g *gitHub) error
	}{{actExpiry, expiryAct}, {actInactivity, inactivityAct}} {
		if !acts[later.name] {
			continue
		}
		if err := r.run(ctx, later.name, func(ctx context.Context, a *act) error {
			if err := gh.start(a); err != nil {
				return err
			}
			return later.run(ctx, a, kustosBin, env.Kubeconfig, c, gh)
		}); err != nil {
			return err
		}
	}
	if acts[actVSphere] {
		if err := r.run(ctx, actVSphere, func(ctx context.Context, a *act) error {
			return vsphereAct(ctx, a, kustosBin, env.Kubeconfig, c)
		}); err != nil {
			return err
		}
	}
	r.took[actPR] -= r.took[actCleaner] // the Cleaner act runs inside the PR act, with its Kustos
	var acted []string
	for _, a := range allActs {
		if acts[a] {
			acted = append(acted, fmt.Sprintf("%s %s", a, r.took[a].Round(time.Second)))
		}
	}
	if err := stopEnv(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Demo done in %s (%s).\n", time.Since(start).Round(time.Second), strings.Join(acted, ", "))
	fmt.Fprint(out, installNote)
	return nil
}

// installNote is the demo's last word: where installing for real starts.
const installNote = `To install Kustos in your own cluster: README.md, section "Install". helm install starts it in
observer mode, the default, as in the first act: it only reports what it would change (Events
and log lines). PR mode, with a GitHub App, comes after it there.
`

// observerAct is the demo's first act: Kustos in observer mode, the Events and log lines it
// writes about five tenants. It stops its Kustos before returning: one Kustos per cluster from
// here on, or the observer would report (CleanupDue) the Cleaner that the PR-mode Kustos acts on,
// and both would write its status.
func observerAct(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client, usage *quotaUsage) (err error) {
	out := a.out
	start := time.Now()
	usage.start(a) //nolint:contextcheck // test tooling: promtest bounds its own start and stops with the TB's cleanups
	a.step("starting kustos run --prometheus-url=" + usage.s.URL + " (observer mode, the default; the quota usage history from Prometheus)")
	stop, err := a.startKustos("kustos (observer mode)", kustosBin, []string{"run", "--kubeconfig=" + kubeconfig, "--state-namespace=" + stateNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--prometheus-url=" + usage.s.URL})
	if err != nil {
		return err
	}
	defer stop()

	a.step("creating tenants:")
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
		shrinkTenantSpec(),
	}
	for _, t := range tenants {
		a.watch(t.name)
	}
	a.watch(stateNamespace)
	for _, t := range tenants {
		fmt.Fprintf(out, "     %-7s %s\n", t.name, t.about)
		if err := t.create(ctx, c); err != nil {
			return fmt.Errorf("tenant %s: %w", t.name, err)
		}
	}

	a.step("waiting for Kustos's recommendations")
	want := map[string]bool{"team-a": true, "team-b": true, "team-d": true}
	var events []corev1.Event
	for {
		if events, err = kustosEvents(ctx, c); err != nil {
			return err
		}
		seen, shrink := map[string]bool{}, false
		for _, e := range events {
			if e.Reason == quota.ReasonQuotaResizeRecommended && want[e.Namespace] {
				seen[e.Namespace] = true
			}
			shrink = shrink || e.Reason == quota.ReasonQuotaShrinkRecommended && e.Namespace == shrinkTenant
		}
		if len(seen) >= len(want) && shrink {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no recommendation for every tenant (grow: %d of %d, %s's shrink: %v): %w", len(seen), len(want), shrinkTenant, shrink, ctx.Err())
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
	var shrink map[string]any
	sc := bufio.NewScanner(strings.NewReader(a.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "recommendation" {
			fmt.Fprintln(out, "  "+sc.Text())
			recs++
			if m["reason"] == quota.ReasonQuotaShrinkRecommended && m["namespace"] == shrinkTenant {
				shrink = m
			}
		}
	}
	if shrink == nil {
		return fmt.Errorf("no recommendation log line for %s's shrink", shrinkTenant)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s's shrink, from its usage window (%s, complete: %v): target = max(peak %v, used %v) × (1 + headroom %v) = %v; passed the gates %v; shaped by %v (at most 25%% less per step) → %v; held back by: %s.\n",
		shrinkTenant, shrinkWindow, shrink["windowComplete"], shrink["peak"], shrink["used"], shrink["headroom"], shrink["target"],
		strings.ReplaceAll(fmt.Sprint(shrink["checked"]), ",", ", "), shrink["gates"], shrink["recommended"], cmp.Or(fmt.Sprint(shrink["blocked"]), "nothing"))

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
	// podsFirst creates the pods before the quota: its first status counts them, and Kustos's
	// first look at it sees them used.
	podsFirst bool
}

func (t tenant) create(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.name, Annotations: t.annotations}}); err != nil {
		return err
	}
	if t.podsFirst {
		if err := t.createPods(ctx, c); err != nil {
			return err
		}
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
	if !t.podsFirst {
		if err := t.createPods(ctx, c); err != nil {
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

func (t tenant) createPods(ctx context.Context, c client.Client) error {
	for i, req := range t.pods {
		if err := c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: t.name, Name: fmt.Sprintf("app-%d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Requests: req}}}},
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
