package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/egress"
	extsrv "github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/notify/mailpittest"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// Short lifetimes: warned 2 s before the deadline, never acted on less than 3 s after the warning.
const (
	expiryWarningBefore = 2 * time.Second
	expiryInterval      = 3 * time.Second
)

func expiryOptions(o *app.Options) {
	o.Expiry = app.ExpiryOptions{Options: expiry.Options{Enabled: true, Kinds: []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}},
		Settings: expiry.Settings{WarningBefore: expiryWarningBefore, NotificationInterval: expiryInterval}}}
}

// newEnvironment creates a Deployment (no replicas: no pods needed) with annotations.
func newEnvironment(t *testing.T, ns, name string, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	return newEnvironmentOf(t, ns, name, 0, annotations)
}

func newEnvironmentOf(t *testing.T, ns, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	d := deploymentOf(ns, name, replicas, "100m")
	d.Annotations = annotations
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatalf("creating deployment %s/%s: %v", ns, name, err)
	}
	return d
}

func deploymentExists(t *testing.T, ns, name string) bool {
	t.Helper()
	var d appsv1.Deployment
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.DeletionTimestamp == nil
}

// TestExpiryObserverMode: an environment with an owner and a 4 s lifetime gets one
// ExpiryWarning, then one ExpiryDue, and stays; one with an unusable ttl gets one
// InvalidExpiryMetadata Event naming the key and is left alone; one without an owner is an
// orphan (no Event); one whose ttl is never is kept on purpose (no Event, no orphan); a
// namespace that opted out gets nothing.
func TestExpiryObserverMode(t *testing.T) {
	ns := newNamespace(t, "expiry-observe", nil)
	optedOut := newNamespace(t, "expiry-optout", map[string]string{expiry.LabelIgnore: "true"})
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s"})
	newEnvironment(t, ns, "typo", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "five days"})
	newEnvironment(t, ns, "orphan", map[string]string{expiry.AnnotationTTL: "1s"})
	newEnvironment(t, ns, "kept", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "never"})
	newEnvironment(t, optedOut, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "1s"})
	k := startKustos(t, expiryOptions)
	dumpOnFailure(t, k)

	warn := waitEvents(t, ns, expiry.ReasonExpiryWarning, 1)[0]
	if warn.InvolvedObject.Name != "preview" || !strings.Contains(warn.Message, "owner ana@example.com") || !strings.Contains(warn.Message, `kustos.io/ttl="4s"`) {
		t.Errorf("warning: %s %s", warn.InvolvedObject.Name, warn.Message)
	}
	due := waitEvents(t, ns, expiry.ReasonExpiryDue, 1)[0]
	if gap := due.LastTimestamp.Sub(warn.LastTimestamp.Time); gap < expiryInterval-time.Second {
		t.Errorf("ExpiryDue %s after the warning, want at least the interval %s", gap, expiryInterval)
	}
	bad := waitEvents(t, ns, expiry.ReasonInvalidExpiry, 1)[0]
	if bad.InvolvedObject.Name != "typo" || !strings.Contains(bad.Message, `kustos.io/ttl="five days"`) {
		t.Errorf("invalid metadata event: %s %s", bad.InvolvedObject.Name, bad.Message)
	}
	never(t, ns, expiry.ReasonExpiryWarning, 1, 3*time.Second)
	never(t, ns, expiry.ReasonExpiryDue, 1, 0)
	never(t, ns, expiry.ReasonInvalidExpiry, 1, 0) // the typo's only: ttl never is a lifetime
	for _, r := range []string{expiry.ReasonExpiryWarning, expiry.ReasonExpiryDue, expiry.ReasonExpired} {
		if evs := kustosEvents(t, optedOut, r); len(evs) > 0 {
			t.Errorf("opted-out namespace got %s: %v", r, messages(evs))
		}
	}
	for _, name := range []string{"preview", "typo", "orphan", "kept"} {
		if !deploymentExists(t, ns, name) {
			t.Errorf("observer mode deleted %s", name)
		}
	}
	if evs := kustosEvents(t, ns, expiry.ReasonExpiryWarning); len(evs) != 1 || evs[0].InvolvedObject.Name != "preview" {
		t.Errorf("warnings: %v", messages(evs))
	}

	// kustos status --orphans: the orphan (no owner) and the typo (unusable ttl) are listed,
	// the preview, the kept one and everything in the opted-out namespace are not; the gauge
	// counts orphans.
	rows, err := orphans.List(context.Background(), k8s, []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}},
		expiry.DefaultSettings(), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]orphans.Row{}
	for _, r := range rows {
		if strings.Contains(r.Target, "/"+ns+"/") || strings.Contains(r.Target, "/"+optedOut+"/") {
			got[r.Target] = r
		}
	}
	if r, ok := got["Deployment.apps/"+ns+"/orphan"]; !ok || strings.Join(r.Missing, ",") != "owner" {
		t.Errorf("orphan row: %+v (rows %+v)", r, got)
	}
	if r, ok := got["Deployment.apps/"+ns+"/typo"]; !ok || !strings.Contains(r.Problem, "five days") {
		t.Errorf("typo row: %+v", r)
	}
	if len(got) != 2 {
		t.Errorf("rows in the test's namespaces: %+v, want orphan and typo only (kept has a lifetime: never)", got)
	}
	var m dto.Metric
	if err := metrics.ExpiryOrphans.WithLabelValues("Deployment.apps").Write(&m); err != nil {
		t.Fatal(err)
	}
	if v := m.GetGauge().GetValue(); v < 1 {
		t.Errorf("kustos_expiry_orphans{kind=Deployment.apps} = %v, want at least the orphan", v)
	}
}

