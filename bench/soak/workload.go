package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

const (
	annotationOwner     = "kustos.io/owner"
	annotationExpiresAt = "kustos.io/expires-at"
)

// world is the workload: tenants with their quotas and previews, kept the same in Git (the
// base branch of the GitHub-compatible server) and in the cluster, as a GitOps tool would.
type world struct {
	cs         *kubernetes.Clientset
	gh         *githubtest.Server
	maxTenants int
	chaosEnd   time.Time // when the workload stops
	verbose    bool      // log each action on a named object
	check      *Checker
	logf       func(string, ...any)
	// mail and owner, when set, are the owners' mailbox and browser: some extensions go
	// through the links in the warnings.
	mail  *mailbox
	owner *browser

	mu        sync.Mutex
	rng       *rand.Rand
	afterRng  *rand.Rand // the opt-outs aimed just after an API server restart (afterAPIRestart)
	next      int
	tenants   map[string]*tenant
	overSince map[string]time.Time // tenants pushed over quota, since when
	actions   map[string]int       // workload actions by kind
	ciSeen    map[string]bool      // PR heads the fake CI has reported on
}

type tenant struct {
	ns       string
	born     time.Time
	previews map[string]bool // names alive in Git
}

func newWorld(cs *kubernetes.Clientset, gh *githubtest.Server, check *Checker, seed uint64, maxTenants int, chaosEnd time.Time, logf func(string, ...any)) *world {
	return &world{cs: cs, gh: gh, maxTenants: maxTenants, chaosEnd: chaosEnd, check: check, logf: logf, rng: rand.New(rand.NewPCG(seed, seed^0x50a4)),
		afterRng: rand.New(rand.NewPCG(seed, seed^0xa9e5)),
		tenants:  map[string]*tenant{}, overSince: map[string]time.Time{}, actions: map[string]int{}, ciSeen: map[string]bool{}}
}

func (w *world) count(kind string) {
	w.mu.Lock()
	w.actions[kind]++
	w.mu.Unlock()
}

func tenantDir(ns string) string { return "clusters/" + clusterName + "/" + ns + "/" }

func previewPath(ns, name string) string { return tenantDir(ns) + "previews/" + name + ".yaml" }

func quotaManifest(cpu string) string {
	return `# Team quota. Owned by the platform team; Kustos may raise it through pull requests.
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute   # referenced by the team's runbook
spec:
  hard:
    requests.cpu: "` + cpu + `"   # keep quoted
    pods: "50"
`
}

// previewManifest names its namespace itself: the tenant's kustomization lists only its quota,
// so that the workload's edits of previews never race Kustos's edits of the kustomization.
func previewManifest(ns, name string, expiresAt time.Time) string {
	return previewManifestLabelled(ns, name, expiresAt, "")
}

