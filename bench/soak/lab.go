package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// The labs' timing: short, so that a lab left idle is alerted once and paused within half a
// minute, and a use is seen within a few seconds.
const (
	labTimeout     = 15 * time.Second // kustos.io/inactivity-timeout of every lab
	labCheckEvery  = 2 * time.Second  // --inactivity-check-interval
	labScrapeEvery = time.Second      // Prometheus's scrape interval
	labsPerClass   = 2                // labs in each lab namespace at the start
	maxLabs        = 6
)

// labClasses are the lab namespaces (a class each); the tenants' workload never touches them.
var labClasses = []string{"lab-a", "lab-b"}

// labSources is --inactivity-config: the bastion's SSH connections gauge alone, the simplest
// source documented, read over a range of three scrapes.
const labSources = `- name: bastion
  available: count(bastion_ssh_connections)
  data: max by (namespace, name) (max_over_time((timestamp(max by (namespace, name) (max_over_time(bastion_ssh_connections[{{.Range}}])) > 0))[{{.Window}}:{{.Step}}]))
  labels: {namespace: namespace, name: name}
  minRange: 3s
`

// labs are the lab environments, switched at random between used (their bastion_ssh_connections
// at 1, which a real Prometheus scrapes) and idle (0); each has its manifest in Git, as the
// previews do, so Kustos pauses one through a pull request the GitOps tool applies after the
// merge.
type labs struct {
	cs      *kubernetes.Clientset
	gh      *githubtest.Server
	check   *Checker
	logf    func(string, ...any)
	verbose bool

	// mail and owner, when set, are the owners' mailbox and browser: some idle labs are kept
	// through their alert's link.
	mail  *mailbox
	owner *browser

	ssh   *prometheus.GaugeVec
	prom  *promtest.Server
	proxy *promProxy
	args  []string

	mu      sync.Mutex
	rng     *rand.Rand
	next    int
	envs    map[string]*labEnv // ns/name
	actions map[string]int
	frozen  bool // the broken mode holds the labs as they are
}

type labEnv struct {
	ns, name string
	used     bool
}

func labPath(ns, name string) string {
	return "clusters/" + clusterName + "/labs/" + ns + "/" + name + ".yaml"
}

func labManifest(ns, name string, replicas int) string {
	return `# A lab environment; Kustos pauses it when nobody has used it for its timeout.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  annotations:
    ` + annotationOwner + `: ` + ownerOf(name) + `
    kustos.io/inactivity-timeout: ` + labTimeout.String() + `
spec:
  replicas: ` + fmt.Sprint(replicas) + ` # one desktop
`
}