// TestExpiryDirect: in direct mode the environment is deleted at its deadline but not before
// the interval after its warning; the owner is told once; the namespace's own ttl and owner
// apply to what names none; a pause scales to zero instead.
func TestExpiryDirect(t *testing.T) {
	ns := newNamespace(t, "expiry-direct", map[string]string{expiry.AnnotationOwner: "team@example.com", expiry.AnnotationTTL: "1h"})
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s"})
	newEnvironmentOf(t, ns, "paused", 2, map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s", expiry.AnnotationOnExpiry: "pause"})
	newEnvironment(t, ns, "long", nil) // the namespace's 1h: warned much later
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
	})
	dumpOnFailure(t, k)

	eventually(t, "preview deleted", func() bool { return !deploymentExists(t, ns, "preview") })
	gone := time.Now()
	var warnedAt time.Time
	for _, e := range kustosEvents(t, ns, expiry.ReasonExpiryWarning) {
		if e.InvolvedObject.Name == "preview" {
			warnedAt = e.LastTimestamp.Time
		}
	}
	if warnedAt.IsZero() {
		t.Fatal("preview was deleted without a warning")
	}
	if gone.Sub(warnedAt) < expiryInterval-time.Second { // Event timestamps have second precision
		t.Errorf("deleted %s after the warning, want at least %s", gone.Sub(warnedAt), expiryInterval)
	}
	eventually(t, "the owner told preview and paused expired", func() bool { return len(kustosEvents(t, ns, expiry.ReasonExpired)) == 2 })
	var paused appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "paused"}, &paused); err != nil {
		t.Fatalf("the paused environment: %v", err)
	}
	if paused.Spec.Replicas == nil || *paused.Spec.Replicas != 0 {
		t.Errorf("paused replicas = %v, want 0", paused.Spec.Replicas)
	}
	if !deploymentExists(t, ns, "long") {
		t.Error("the environment with the namespace's 1h lifetime was deleted")
	}
	never(t, ns, expiry.ReasonExpired, 2, 2*time.Second)
	// The state of the deleted environment is in its Lease, not on the object.
	var leases coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &leases, client.InNamespace(k.opts.StateNamespace)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range leases.Items {
		if l.Annotations["kustos.io/key"] == "expiry/Deployment.apps/"+ns+"/preview" {
			found = l.Annotations["bag.kustos.io/warned-at"] != ""
		}
	}
	if !found {
		t.Error("no state Lease with warned-at for the deleted environment")
	}
}