// previewManifestLabelled is previewManifest with labels (YAML lines under metadata.labels).
func previewManifestLabelled(ns, name string, expiresAt time.Time, labels string) string {
	if labels != "" {
		labels = "  labels:\n" + labels
	}
	return `# A preview environment; it goes away at its deadline unless extended.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + ns + `
` + labels + `  annotations:
    ` + annotationOwner + `: ` + ownerOf(name) + `
    ` + annotationExpiresAt + `: "` + expiresAt.UTC().Format(time.RFC3339) + `"
spec:
  replicas: 0
`
}

func deployment(ns, name string, replicas int32, cpu string, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
			},
		},
	}
}

// step does one random workload action.
func (w *world) step(ctx context.Context) {
	w.mu.Lock()
	n := len(w.tenants)
	r := w.rng.IntN(100)
	w.mu.Unlock()
	var err error
	var kind string
	switch {
	case n < 2 || r < 8:
		kind, err = "tenant-created", w.createTenant(ctx)
	case r < 13:
		kind, err = "tenant-deleted", w.deleteTenant(ctx)
	case r < 25:
		kind, err = "quota-pushed-over", w.pushOverQuota(ctx)
	case r < 57:
		kind, err = "preview-created", w.createPreview(ctx)
	case r < 60:
		kind, err = "preview-opted-out", w.optOutPreview(ctx)
	case r < 78:
		// Half of the extensions go through a warning's link when one has arrived.
		if kind, err = w.extendThroughLink(ctx, r < 69); errors.Is(err, errNothing) {
			kind, err = "preview-extended", w.extendPreview(ctx)
		}
	case r < 89:
		kind, err = "human-closed-pr", w.humanClose()
	default:
		kind, err = "human-pushed-to-pr", w.humanPush("")
	}
	switch {
	case errors.Is(err, errNothing):
	case err != nil:
		w.logf("workload %s: %v", kind, err)
	default:
		w.count(kind)
	}
}

// note logs one workload action on a named object, for reading a failed run afterwards.
func (w *world) note(format string, a ...any) {
	if w.verbose {
		w.logf("workload: "+format, a...)
	}
}

var errNothing = errors.New("nothing to act on")

func (w *world) pickTenant(minAge time.Duration) *tenant {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for ns, t := range w.tenants {
		if time.Since(t.born) >= minAge {
			names = append(names, ns)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return w.tenants[names[w.rng.IntN(len(names))]]
}

func (w *world) createTenant(ctx context.Context) error {
	w.mu.Lock()
	if len(w.tenants) >= w.maxTenants {
		w.mu.Unlock()
		return errNothing
	}
	w.next++
	ns := fmt.Sprintf("t-%03d", w.next)
	w.mu.Unlock()
	dir := tenantDir(ns)
	if err := catch(func() {
		w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add tenant "+ns, map[string]string{
			dir + "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n  - quota.yaml\n",
			dir + "quota.yaml":         quotaManifest("4"),
		})
	}); err != nil {
		return err
	}
	if _, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("4"), "pods": resource.MustParse("50")}}}
	if _, err := w.cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return err
	}
	w.mu.Lock()
	w.tenants[ns] = &tenant{ns: ns, born: time.Now(), previews: map[string]bool{}}
	w.mu.Unlock()
	w.note("tenant %s created", ns)
	return nil
}

func (w *world) deleteTenant(ctx context.Context) error {
	t := w.pickTenant(90 * time.Second)
	if t == nil {
		return errNothing
	}
	w.mu.Lock()
	if len(w.tenants) <= 2 {
		w.mu.Unlock()
		return errNothing
	}
	delete(w.tenants, t.ns)
	delete(w.overSince, t.ns)
	var paths []string
	for p := range t.previews {
		paths = append(paths, previewPath(t.ns, p))
	}
	w.mu.Unlock()
	w.check.ExpectNamespaceGone(t.ns)
	w.note("tenant %s deleted, with previews %v", t.ns, paths)
	if err := w.cs.CoreV1().Namespaces().Delete(ctx, t.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	dir := tenantDir(t.ns)
	return catch(func() {
		w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "remove tenant "+t.ns, nil, append(paths, dir+"kustomization.yaml", dir+"quota.yaml")...)
	})
}

// pushOverQuota gives a tenant a Deployment whose pods do not all fit its quota: the quota
// controller counts them, the ReplicaSet controller reports FailedCreate.
func (w *world) pushOverQuota(ctx context.Context) error {
	t := w.pickTenant(0)
	if t == nil {
		return errNothing
	}
	w.mu.Lock()
	_, already := w.overSince[t.ns]
	w.mu.Unlock()
	if already {
		return errNothing
	}
	if _, err := w.cs.AppsV1().Deployments(t.ns).Create(ctx, deployment(t.ns, "web", 4, "1500m", nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	w.mu.Lock()
	w.overSince[t.ns] = time.Now()
	w.mu.Unlock()
	w.note("tenant %s pushed over its quota", t.ns)
	return nil
}

// deadline is a new random deadline 20 to 60 seconds ahead, no later than 5 seconds before
// the settle period: nothing falls due once the faults have stopped, so that the time the
// system takes to finish what is due measures convergence. ok is false when too little of the
// workload's time is left.
func (w *world) deadline() (time.Time, bool) {
	w.mu.Lock()
	d := time.Duration(20+w.rng.IntN(41)) * time.Second
	w.mu.Unlock()
	now := time.Now()
	exp := now.Add(d)
	if last := w.chaosEnd.Add(-5 * time.Second); exp.After(last) {
		exp = last
	}
	exp = exp.Truncate(time.Second)
	return exp, exp.Sub(now) >= 15*time.Second
}

func (w *world) createPreview(ctx context.Context) error {
	t := w.pickTenant(0)
	if t == nil {
		return errNothing
	}
	exp, ok := w.deadline()
	if !ok {
		return errNothing
	}
	w.mu.Lock()
	w.next++
	name := fmt.Sprintf("p-%03d", w.next)
	w.mu.Unlock()
	now := time.Now()
	if err := catch(func() {
		w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add preview "+name, map[string]string{previewPath(t.ns, name): previewManifest(t.ns, name, exp)})
	}); err != nil {
		return err
	}
	w.check.Deadline(t.ns, name, exp, now)
	w.note("preview %s/%s created, deadline %s", t.ns, name, exp.Format("15:04:05"))
	d := deployment(t.ns, name, 0, "100m", map[string]string{annotationOwner: ownerOf(name), annotationExpiresAt: exp.UTC().Format(time.RFC3339)})
	if _, err := w.cs.AppsV1().Deployments(t.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	w.mu.Lock()
	if w.tenants[t.ns] != nil {
		t.previews[name] = true
	}
	w.mu.Unlock()
	return nil
}

// pickPreview draws a preview of a random tenant among those keep accepts (nil: all) that is
// still in Git, with its manifest's path; errNothing when there is none.
func (w *world) pickPreview(keep func(ns, name string) bool) (t *tenant, name, path string, err error) {
	if t = w.pickTenant(0); t == nil {
		return nil, "", "", errNothing
	}
	w.mu.Lock()
	var all []string
	for p := range t.previews {
		all = append(all, p)
	}
	w.mu.Unlock()
	var names []string
	for _, p := range all {
		if keep == nil || keep(t.ns, p) {
			names = append(names, p)
		}
	}
	if len(names) == 0 {
		return nil, "", "", errNothing
	}
	sort.Strings(names)
	name = names[w.intn(len(names))]
	path = previewPath(t.ns, name)
	if _, ok := w.gh.FileAt(ghOwner, ghRepo, baseBranch, path); !ok {
		return nil, "", "", errNothing // removed by a merged PR; the sync prunes it
	}
	return t, name, path, nil
}

// extendPreview moves a live preview's deadline later, in Git and then in the cluster, at a
// random moment: before its warning, after it, or while its removal PR is open.
func (w *world) extendPreview(ctx context.Context) error {
	t, name, path, err := w.pickPreview(nil)
	if err != nil {
		return err
	}
	if w.check.IsOptedOut(t.ns, name) {
		return errNothing // kept for good: nothing to extend
	}
	exp, ok := w.deadline()
	if cur, known := w.check.CurrentDeadline(t.ns, name); !ok || known && !exp.After(cur) {
		return errNothing // an extension moves the deadline later
	}
	now := time.Now()
	// The deadline counts from the moment it is in Git (the GitOps tool's source) and the
	// cluster: it is recorded before either is written, so a merge racing the write is
	// judged against the checker's grace, not missed.
	w.check.Deadline(t.ns, name, exp, now)
	w.note("preview %s/%s extended to %s", t.ns, name, exp.Format("15:04:05"))
	if err := catch(func() {
		w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "extend preview "+name, map[string]string{path: previewManifest(t.ns, name, exp)})
	}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotationExpiresAt, exp.UTC().Format(time.RFC3339))
	_, err = w.cs.AppsV1().Deployments(t.ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// labelExpiryIgnore opts a target out of the expiry detector.
const labelExpiryIgnore = "kustos.io/expiration-ignore"

// optOutPreview opts a random preview out of expiry (kustos.io/expiration-ignore: "true", in
// Git and then in the cluster), at whatever moment: before its warning, after it, while its
// removal PR is open. From then on it must never be removed.
func (w *world) optOutPreview(ctx context.Context) error {
	t, name, path, err := w.pickPreview(func(ns, name string) bool { return !w.check.IsOptedOut(ns, name) })
	if err != nil {
		return err
	}
	return w.optOut(ctx, t.ns, name, path)
}

// optOut opts preview ns/name, whose manifest is at path, out of expiry: in Git, then in the
// cluster.
func (w *world) optOut(ctx context.Context, ns, name, path string) error {
	exp, ok := w.check.CurrentDeadline(ns, name)
	if !ok {
		return errNothing
	}
	// Recorded before either write, as a deadline is: a merge racing them is judged against
	// the checker's grace.
	w.check.OptOut(ns, name, time.Now())
	w.note("preview %s/%s opted out of expiry", ns, name)
	if err := catch(func() {
		w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "opt preview "+name+" out of expiry",
			map[string]string{path: previewManifestLabelled(ns, name, exp, "    "+labelExpiryIgnore+": \"true\"\n")})
	}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, labelExpiryIgnore)
	_, err := w.cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// kindOptOutAfterRestart is the opt-out the workload aims at the moment just after an API
// server restart: the replicas' watches are being relisted then, and a new leader may be
// taking over with a cache that has not caught up.
const kindOptOutAfterRestart = "preview-opted-out-after-restart"

// afterAPIRestart, told that the API server serves again at at, draws (from an RNG of its own,
// seeded, so that the workload's draws stay those of its RNG seed) whether to opt a preview out 1
// to 5 s later, three times in four: one whose removal is under way (restartOptOutTargets).
// Nothing once ctx, the workload's time, has ended.
func (w *world) afterAPIRestart(ctx context.Context, api *apiServer, at time.Time) {
	w.mu.Lock()
	act := w.afterRng.IntN(4) < 3
	delay := time.Duration(1000+w.afterRng.IntN(4001)) * time.Millisecond
	pick := w.afterRng.IntN(1 << 30)
	w.mu.Unlock()
	if !act {
		return
	}
	time.AfterFunc(delay, func() {
		if ctx.Err() != nil {
			return
		}
		api.act(func() {
			switch err := w.optOutUnderWay(ctx, pick); {
			case errors.Is(err, errNothing):
				w.logf("workload %s: no preview's removal under way %s after the API server came back at %s", kindOptOutAfterRestart,
					time.Since(at).Round(100*time.Millisecond), at.Format("15:04:05.000"))
			case err != nil:
				w.logf("workload %s: %v", kindOptOutAfterRestart, err)
			default:
				w.count(kindOptOutAfterRestart)
			}
		})
	})
}

// optOutUnderWay opts out one of the previews whose removal is under way, still in Git: the
// pick-th, modulo their number.
func (w *world) optOutUnderWay(ctx context.Context, pick int) error {
	now := time.Now()
	var live []removalState
	for _, s := range restartOptOutTargets(w.check.RemovalStates(), now) {
		w.mu.Lock()
		t := w.tenants[s.ns]
		ok := t != nil && t.previews[s.name]
		w.mu.Unlock()
		if _, inGit := w.gh.FileAt(ghOwner, ghRepo, baseBranch, previewPath(s.ns, s.name)); ok && inGit {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return errNothing
	}
	s := live[pick%len(live)]
	w.logf("workload %s: preview %s/%s (deadline %s, removal proposed by an open PR: %v)", kindOptOutAfterRestart,
		s.ns, s.name, s.deadline.Format("15:04:05"), s.proposed)
	return w.optOut(ctx, s.ns, s.name, previewPath(s.ns, s.name))
}

// removalState is where a preview's removal stands, as the checker saw it.
type removalState struct {
	ns, name string
	deadline time.Time // the one in force
	proposed bool      // an open PR's head lacks its manifest
}

// restartOptOutTargets are the previews of states whose removal is under way at now: those an
// open PR proposes removing, or, when there are none, those past their deadline (their removal
// about to be proposed); by namespace and name.
func restartOptOutTargets(states []removalState, now time.Time) []removalState {
	var proposed, due []removalState
	for _, s := range states {
		switch {
		case s.proposed:
			proposed = append(proposed, s)
		case !s.deadline.After(now):
			due = append(due, s)
		}
	}
	out := proposed
	if len(out) == 0 {
		out = due
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ns != out[j].ns {
			return out[i].ns < out[j].ns
		}
		return out[i].name < out[j].name
	})
	return out
}

func (w *world) intn(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

func (w *world) openPRs() []githubtest.PullRequest {
	var out []githubtest.PullRequest
	for _, p := range w.gh.PRs(ghOwner, ghRepo) {
		if p.State == "open" {
			out = append(out, p)
		}
	}
	return out
}

// humanClose closes a random open Kustos PR, as a reviewer who declines it.
func (w *world) humanClose() error {
	open := w.openPRs()
	if len(open) == 0 {
		return errNothing
	}
	p := open[w.intn(len(open))]
	w.note("the human closes #%d %s", p.Number, p.Head)
	w.check.HumanClosed(p.Head, time.Now())
	return catch(func() { w.gh.ClosePR(ghOwner, ghRepo, p.Number) })
}

// humanPush pushes a commit of a human's onto a random open Kustos PR's branch (onto branch if
// given): a file outside the cluster's path, so nothing of Kustos's conflicts with it.
func (w *world) humanPush(branch string) error {
	if branch == "" {
		open := w.openPRs()
		if len(open) == 0 {
			return errNothing
		}
		branch = open[w.intn(len(open))].Head
	}
	if w.gh.BranchSHA(ghOwner, ghRepo, branch) == "" {
		return errNothing
	}
	var sha string
	now := time.Now()
	if err := catch(func() {
		sha = w.gh.PushBaseCommit(ghOwner, ghRepo, branch, "a reviewer's note", map[string]string{
			"notes/" + fmt.Sprint(now.UnixNano()) + ".md": "Reviewed by a human.\n"})
	}); err != nil {
		return err
	}
	w.check.HumanPushed(branch, sha, now)
	w.note("the human pushed %s onto %s", short(sha), branch)
	return nil
}

// breakOverwrite is the deliberately broken mode: the fake human pushes onto a Kustos branch
// and then force-moves the branch back over its own commit, which invariant 6 must catch.
func (w *world) breakOverwrite(ctx context.Context) error {
	open := w.openPRs()
	if len(open) == 0 {
		return errNothing
	}
	p := open[0]
	before := w.gh.BranchSHA(ghOwner, ghRepo, p.Head)
	if err := w.humanPush(p.Head); err != nil {
		return err
	}
	// A force-push through the REST API, as any client holding a token can make.
	gh, err := github.NewClient(nil).WithAuthToken(w.gh.Token()).WithEnterpriseURLs(w.gh.URL(), w.gh.URL())
	if err != nil {
		return err
	}
	_, _, err = gh.Git.UpdateRef(ctx, ghOwner, ghRepo, &github.Reference{Ref: github.String("refs/heads/" + p.Head),
		Object: &github.GitObject{SHA: github.String(before)}}, true)
	return err
}

// tidy: the human who pushed onto a PR's branch closes it after a while, as a reviewer who
// took the change over by hand would; Kustos leaves such a PR alone, and it must not hold a
// place under --max-open-prs for the rest of the run.
func (w *world) tidy() {
	for _, p := range w.openPRs() {
		if at, ok := w.check.TouchedAt(p.Head); ok && at.After(p.Created) && time.Since(at) > 45*time.Second {
			w.check.HumanClosed(p.Head, time.Now())
			if catch(func() { w.gh.ClosePR(ghOwner, ghRepo, p.Number) }) == nil {
				w.count("human-closed-own-pr")
			}
		}
	}
}

// ci is the repository's CI: it reports the required check as passed on every new PR head, a
// few seconds after it appears.
func (w *world) ci(ctx context.Context) {
	for _, p := range w.openPRs() {
		w.mu.Lock()
		seen := w.ciSeen[p.HeadSHA]
		w.ciSeen[p.HeadSHA] = true
		delay := time.Duration(1+w.rng.IntN(6)) * time.Second
		w.mu.Unlock()
		if seen {
			continue
		}
		sha := p.HeadSHA
		time.AfterFunc(delay, func() {
			if ctx.Err() == nil {
				_ = catch(func() { w.gh.SetCheck(ghOwner, ghRepo, sha, requiredCheck, "success") })
			}
		})
	}
}

// sync is the GitOps tool: it applies each tenant's quota from the base branch and prunes the
// previews whose manifest a merged PR removed.
func (w *world) sync(ctx context.Context) {
	w.mu.Lock()
	type item struct{ ns, name string }
	var previews []item
	var tenants []string
	for ns, t := range w.tenants {
		tenants = append(tenants, ns)
		for p := range t.previews {
			previews = append(previews, item{ns, p})
		}
	}
	w.mu.Unlock()
	for _, ns := range tenants {
		text, ok := w.gh.FileAt(ghOwner, ghRepo, baseBranch, tenantDir(ns)+"quota.yaml")
		if !ok {
			continue
		}
		var q corev1.ResourceQuota
		if err := yaml.Unmarshal([]byte(text), &q); err != nil {
			w.logf("sync: %s quota.yaml: %v", ns, err)
			continue
		}
		cur, err := w.cs.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
		if err != nil {
			continue
		}
		want, have := q.Spec.Hard[corev1.ResourceRequestsCPU], cur.Spec.Hard[corev1.ResourceRequestsCPU]
		if want.IsZero() || want.Cmp(have) == 0 {
			continue
		}
		cur.Spec.Hard[corev1.ResourceRequestsCPU] = want
		if _, err := w.cs.CoreV1().ResourceQuotas(ns).Update(ctx, cur, metav1.UpdateOptions{}); err == nil {
			w.count("sync-quota-applied")
		}
	}
	for _, p := range previews {
		if _, ok := w.gh.FileAt(ghOwner, ghRepo, baseBranch, previewPath(p.ns, p.name)); ok {
			continue
		}
		w.check.ExpectDelete(p.ns, p.name)
		err := w.cs.AppsV1().Deployments(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		w.mu.Lock()
		if t := w.tenants[p.ns]; t != nil {
			delete(t.previews, p.name)
		}
		w.mu.Unlock()
		w.count("sync-preview-pruned")
	}
}

func (w *world) overQuota() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]time.Time{}
	for k, v := range w.overSince {
		out[k] = v
	}
	return out
}

func (w *world) actionCounts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.actions {
		out[k] = v
	}
	return out
}

// extendThroughLink is the owner extending a preview through its warning (when try and a
// warning about the preview's current deadline has arrived): GET on one of its links, then
// POST of the page's form, at whatever moment (the removal PR may be open), and the same POST
// once more, which must be refused as a used link. errNothing: no preview to extend so.
func (w *world) extendThroughLink(ctx context.Context, try bool) (string, error) {
	const kind = "preview-extended-link"
	if !try || w.mail == nil {
		return kind, errNothing
	}
	t := w.pickTenant(0)
	if t == nil {
		return kind, errNothing
	}
	w.mu.Lock()
	var names []string
	for p := range t.previews {
		names = append(names, p)
	}
	w.mu.Unlock()
	sort.Strings(names)
	if len(names) == 0 {
		return kind, errNothing
	}
	name := names[w.intn(len(names))]
	cur, ok := w.check.CurrentDeadline(t.ns, name)
	if !ok {
		return kind, errNothing
	}
	id, ok := w.check.WarningMail(t.ns, name, cur)
	if !ok {
		return kind, errNothing
	}
	text, err := w.mail.text(ctx, id)
	if err != nil {
		return kind, err
	}
	// A link whose new deadline falls before the settle period, as the workload's own do.
	var links []string
	for _, l := range extendLinks(text) {
		d, err := linkPeriod(l)
		if err == nil && maxTime(cur, time.Now()).Add(d+time.Second).Before(w.chaosEnd.Add(-5*time.Second)) {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		return kind, errNothing
	}
	link := links[w.intn(len(links))]
	code, _, err := w.owner.retrying(ctx, http.MethodGet, link)
	if err != nil || code != http.StatusOK {
		w.note("the owner's GET of %s/%s's link: %d %v", t.ns, name, code, err)
		return kind + "-refused", nil
	}
	set := time.Now()
	code, body, err := w.owner.retrying(ctx, http.MethodPost, link)
	if err != nil || code != http.StatusOK {
		// Refused (the removal happened, or another link was used): nothing changed.
		w.note("the owner's POST of %s/%s's link: %d %v", t.ns, name, code, err)
		return kind + "-refused", nil
	}
	until, err := extendedUntil(body)
	if err != nil {
		return kind, err
	}
	w.check.Deadline(t.ns, name, until, set)
	w.note("preview %s/%s extended through its link to %s", t.ns, name, until.Format("15:04:05"))
	code, _, err = w.owner.retrying(ctx, http.MethodPost, link)
	if err != nil {
		return kind, fmt.Errorf("replaying %s/%s's link: %w", t.ns, name, err)
	}
	w.check.LinkReplayed(t.ns, name, code, time.Now())
	return kind, nil
}