// startLabs starts the exporter, Prometheus scraping it, the proxy in front of it, and the
// first labs (before Kustos starts); args are the flags every replica gets for them.
func startLabs(ctx context.Context, tb *soakTB, dir string, cs *kubernetes.Clientset, gh *githubtest.Server, check *Checker, seed uint64, logf func(string, ...any)) (*labs, error) {
	l := &labs{cs: cs, gh: gh, check: check, logf: logf, rng: rand.New(rand.NewPCG(seed, seed^0x1ab5)), envs: map[string]*labEnv{}, actions: map[string]int{},
		ssh: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bastion_ssh_connections", Help: "open SSH sessions per lab environment"}, []string{"namespace", "name"})}
	start := time.Now()
	if err := catch(func() { //nolint:contextcheck // test tooling: promtest bounds its own start and stops with the TB's cleanups
		exp := promtest.NewExporter(promTB{tb})
		// The bastion exports a series per environment it knows, 0 while nobody is connected;
		// this one keeps the source collecting before the first lab.
		l.ssh.WithLabelValues("none", "none").Set(0)
		exp.Registry.MustRegister(l.ssh)
		l.prom = promtest.Start(promTB{tb}, promtest.Options{Scrape: []string{exp.Addr}, ScrapeInterval: labScrapeEvery})
		l.prom.WaitFor(promTB{tb}, "bastion_ssh_connections", time.Minute)
	}); err != nil {
		return nil, err
	}
	logf("Prometheus (bin/prometheus) up in %s, scraping the labs' bastion_ssh_connections every %s", time.Since(start).Round(time.Millisecond), labScrapeEvery)
	var err error
	if l.proxy, err = newPromProxy(ctx, l.prom.URL, check); err != nil {
		return nil, err
	}
	sources := filepath.Join(dir, "inactivity-sources.yaml")
	if err := os.WriteFile(sources, []byte(labSources), 0o644); err != nil {
		return nil, err
	}
	l.args = []string{
		"--enable-inactivity", "--prometheus-url=" + l.proxy.url(), "--inactivity-kinds=apps/v1/Deployment",
		"--inactivity-config=" + sources, "--inactivity-check-interval=" + labCheckEvery.String(),
		"--activity-min-step=1s", "--activity-lookback=1h", "--activity-query-timeout=5s", "--max-alerts=1",
		"--inactivity-keep-periods=" + labKeep.String(), "--inactivity-keep-max=" + labKeep.String(),
		// Every lab has a manifest in Git, so nothing is paused directly; the allowance makes a
		// direct pause possible, and paused-via-pr would see it.
		"--allow=inactivity:pause:apps/deployments",
	}
	for _, ns := range labClasses {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		for range labsPerClass {
			if err := l.create(ctx, ns); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

func (l *labs) close() { l.proxy.close() }

func (l *labs) count(kind string) {
	l.mu.Lock()
	l.actions[kind]++
	l.mu.Unlock()
}

func (l *labs) intn(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.IntN(n)
}

// create makes a lab in namespace ns: its manifest in Git, then the Deployment.
func (l *labs) create(ctx context.Context, ns string) error {
	l.mu.Lock()
	l.next++
	name := fmt.Sprintf("vm-%03d", l.next)
	l.mu.Unlock()
	if err := catch(func() {
		l.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add lab "+name, map[string]string{labPath(ns, name): labManifest(ns, name, 1)})
	}); err != nil {
		return err
	}
	d := deployment(ns, name, 1, "10m", map[string]string{annotationOwner: ownerOf(name), "kustos.io/inactivity-timeout": labTimeout.String()})
	if _, err := l.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	l.ssh.WithLabelValues(ns, name).Set(0)
	l.check.LabCreated(ns, name, labTimeout, time.Now())
	l.mu.Lock()
	l.envs[ns+"/"+name] = &labEnv{ns: ns, name: name}
	l.mu.Unlock()
	l.note("lab %s/%s created", ns, name)
	return nil
}

func (l *labs) note(format string, a ...any) {
	if l.verbose {
		l.logf("workload: "+format, a...)
	}
}

// gitReplicas is the lab's replicas on the base branch; ok is false when it has no manifest.
func (l *labs) gitReplicas(ns, name string) (int32, bool) {
	text, ok := l.gh.FileAt(ghOwner, ghRepo, baseBranch, labPath(ns, name))
	if !ok {
		return 0, false
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal([]byte(text), &d); err != nil || d.Spec.Replicas == nil {
		l.logf("labs: %s/%s's manifest: %v", ns, name, err)
		return 0, false
	}
	return *d.Spec.Replicas, true
}

// step does one random lab action: a new lab now and then; else a lab picked at random is
// resumed by its owner (in Git) when it was paused, stops being used when it was, is kept
// through its alert's link (now and then, when one arrived since its last use), or (half of
// the time) starts being used when it was idle. Idle periods so last about twice as long as
// uses, often past the timeout.
func (l *labs) step(ctx context.Context) {
	r := l.intn(100)
	l.mu.Lock()
	if l.frozen {
		l.mu.Unlock()
		return
	}
	n := len(l.envs)
	var keys []string
	for k := range l.envs {
		keys = append(keys, k)
	}
	l.mu.Unlock()
	if r < 8 && n < maxLabs {
		if err := l.create(ctx, labClasses[l.intn(len(labClasses))]); err != nil {
			l.logf("workload lab-created: %v", err)
			return
		}
		l.count("lab-created")
		return
	}
	if n == 0 {
		return
	}
	sort.Strings(keys)
	l.mu.Lock()
	e := l.envs[keys[l.rng.IntN(len(keys))]]
	used := e.used
	l.mu.Unlock()
	switch replicas, _ := l.gitReplicas(e.ns, e.name); {
	case replicas == 0:
		// Paused: its owner scales it up again in Git, and uses it.
		l.setUsed(e, true)
		if err := catch(func() {
			l.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "resume lab "+e.name, map[string]string{labPath(e.ns, e.name): labManifest(e.ns, e.name, 1)})
		}); err != nil {
			l.logf("workload lab-resumed: %v", err)
			return
		}
		l.count("lab-resumed")
		l.note("lab %s/%s resumed in Git by its owner, and used", e.ns, e.name)
	case used:
		l.setUsed(e, false)
		l.count("lab-idle")
		l.note("lab %s/%s idle", e.ns, e.name)
	case r < 30 && l.tryKeep(ctx, e):
	case r%2 == 0:
		l.setUsed(e, true)
		l.count("lab-used")
		l.note("lab %s/%s used", e.ns, e.name)
	}
}

// setUsed: a use counts from before the gauge rises and until after it fell, so that the
// record never holds less use than Prometheus saw.
func (l *labs) setUsed(e *labEnv, used bool) {
	now := time.Now()
	l.mu.Lock()
	e.used = used
	l.mu.Unlock()
	if used {
		l.check.LabUsed(e.ns, e.name, now)
		l.ssh.WithLabelValues(e.ns, e.name).Set(1)
		return
	}
	l.ssh.WithLabelValues(e.ns, e.name).Set(0)
	l.check.LabIdle(e.ns, e.name, time.Now())
}

// sync is the GitOps tool for the labs: it applies each lab's replicas from the base branch
// (0 after a merged pause, 1 after its owner's resume).
func (l *labs) sync(ctx context.Context) {
	l.mu.Lock()
	var envs []*labEnv
	for _, e := range l.envs {
		envs = append(envs, e)
	}
	l.mu.Unlock()
	for _, e := range envs {
		want, ok := l.gitReplicas(e.ns, e.name)
		if !ok {
			continue
		}
		d, err := l.cs.AppsV1().Deployments(e.ns).Get(ctx, e.name, metav1.GetOptions{})
		if err != nil || d.Spec.Replicas != nil && *d.Spec.Replicas == want {
			continue
		}
		l.check.LabSynced(e.ns, e.name, want == 0, time.Now())
		d.Spec.Replicas = &want
		if _, err := l.cs.AppsV1().Deployments(e.ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			continue
		}
		if want == 0 {
			l.count("sync-lab-paused")
		} else {
			l.count("sync-lab-resumed")
		}
	}
}

// watch reports every change of a lab's spec.replicas, as the API server's watch gives it, to
// the checker: paused-via-pr.
func (l *labs) watch(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		od, ok1 := o.(*appsv1.Deployment)
		nd, ok2 := n.(*appsv1.Deployment)
		if !ok1 || !ok2 || !strings.HasPrefix(nd.Namespace, "lab-") || nd.Spec.Replicas == nil {
			return
		}
		if od.Spec.Replicas == nil || *od.Spec.Replicas != *nd.Spec.Replicas {
			l.check.LabReplicas(nd.Namespace, nd.Name, *nd.Spec.Replicas, time.Now())
		}
	}})
	return err
}

func (l *labs) actionCounts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.actions {
		out[k] = v
	}
	return out
}