// TestExpiryPRMode: an environment defined in Git is removed by one pull request after its
// warning; merged by Kustos when auto-merge is on.
func TestExpiryPRMode(t *testing.T) {
	ns := newNamespace(t, "expiry-pr", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the preview", "preview.yaml", "# the preview environment of PR 42\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: preview\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/ttl: 3s\nspec:\n  replicas: 0\n")
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s"})
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		expiryOptions(o)
	}))
	dumpOnFailure(t, k)

	p := g.waitPR(t, "the removal PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if !strings.Contains(p.Head, "expiry") || !strings.Contains(p.Body, "ana@example.com") {
		t.Errorf("PR head %q, body:\n%s", p.Head, p.Body)
	}
	if _, ok := g.s.FileAt(ghOwner, ghRepo, "main", dir+"preview.yaml"); ok {
		t.Error("preview.yaml is still in the base branch after the merge")
	}
	warn := waitEvents(t, ns, expiry.ReasonExpiryWarning, 1)[0]
	proposed := waitEvents(t, ns, expiry.ReasonProposed, 1)[0]
	if proposed.LastTimestamp.Sub(warn.LastTimestamp.Time) < expiryInterval-time.Second {
		t.Errorf("PR proposed %s after the warning, want at least %s", proposed.LastTimestamp.Sub(warn.LastTimestamp.Time), expiryInterval)
	}
	// Merged; the GitOps tool has not synced yet: the object is still there and no second PR comes.
	if !deploymentExists(t, ns, "preview") {
		t.Error("PR mode deleted the Git-managed environment itself")
	}
	waitEvents(t, ns, expiry.ReasonExpired, 1)
	g.onePR(t, 2*time.Second)
	// The leader logs its GitHub writes, so that its successor paces from them too.
	eventually(t, "the REST writes in the log of GitHub writes", func() bool {
		var l coordinationv1.Lease
		if k8s.Get(context.Background(), client.ObjectKey{Namespace: k.opts.StateNamespace, Name: state.WriteLogLease}, &l) != nil {
			return false
		}
		writes := g.s.CountRequests("POST", "") + g.s.CountRequests("PATCH", "") + g.s.CountRequests("PUT", "") + g.s.CountRequests("DELETE", "")
		return len(strings.Fields(l.Annotations[state.AnnotationWrites])) >= writes
	})
}

// TestExpiryDeleteNotAllowed: deletions and pauses are opt-ins per detector and kind (--allow).
// With neither, in PR mode an expired environment defined in Git still gets its removal pull
// request (which needs no cluster right), one that no manifest defines is left in place with a
// DeleteNotAllowed Warning Event naming the flag, and one due for a pause keeps running with a
// PauseNotAllowed Warning Event.
func TestExpiryDeleteNotAllowed(t *testing.T) {
	ns := newNamespace(t, "expiry-nodelete", nil)
	g := newGitOps(t, ns)
	g.addManifest("add the preview", "preview.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: preview\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/ttl: 3s\nspec:\n  replicas: 0\n")
	expiring := map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s"}
	newEnvironment(t, ns, "preview", expiring)
	newEnvironment(t, ns, "orphan", expiring)
	newEnvironmentOf(t, ns, "paused", 2, map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s", expiry.AnnotationOnExpiry: "pause"})
	k := startKustos(t, g.prMode(func(o *app.Options) {
		expiryOptions(o)
		o.Allow = allow.Policy{} // nothing, as the flags' default
	}))
	dumpOnFailure(t, k)

	g.waitPR(t, "the preview's removal PR", func(p githubtest.PullRequest) bool { return strings.Contains(p.Body, "/preview`") })
	refused := waitEvents(t, ns, pipeline.ReasonDeleteNotAllowed, 1)[0]
	if refused.InvolvedObject.Name != "orphan" || refused.Type != corev1.EventTypeWarning ||
		!strings.Contains(refused.Message, "--allow-delete=expiry:apps/deployments") {
		t.Errorf("DeleteNotAllowed Event about %s (%s): %s", refused.InvolvedObject.Name, refused.Type, refused.Message)
	}
	unpaused := waitEvents(t, ns, pipeline.ReasonPauseNotAllowed, 1)[0]
	if unpaused.InvolvedObject.Name != "paused" || unpaused.Type != corev1.EventTypeWarning ||
		!strings.Contains(unpaused.Message, "--allow=expiry:pause:apps/deployments") {
		t.Errorf("PauseNotAllowed Event about %s (%s): %s", unpaused.InvolvedObject.Name, unpaused.Type, unpaused.Message)
	}
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "paused"}, &d); err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("paused without --allow: %v, replicas %v", err, d.Spec.Replicas)
	}
	if !deploymentExists(t, ns, "orphan") || !deploymentExists(t, ns, "preview") {
		t.Error("an environment was deleted without --allow")
	}
	if len(k.logs.records(t, "change cannot be carried out")) == 0 {
		t.Error("the refusal was not logged")
	}
}

