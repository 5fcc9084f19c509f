package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// cleanerLabel is on every object a Cleaner of the workload names: the deletion watch follows
// exactly those.
const cleanerLabel = "soak.kustos.io/cleaner"

// cleanerAuthorKey signs the author stamps of the workload's Cleaners, as Kustos's admission
// webhook would (the soak runs none): Kustos verifies them with --cleaner-author-key-file.
const cleanerAuthorKey = "soak-cleaner-author-key-0123456789abcdef0123456789"

// cleanerArgs are the replicas' flags of the Cleaner detector: its author key, and --allow for
// exactly the kinds the workload's Cleaners may delete directly (ConfigMaps only in the
// cluster, and the Cleaners themselves, as the chart always allows); Secrets are left out, so
// that the Cleaners' Secrets must stay.
func cleanerArgs(authorKeyFile string) []string {
	return []string{
		"--enable-cleaners=true", "--cleaner-author-key-file=" + authorKeyFile,
		"--allow=cleaner:delete:configmaps,cleaner:delete:kustos.io/cleaners",
	}
}

// cleanerCRDs is the directory of the Cleaner CRD the chart installs.
func cleanerCRDs() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "kustos", "files", "crds"), nil
}

// cleaners is the Cleaners' part of the workload: a tenant gets a Cleaner that falls due 10
// to 30 s later, over ConfigMaps and Secrets of its own made for it, and the GitOps tool
// prunes the ConfigMaps whose manifest a merged PR removed.
type cleaners struct {
	w      *world
	kc     client.Client
	signer *authorship.Signer
	author authorship.Author

	mu   sync.Mutex
	rng  *rand.Rand
	made int
	git  []ephObject // ConfigMaps Git defines, not yet pruned
}

// maxCleaners bounds the Cleaners of a run: each may cost a pull request, on top of the
// previews' and quotas' that maxActions keeps within GitHub's hourly content limit.
const maxCleaners = 12

func newCleaners(ctx context.Context, cfg *rest.Config, cs *kubernetes.Clientset, w *world, seed uint64) (*cleaners, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	kc, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	signer, err := authorship.NewSigner([]byte(cleanerAuthorKey))
	if err != nil {
		return nil, err
	}
	// The author is the soak's own user, exactly as the API server authenticates it: Kustos
	// asks a SubjectAccessReview for it before each deletion.
	me, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("who am I: %w", err)
	}
	return &cleaners{w: w, kc: kc, signer: signer, author: authorship.FromUserInfo(me.Status.UserInfo),
		rng: rand.New(rand.NewPCG(seed, seed^0xc1ea)), git: nil}, nil
}

func (c *cleaners) intn(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.IntN(n)
}

func scratchPath(ns, name string) string { return tenantDir(ns) + "scratch/" + name + ".yaml" }

// scratchManifest names its namespace itself, as a preview's does.
func scratchManifest(ns, name, cleaner string) string {
	return `# Scratch data of a pipeline run; its Cleaner removes it.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  labels:
    ` + cleanerLabel + `: ` + cleaner + `
data:
  run: "` + cleaner + `"
`
}

// step gives a tenant a Cleaner, one time in four over a Secret only in the cluster (a kind
// --allow does not name), else over a ConfigMap Git defines (two times in three) and one only
// in the cluster (two in three), at least one of them; all deleted when it falls due (no
// conditions: at its TTL).
func (c *cleaners) step(ctx context.Context) {
	w := c.w
	w.mu.Lock()
	var names []string
	for ns := range w.tenants {
		names = append(names, ns)
	}
	w.mu.Unlock()
	c.mu.Lock()
	enough := c.made >= maxCleaners
	c.mu.Unlock()
	if len(names) == 0 || enough {
		return
	}
	sort.Strings(names)
	ns := names[c.intn(len(names))]
	ttl := time.Duration(10+c.intn(21)) * time.Second
	// Nothing falls due in the settle period (as a preview's deadline).
	if time.Now().Add(ttl + 2*time.Second).After(w.chaosEnd.Add(-5 * time.Second)) {
		return
	}
	// A Secret goes in a Cleaner of its own: refused, it never joins the Cleaner's pull
	// request, which then waits the whole gathering window (a minute) for it, and so would
	// the deletions of the others.
	refused := c.intn(4) == 0
	withGit, direct := !refused && c.intn(3) < 2, !refused && c.intn(3) < 2
	if !refused && !withGit && !direct {
		direct = true
	}
	w.mu.Lock()
	w.next++
	name := fmt.Sprintf("c-%03d", w.next)
	w.mu.Unlock()
	if err := c.create(ctx, ns, name, ttl, withGit, direct, refused); err != nil {
		w.logf("workload cleaner-created %s/%s: %v", ns, name, err)
		return
	}
	c.mu.Lock()
	c.made++
	c.mu.Unlock()
	w.count("cleaner-created")
	w.note("Cleaner %s/%s created, due in %s (in Git %v, cluster only %v, not allowed %v)", ns, name, ttl, withGit, direct, refused)
}