// promFault is one Prometheus fault, drawn by the faults' RNG: unreachable for 3 to 15 s (the
// connection cut, or 503), or answering in part for 15 to 30 s (long enough that a lab in use
// whose series are left out would look idle past its timeout and its alert): every lab's series
// left out, or a random half of them, with a warning.
func (f *faults) promFault(ctx context.Context, partial bool) {
	p := f.prom
	if !partial {
		hold, cut := f.dur(3, 15), f.intn(2) == 0
		f.logf("fault: %s for %s (cut %v)", faultPromDown, hold, cut)
		f.count(faultPromDown)
		p.proxy.fault(ctx, faultPromDown, hold, cut, nil)
		f.ended()
		return
	}
	hold := f.dur(15, 30)
	leave := map[string]bool{}
	all := f.intn(2) == 0
	p.mu.Lock()
	keys := make([]string, 0, len(p.envs))
	for k := range p.envs {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		if all || f.intn(2) == 0 {
			leave[k] = true
		}
	}
	f.logf("fault: %s for %s, leaving out %d of %d labs' series", faultPromPartial, hold, len(leave), len(keys))
	f.count(faultPromPartial)
	p.proxy.fault(ctx, faultPromPartial, hold, false, leave)
	f.ended()
}

// mergeCounts adds b's counts to a's.
func mergeCounts(a, b map[string]int) map[string]int {
	for k, v := range b {
		a[k] += v
	}
	return a
}

// breakSilentPartial is the broken mode in which Prometheus lies: its answers leave every lab's
// series out without a warning, which Kustos cannot tell from idleness. The run must fail with
// no-pause-used, which shows the check working end to end.
const breakSilentPartial = "silent-partial"

// breakSilent: 20 s into the run every lab is used, and stays so while, for a minute (a
// timeout, an alert interval, a PR and its merge), the proxy silently leaves their series out.
func (l *labs) breakSilent(ctx context.Context) {
	if !sleep(ctx, 20*time.Second) {
		return
	}
	l.mu.Lock()
	l.frozen = true
	leave := map[string]bool{}
	var envs []*labEnv
	for k, e := range l.envs {
		leave[k] = true
		envs = append(envs, e)
	}
	l.mu.Unlock()
	for _, e := range envs {
		l.setUsed(e, true)
	}
	l.logf("broken mode: Prometheus leaves every lab's series out, without a warning, for a minute")
	// Not a fault the checker knows of: Kustos is given no sign, so every answer counts as
	// whole.
	l.proxy.mu.Lock()
	l.proxy.partial, l.proxy.silent = leave, true
	l.proxy.mu.Unlock()
	sleep(ctx, time.Minute)
	l.proxy.mu.Lock()
	l.proxy.partial, l.proxy.silent = nil, false
	l.proxy.mu.Unlock()
	l.mu.Lock()
	l.frozen = false
	l.mu.Unlock()
}