// TestExpiryPRWithdrawn: the removal PR of an expired preview is open (no auto-merge yet) when
// its owner gives it a longer lifetime where it is declared (kustos.io/ttl, synced to the
// cluster). Kustos closes the removal PR itself, with a comment saying why, instead of leaving a
// deletion nobody wants any more for someone (or auto-merge) to merge; no decline is recorded.
func TestExpiryPRWithdrawn(t *testing.T) {
	ns := newNamespace(t, "expiry-withdrawn", nil)
	g := newGitOps(t, ns)
	g.addManifest("add the preview", "preview.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: preview\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/ttl: 3s\nspec:\n  replicas: 0\n")
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s"})
	k := startKustos(t, g.prMode(expiryOptions))
	dumpOnFailure(t, k)
	p := g.waitPR(t, "the removal PR", func(p githubtest.PullRequest) bool { return p.State == "open" })

	// The owner wants it for a day more: the new TTL reaches the cluster (as the GitOps tool
	// would sync it).
	setTTL(t, ns, "preview", "1d")
	closed := g.waitPR(t, "the removal PR closed by Kustos", func(q githubtest.PullRequest) bool { return q.Number == p.Number && q.State == "closed" })
	if closed.Merged || len(closed.Comments) != 1 || !strings.HasPrefix(closed.Comments[0], "Kustos closes this pull request because Deployment.apps/"+ns+"/preview is not due before") {
		t.Errorf("merged %v, comments %q", closed.Merged, closed.Comments)
	}
	waitEvents(t, ns, pipeline.ReasonWithdrawn, 1)
	g.onePR(t, 2*time.Second)
	never(t, ns, expiry.ReasonDeclined, 0, time.Second)
	if !deploymentExists(t, ns, "preview") {
		t.Error("the preview is gone")
	}
}

// setTTL gives the Deployment ns/name the lifetime ttl, as the GitOps tool syncs a new
// kustos.io/ttl from Git.
func setTTL(t *testing.T, ns, name, ttl string) {
	t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Annotations[expiry.AnnotationTTL] = ttl
	if err := k8s.Patch(context.Background(), &d, patch); err != nil {
		t.Fatal(err)
	}
}

// noticeSink is a webhook receiver that keeps the Notices it is sent.
type noticeSink struct {
	url string
	mu  sync.Mutex
	got []lifecycle.Notice
}