func (c *cleaners) create(ctx context.Context, ns, name string, ttl time.Duration, withGit, direct, refused bool) error {
	w := c.w
	labels := map[string]string{cleanerLabel: name}
	f := false
	var targets []v1alpha1.Target
	target := func(variable, kind, obj string) {
		targets = append(targets, v1alpha1.Target{Name: variable, Delete: true, IncludeWhenEvaluating: &f,
			Reference: v1alpha1.Reference{Version: "v1", Kind: kind, Name: obj}})
	}
	if withGit {
		obj := name + "-git"
		w.check.CleanerTarget("ConfigMap", ns, obj, name, ephGit)
		if err := catch(func() {
			w.gh.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add scratch "+obj, map[string]string{scratchPath(ns, obj): scratchManifest(ns, obj, name)})
		}); err != nil {
			return err
		}
		if _, err := w.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj, Labels: labels},
			Data: map[string]string{"run": name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		c.mu.Lock()
		c.git = append(c.git, ephObject{kind: "ConfigMap", ns: ns, name: obj})
		c.mu.Unlock()
		target("git", "ConfigMap", obj)
	}
	if direct {
		obj := name + "-scratch"
		w.check.CleanerTarget("ConfigMap", ns, obj, name, ephDirect)
		if _, err := w.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj, Labels: labels}},
			metav1.CreateOptions{}); err != nil {
			return err
		}
		target("scratch", "ConfigMap", obj)
	}
	if refused {
		obj := name + "-keep"
		w.check.CleanerTarget("Secret", ns, obj, name, ephRefused)
		if _, err := w.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj, Labels: labels}},
			metav1.CreateOptions{}); err != nil {
			return err
		}
		target("keep", "Secret", obj)
	}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CleanerSpec{TTL: ttl.String(), Retry: v1alpha1.Retry{Period: "1h"}, Targets: targets}}
	// The stamp signs the spec as the API server stores it, with the defaults a dry run fills in.
	dry := cl.DeepCopy()
	if err := c.kc.Create(ctx, dry, client.DryRunAll); err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	digest, err := authorship.SpecDigest(dry.Spec)
	if err != nil {
		return err
	}
	stamp, err := c.signer.Sign(ns, name, digest, c.author, time.Now())
	if err != nil {
		return err
	}
	cl.Annotations = map[string]string{authorship.StampAnnotation: stamp}
	created := time.Now()
	err = c.kc.Create(ctx, cl)
	if err != nil {
		// An answer lost on the way may hide a Cleaner that was made: it is judged if it is there.
		if c.kc.Get(ctx, client.ObjectKeyFromObject(cl), &v1alpha1.Cleaner{}) != nil {
			return err
		}
	}
	w.check.Cleaner(ns, name, created, ttl)
	return err
}

// sync is the GitOps tool for the Cleaners' ConfigMaps: one whose manifest a merged PR removed
// from the base branch is pruned.
func (c *cleaners) sync(ctx context.Context) {
	c.mu.Lock()
	objs := append([]ephObject(nil), c.git...)
	c.mu.Unlock()
	var left []ephObject
	for _, o := range objs {
		if _, ok := c.w.gh.FileAt(ghOwner, ghRepo, baseBranch, scratchPath(o.ns, o.name)); ok {
			left = append(left, o)
			continue
		}
		c.w.check.ExpectDeleteObject(o.kind, o.ns, o.name)
		err := c.w.cs.CoreV1().ConfigMaps(o.ns).Delete(ctx, o.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			left = append(left, o)
			continue
		}
		c.w.count("sync-scratch-pruned")
	}
	c.mu.Lock()
	// Keep what was added meanwhile.
	c.git = append(left, c.git[len(objs):]...)
	c.mu.Unlock()
}

// observe lists the Cleaners for the checker: their statuses, and which are still there.
func (c *cleaners) observe(ctx context.Context) {
	var list v1alpha1.CleanerList
	if err := c.kc.List(ctx, &list); err != nil {
		return
	}
	now := time.Now()
	out := make([]CleanerStatus, 0, len(list.Items))
	for _, cl := range list.Items {
		ev := cl.Status.LastEvaluation
		done := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepActionsDone)
		out = append(out, CleanerStatus{Namespace: cl.Namespace, Name: cl.Name, Due: ev != nil && ev.Due,
			Blocked: done != nil && done.Status == metav1.ConditionFalse && done.Reason == ephemeral.ReasonCleanupBlocked})
	}
	c.w.check.ObserveCleaners(now, out)
}

// cleanerEvery is the time between two Cleaners: every second tick, or slower, so that the
// workload's maxCleaners are spread over its whole period.
func cleanerEvery(tick, workload time.Duration) time.Duration {
	return max(2*tick, workload/maxCleaners)
}

// watchCleanerTargets reports the deletion of every object a Cleaner of the workload names
// (its label) to check, until ctx ends.
func watchCleanerTargets(ctx context.Context, cs *kubernetes.Clientset, check *Checker) error {
	inf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = cleanerLabel
	}))
	handler := func(kind string) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if m, err := metaOf(obj); err == nil {
				check.DeletedObject(kind, m.GetNamespace(), m.GetName(), time.Now())
			}
		}}
	}
	if _, err := inf.Core().V1().ConfigMaps().Informer().AddEventHandler(handler("ConfigMap")); err != nil {
		return err
	}
	if _, err := inf.Core().V1().Secrets().Informer().AddEventHandler(handler("Secret")); err != nil {
		return err
	}
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	return nil
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}