func startNoticeSink(t *testing.T) *noticeSink {
	t.Helper()
	s := &noticeSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n lifecycle.Notice
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || r.Header.Get("Idempotency-Key") != n.ID {
			http.Error(w, "bad notice", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, n)
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/hook"
	return s
}

func (s *noticeSink) notices(kind string) []lifecycle.Notice {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []lifecycle.Notice
	for _, n := range s.got {
		if n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

// extension is a free loopback address and a signing key for an extension server.
type extension struct{ addr, keyFile string }

func extensionServer(t *testing.T) extension {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("e2e-extension-key-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return extension{addr: freeAddr(t), keyFile: keyFile}
}

// options serve links for periods, at most 5 minutes.
func (e extension) options(periods []string) extsrv.Options {
	return extsrv.Options{Addr: e.addr, URL: "http://" + e.addr, Periods: periods, Max: 5 * time.Minute, KeyFile: e.keyFile}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestExpiryExtension: the warning reaches the owner's webhook with one link per period; GET
// on a link changes nothing; POST extends; the extension is written back onto the object
// (direct mode: it is not in Git) as kustos.io/expires-at; the environment outlives its old
// deadline; the used link, an edited period and a forged token are refused.
func TestExpiryExtension(t *testing.T) {
	ns := newNamespace(t, "expiry-extend", nil)
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	addr := ext.addr
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s"})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		o.Expiry.Extension = ext.options([]string{"1m", "2m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	})
	dumpOnFailure(t, k)

	var warning lifecycle.Notice
	eventually(t, "the warning at the webhook", func() bool {
		ns := sink.notices(expiry.NoticeWarning)
		if len(ns) > 0 {
			warning = ns[0]
		}
		return len(ns) > 0
	})
	if warning.To != "ana@example.com" || len(warning.Links) != 2 || warning.Target.Name != "preview" {
		t.Fatalf("warning notice: %+v", warning)
	}
	// The owner's page: a link of its own, not spelling the owner out, listing the warned
	// environment with its extend links.
	if p := warning.OwnerPage; p == nil || p.Label != extsrv.OwnerPageLabel || !strings.Contains(p.URL, "/environment/?token=") ||
		strings.Contains(p.URL, "ana") || !p.Expires.Equal(warning.At.Add(expiry.LinkGrace).Truncate(time.Second)) {
		t.Errorf("the warning's owner's page link: %+v", warning.OwnerPage)
	} else {
		// The Lease records the warning before it is sent: the page, read once the notice has
		// arrived, says "warned" at once, however loaded the machine.
		req, _ := http.NewRequest(http.MethodGet, p.URL, http.NoBody)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			t.Fatalf("the owner's page: %s", resp.Status)
		}
		var page extsrv.OwnerPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || page.Owner != "ana@example.com" || len(page.Environments) != 1 || page.Environments[0].Name != "preview" ||
			page.Environments[0].Namespace != ns || page.Environments[0].State != extsrv.StateWarned || len(page.Environments[0].Extend) != 2 {
			t.Errorf("the owner's page: %+v, %v", page, err)
		}
	}
	for _, e := range kustosEvents(t, ns, expiry.ReasonExpiryWarning) {
		if strings.Contains(e.Message, "token=") {
			t.Errorf("the warning Event carries a link: %s", e.Message)
		}
	}
	var link string
	for _, l := range warning.Links {
		if strings.HasSuffix(l.Label, "2m") {
			link = l.URL
		}
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(u string) (int, string) {
		parsed, _ := url.Parse(u)
		resp, err := http.PostForm("http://"+addr+"/extend", parsed.Query())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(link); code != http.StatusOK || !strings.Contains(body, "Extend by 2m") {
		t.Fatalf("GET the link: %d\n%s", code, body)
	}
	if code, _ := post(strings.Replace(link, "period=2m", "period=5m", 1)); code != http.StatusForbidden {
		t.Errorf("an edited period: %d", code)
	}
	if code, body := post(link); code != http.StatusOK || !strings.Contains(body, "now expires at") {
		t.Fatalf("POST the link: %d\n%s", code, body)
	}
	if code, _ := post(link); code != http.StatusConflict {
		t.Errorf("the used link again: %d", code)
	}
	want := warning.Deadline.Add(2 * time.Minute).UTC().Format(time.RFC3339)
	eventually(t, "kustos.io/expires-at written back onto the object", func() bool {
		var d appsv1.Deployment
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "preview"}, &d); err != nil {
			t.Fatal(err)
		}
		return d.Annotations[expiry.AnnotationExpiresAt] == want
	})
	waitEvents(t, ns, expiry.ReasonApplied, 1)
	// The old deadline and the interval after the warning pass: the environment stays.
	time.Sleep(time.Until(warning.At) + 2*time.Second)
	if !deploymentExists(t, ns, "preview") {
		t.Fatal("the extended environment was removed at its old deadline")
	}
	if n := len(kustosEvents(t, ns, expiry.ReasonExpired)); n != 0 {
		t.Errorf("%d Expired events for an extended environment", n)
	}
}

// TestExpiryHelmRelease: a release installed with `--set ec_owner=… --set ec_ttl=3s` (env-cleaner's
// convention) is warned about, then uninstalled with helm's library at its deadline — its
// pre-delete hook runs, its objects and history go — and the owner is told; a release without
// those values is left alone; one with an unusable ec_ttl gets an InvalidExpiryMetadata Event.
func TestExpiryHelmRelease(t *testing.T) {
	ns := newNamespace(t, "expiry-helm", nil)
	installReleaseWith(t, ns, "shop", map[string]any{"ec_owner": "ana@example.com", "ec_ttl": "3s"})
	installRelease(t, ns, "keep")
	installReleaseWith(t, ns, "typo", map[string]any{"ec_owner": "ana@example.com", "ec_ttl": "soon"})
	startExpiryHelmKustos(t)
	waitReleaseGone(t, ns, "shop")
	gone := time.Now()
	warn := waitEvents(t, ns, expiry.ReasonExpiryWarning, 1)[0]
	if warn.InvolvedObject.Kind != expiry.ReleaseKind || warn.InvolvedObject.Name != "shop" || !strings.Contains(warn.Message, `ec_ttl="3s"`) {
		t.Errorf("warning: %+v %s", warn.InvolvedObject, warn.Message)
	}
	if gone.Sub(warn.LastTimestamp.Time) < expiryInterval-time.Second {
		t.Errorf("uninstalled %s after the warning, want at least %s", gone.Sub(warn.LastTimestamp.Time), expiryInterval)
	}
	var hook corev1.ConfigMap
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-pre-delete"}, &hook); err != nil {
		t.Errorf("the pre-delete hook did not run: %v", err)
	}
	done := waitEvents(t, ns, expiry.ReasonExpired, 1)[0]
	if !strings.Contains(done.Message, "uninstalled") && !strings.Contains(done.Message, "removed") {
		t.Errorf("done message: %s", done.Message)
	}
	bad := waitEvents(t, ns, expiry.ReasonInvalidExpiry, 1)[0]
	if bad.InvolvedObject.Name != "typo" || !strings.Contains(bad.Message, `ec_ttl="soon"`) {
		t.Errorf("invalid: %+v %s", bad.InvolvedObject, bad.Message)
	}
	u := &helmrelease.Uninstaller{Config: env.Config}
	for _, name := range []string{"keep", "typo"} {
		if ok, err := u.Exists(context.Background(), ns, name); err != nil || !ok {
			t.Errorf("release %s: exists %v, %v", name, ok, err)
		}
	}
}

// TestExpiryHelmReleaseNotAllowed: uninstalling an expired release is a deletion like any
// other: without --allow=expiry:delete:helm.sh/releases the due release stays, with a
// DeleteNotAllowed Warning Event naming the entry, and nothing of it is touched.
func TestExpiryHelmReleaseNotAllowed(t *testing.T) {
	ns := newNamespace(t, "expiry-helm-nodelete", nil)
	installReleaseWith(t, ns, "shop", map[string]any{"ec_owner": "ana@example.com", "ec_ttl": "3s"})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		o.Expiry.HelmReleases = true
		var err error
		if o.Allow, err = allow.Parse("expiry:delete:apps/deployments,cleaner:delete:helm.sh/releases", app.PolicyDetectors); err != nil {
			t.Fatal(err)
		}
	})
	dumpOnFailure(t, k)
	refused := waitEvents(t, ns, pipeline.ReasonDeleteNotAllowed, 1)[0]
	if refused.InvolvedObject.Name != "shop" || refused.Type != corev1.EventTypeWarning ||
		!strings.Contains(refused.Message, "--allow=expiry:delete:helm.sh/releases") {
		t.Errorf("DeleteNotAllowed Event about %s (%s): %s", refused.InvolvedObject.Name, refused.Type, refused.Message)
	}
	if ok, err := (&helmrelease.Uninstaller{Config: env.Config}).Exists(context.Background(), ns, "shop"); err != nil || !ok {
		t.Errorf("release shop: exists %v, %v; want it left alone", ok, err)
	}
	var hook corev1.ConfigMap
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-pre-delete"}, &hook); !apierrors.IsNotFound(err) {
		t.Errorf("the refused uninstall ran the pre-delete hook: %v", err)
	}
}

// TestExpiryDownOverDeadline: Kustos was not running when the deadline passed; it warns first
// when it comes up and acts only a full interval after that warning — for a workload and for
// an expiring Namespace alike.
func TestExpiryDownOverDeadline(t *testing.T) {
	ns := newNamespace(t, "expiry-down", nil)
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "1s"})
	lab := newNamespace(t, "expiry-lab", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "1s"})
	time.Sleep(3 * time.Second) // both deadlines pass while no Kustos runs
	started := time.Now()
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
	})
	dumpOnFailure(t, k)

	eventually(t, "preview deleted", func() bool { return !deploymentExists(t, ns, "preview") })
	if took := time.Since(started); took < expiryInterval-time.Second {
		t.Errorf("deleted %s after Kustos started, want at least the interval %s after its warning", took, expiryInterval)
	}
	if n := len(kustosEvents(t, ns, expiry.ReasonExpiryWarning)); n != 1 {
		t.Errorf("%d warnings before the deletion, want 1", n)
	}
	eventually(t, "the expired Namespace deleted", func() bool {
		var n corev1.Namespace
		err := k8s.Get(context.Background(), client.ObjectKey{Name: lab}, &n)
		return apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil)
	})
	if evs := kustosEvents(t, metav1.NamespaceDefault, expiry.ReasonExpiryWarning); !hasInvolved(evs, lab) {
		t.Errorf("no warning Event about Namespace %s (Events about Namespaces live in default)", lab)
	}
}

func hasInvolved(evs []corev1.Event, name string) bool {
	for _, e := range evs {
		if e.InvolvedObject.Name == name {
			return true
		}
	}
	return false
}

// TestExpiryMail: with an SMTP server (a real Mailpit), two environments of one owner — named
// in kustos.io/owner, mapped to an address by the owners table — warned within the batch window
// arrive as one mail with both environments and their extension links in the text and HTML
// parts; after the removals the owner gets the message that they were deleted.
func TestExpiryMail(t *testing.T) {
	ns := newNamespace(t, "expiry-mail", nil)
	mp := mailpittest.Start(t, mailpittest.AcceptAny...)
	ext := extensionServer(t)
	for _, name := range []string{"preview-a", "preview-b"} {
		newEnvironment(t, ns, name, map[string]string{expiry.AnnotationOwner: "ana", expiry.AnnotationTTL: "4s"})
	}
	newEnvironment(t, ns, "stray", nil) // an orphan, in the administrators' digest
	// An owner outside --owner-domains: no mail, and the environment stays, as one without an owner.
	newEnvironment(t, ns, "outsider", map[string]string{expiry.AnnotationOwner: "mallory@evil.example", expiry.AnnotationTTL: "4s"})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		o.Expiry.Settings.Owners = map[string]string{"ana": "ana@example.com"}
		o.Expiry.Settings.OwnerDomains = egress.MustParseHostNames("example.com")
		o.Expiry.Extension = ext.options([]string{"1m"})
		o.Expiry.Mail = notify.MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: notify.TLSNone, From: "Kustos <kustos@example.com>"}
		o.Expiry.BatchWindow, o.Expiry.BatchMax = time.Second, 50
		o.Expiry.AdminEmail, o.Expiry.DigestInterval = "ops@example.com", 2*time.Second
	})
	dumpOnFailure(t, k)

	eventually(t, "both previews deleted", func() bool {
		return !deploymentExists(t, ns, "preview-a") && !deploymentExists(t, ns, "preview-b")
	})
	var msgs []mailpittest.Message
	eventually(t, "the warning and the removal mails", func() bool {
		msgs = mp.MessagesTo(t, "ana@example.com", 2)
		return len(msgs) >= 2
	})
	var warning, done *mailpittest.Message
	for i := range msgs {
		switch {
		case strings.Contains(msgs[i].Text, "will be deleted"), strings.Contains(msgs[i].Text, "extend"):
			warning = &msgs[i]
		case strings.Contains(msgs[i].Text, "deleted"):
			done = &msgs[i]
		}
	}
	if warning == nil || done == nil {
		t.Fatalf("want a warning and a removal mail, got %d: %v", len(msgs), mailpittest.Summaries(msgs))
	}
	for _, part := range []string{warning.Text, warning.HTML} {
		if !strings.Contains(part, "preview-a") || !strings.Contains(part, "preview-b") || strings.Count(part, "/extend?") < 2 {
			t.Errorf("the warning mail does not list both previews with their links:\n%s", part)
		}
	}
	if len(msgs) != 2 {
		t.Errorf("%d mails, want one warning and one removal message (batched): %v", len(msgs), mailpittest.Summaries(msgs))
	}
	// Each mail carries one link to ana's page, a new one each; the page lists both previews,
	// removed by now, with nothing left to extend.
	pageRE := regexp.MustCompile(`http://[^\s)\]"]+/environment/\?token=[^\s)\]"]+`)
	pages := map[string]bool{}
	for _, m := range msgs {
		if n := len(pageRE.FindAllString(m.Text, -1)); n != 1 || !strings.Contains(m.HTML, "All your environments") {
			t.Errorf("%d owner's page links in a mail, want 1:\n%s", n, m.Text)
		}
		pages[pageRE.FindString(m.Text)] = true
	}
	if len(pages) != 2 {
		t.Errorf("the two mails share a page link: %v", pages)
	}
	req, _ := http.NewRequest(http.MethodGet, pageRE.FindString(done.Text), http.NoBody)
	req.Header.Set("Accept", "application/json")
	pageResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var page extsrv.OwnerPage
	err = json.NewDecoder(pageResp.Body).Decode(&page)
	pageResp.Body.Close()
	if err != nil || page.Owner != "ana" || len(page.Environments) != 2 {
		t.Errorf("ana's page: %+v, %v", page, err)
	}
	for _, e := range page.Environments {
		if e.State != extsrv.StateRemoved || len(e.Extend) != 0 {
			t.Errorf("a removed preview on the page: %+v", e)
		}
	}
	// A link from the mail's text is Kustos's: its page says what became of the environment. (The
	// environments are removed by now, so the link extends nothing: the page says so, and
	// nothing changes.)
	link := regexp.MustCompile(`http://[^\s)\]]+/extend\?[^\s)\]]+`).FindString(warning.Text)
	if link == "" {
		t.Fatalf("no extension link in the mail's text:\n%s", warning.Text)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone || !strings.Contains(string(body), "was removed") {
		t.Errorf("the mail's link after the removal: %d\n%s", resp.StatusCode, body)
	}
	for _, e := range kustosEvents(t, ns, expiry.ReasonExpiryWarning) {
		if strings.Contains(e.Message, "/extend?") {
			t.Errorf("a link reached an Event: %s", e.Message)
		}
	}
	if !deploymentExists(t, ns, "outsider") {
		t.Error("the environment of an owner outside --owner-domains was removed")
	}
	if es := kustosEvents(t, ns, lifecycle.ReasonInvalidOwner); len(es) == 0 || !strings.Contains(es[0].Message, "mallory@evil.example is outside --owner-domains=example.com") ||
		es[0].InvolvedObject.Name != "outsider" {
		t.Errorf("InvalidOwner Events: %+v", es)
	}
	if got := mp.MessagesTo(t, "mallory@evil.example", 1); len(got) != 0 {
		t.Errorf("an owner outside --owner-domains was mailed: %v", mailpittest.Summaries(got))
	}
	// The orphan digest reaches the administrators, naming the stray Deployment and why.
	digest := mp.MessagesTo(t, "ops@example.com", 1)
	if len(digest) == 0 || !strings.Contains(digest[0].Text, "Deployment.apps/"+ns+"/stray: missing owner and lifetime") {
		t.Errorf("orphan digest: %v", mailpittest.Summaries(digest))
		if len(digest) > 0 {
			t.Logf("text:\n%s", digest[0].Text)
		}
	}
}

// TestExpiryPRExtension: in PR mode an extension clicked by the owner becomes one pull request
// that writes kustos.io/expires-at into the environment's manifest (comments kept), merged by
// Kustos; no removal pull request follows at the old deadline.
func TestExpiryPRExtension(t *testing.T) {
	ns := newNamespace(t, "expiry-pr-ext", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the preview", "preview.yaml", "# the preview environment of PR 43\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: preview\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com  # the author\n    kustos.io/ttl: 4s\nspec:\n  replicas: 0\n")
	newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	addr := ext.addr
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.PR.AutoMerge = true
		expiryOptions(o)
		o.Expiry.Extension = ext.options([]string{"2m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	}))
	dumpOnFailure(t, k)

	var warning lifecycle.Notice
	eventually(t, "the warning at the webhook", func() bool {
		ws := sink.notices(expiry.NoticeWarning)
		if len(ws) > 0 {
			warning = ws[0]
		}
		return len(ws) > 0 && len(ws[0].Links) == 1
	})
	u, _ := url.Parse(warning.Links[0].URL)
	resp, err := http.PostForm("http://"+addr+"/extend", u.Query())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST the link: %s", resp.Status)
	}
	want := warning.Deadline.Add(2 * time.Minute).UTC().Format(time.RFC3339)
	p := g.waitPR(t, "the extension PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	manifest, _ := g.s.FileAt(ghOwner, ghRepo, "main", dir+"preview.yaml")
	if !strings.Contains(manifest, `kustos.io/expires-at: "`+want+`"`) || !strings.Contains(manifest, "# the author") {
		t.Errorf("preview.yaml after PR #%d:\n%s", p.Number, manifest)
	}
	// The old deadline and the interval after the warning pass: no removal PR.
	time.Sleep(time.Until(warning.At) + 2*time.Second)
	g.onePR(t, time.Second)
	if !deploymentExists(t, ns, "preview") {
		t.Error("the extended environment was removed")
	}
}

// startExpiryHelmKustos starts Kustos in direct mode with the expiry detector over helm releases
// too, and shows its log when the test fails.
func startExpiryHelmKustos(t *testing.T) {
	t.Helper()
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		o.Expiry.HelmReleases = true
	})
	dumpOnFailure(t, k)
}

// waitReleaseGone waits until helm release name in ns has no history left.
func waitReleaseGone(t *testing.T, ns, name string) {
	t.Helper()
	u := &helmrelease.Uninstaller{Config: env.Config}
	eventually(t, "release "+name+" uninstalled", func() bool {
		ok, err := u.Exists(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
}

// TestUnservedKindStopsStartUp: a kind in --lifecycle-kinds that the API server does not serve
// stops Kustos at start with an error naming the flag and the kind, not one from deep inside
// the cache.
func TestUnservedKindStopsStartUp(t *testing.T) {
	o := kustosOptions(t, func(o *app.Options) {
		expiryOptions(o)
		o.Expiry.Kinds = append(o.Expiry.Kinds, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		o.Cleaners = ephemeral.Options{Enabled: true} // the expiry kinds' metadata gets a cache entry of its own
	})
	o.Log = logr.Discard()
	_, err := app.NewManager(t.Context(), env.Config, o)
	if err == nil || !strings.Contains(err.Error(), "--lifecycle-kinds: example.com/v1, Kind=Widget is not served by the API server") {
		t.Fatalf("NewManager: %v; want the error naming --lifecycle-kinds and the kind", err)
	}
}
