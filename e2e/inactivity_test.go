package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// countingAPI counts the queries a check makes.
type countingAPI struct {
	activity.Querier
	n atomic.Int64
}

func (c *countingAPI) Query(ctx context.Context, q string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, error) {
	c.n.Add(1)
	return c.Querier.Query(ctx, q, ts, opts...)
}

func (c *countingAPI) QueryRange(ctx context.Context, q string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error) {
	c.n.Add(1)
	return c.Querier.QueryRange(ctx, q, r, opts...)
}

// sourcesWithRange are the default sources with a shorter minimum range (the history below has a
// sample every 5 minutes; the live tests scrape every second).
func sourcesWithRange(t *testing.T, minRange string) []activity.Compiled {
	t.Helper()
	srcs := activity.DefaultSources()
	for i := range srcs {
		srcs[i].MinRange = minRange
	}
	c, err := activity.Compile(srcs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestActivityOverBackfilledWeeks asks a real Prometheus, holding eight weeks of backfilled
// ingress-nginx and bastion history, what the default sources say: one query per source for
// every target, the step rule at the 11,000-points boundary (Prometheus itself refuses one step
// finer), and the CrownLabs alert schedule replayed over the weeks on the real data.
func TestActivityOverBackfilledWeeks(t *testing.T) {
	day := 24 * time.Hour
	end := time.Now().Add(-time.Hour).Truncate(5 * time.Minute) // history must end before Prometheus starts
	start := end.Add(-56 * day)
	activeUntil := map[string]time.Time{
		"vm-a": end.Add(-20 * day), // idle for 20 days
		"vm-b": end.Add(-3 * day),  // used three days ago
		"vm-c": {},                 // never through the ingress; by SSH 30 days ago
	}
	h := &promtest.History{}
	for at := start; !at.After(end); at = at.Add(5 * time.Minute) {
		h.Add("nginx_ingress_controller_config_last_reload_successful", "gauge", nil, promtest.Sample{At: at, Value: 1})
		for name, until := range activeUntil {
			// A request counter (as a gauge: OpenMetrics would rename a counter *_total) that
			// grows every 5 minutes while the environment is used.
			n := 0.0
			if !until.IsZero() {
				last := at
				if until.Before(at) {
					last = until
				}
				n = float64(last.Sub(start) / (5 * time.Minute))
			}
			h.Add("nginx_ingress_controller_requests", "gauge", map[string]string{"namespace": "lab", "service": name, "status": "200"}, promtest.Sample{At: at, Value: n})
			ssh := 0.0
			if name == "vm-c" && at.Equal(end.Add(-30*day).Truncate(5*time.Minute)) {
				ssh = 1
			}
			h.Add("bastion_ssh_connections", "gauge", map[string]string{"namespace": "lab", "name": name}, promtest.Sample{At: at, Value: ssh})
		}
	}
	prom := promtest.Start(t, promtest.Options{History: h})
	api := &countingAPI{Querier: prom.API()}
	srcs := sourcesWithRange(t, "11m")
	checker := &activity.Checker{API: api, Sources: srcs, MinStep: time.Minute}

	window := 56 * day
	res := checker.Check(context.Background(), end, window)
	if res.Step != 440*time.Second {
		t.Errorf("step for 8 weeks = %s, want 440s (8w / 11,000, in whole seconds)", res.Step)
	}
	if res.Queries != 2 || api.n.Load() != 2 {
		t.Errorf("queries = %d (counted %d), want 2: one per source for all three targets", res.Queries, api.n.Load())
	}
	last := map[string]time.Time{}
	for _, s := range res.Sources {
		if s.Status != activity.StatusOK {
			t.Fatalf("source %s: %s (%s)", s.Name, s.Status, s.Detail)
		}
		for ref, at := range s.Last {
			if at.After(last[ref.Name]) {
				last[ref.Name] = at
			}
		}
	}
	// The step and the range make the last activity up to one step + range late, never early
	// (a later activity keeps an environment, an earlier one could remove it too soon) —
	// whatever the step's alignment to the samples: other windows give other steps.
	slack := res.Step + 11*time.Minute + 5*time.Minute
	wantLast := map[string]time.Time{"vm-a": activeUntil["vm-a"], "vm-b": activeUntil["vm-b"], "vm-c": end.Add(-30 * day).Truncate(5 * time.Minute)}
	check := func(window time.Duration, last map[string]time.Time) {
		for name, want := range wantLast {
			if got := last[name]; got.Before(want) || got.Sub(want) > slack {
				t.Errorf("window %s: %s last active %s, want %s (+≤%s)", window, name, got, want, slack)
			}
		}
	}
	check(window, last)
	for _, w := range []time.Duration{53 * day, 50 * day, 47 * day, 44 * day, 41 * day} {
		r := checker.Check(context.Background(), end, w)
		got := map[string]time.Time{}
		for _, s := range r.Sources {
			for ref, at := range s.Last {
				if at.After(got[ref.Name]) {
					got[ref.Name] = at
				}
			}
		}
		check(w, got)
	}

	// Range mode (CrownLabs' queries): Prometheus accepts the window at the rule's step and
	// refuses it one second finer, so the rule is exactly Prometheus's limit.
	rangeSrc, err := activity.Compile([]activity.Source{{Name: "nginx", Mode: activity.ModeRange,
		Available: srcs[0].Available, MinRange: "11m", Labels: activity.ResultLabels{Namespace: "namespace", Name: "service"},
		Data: `sum by (namespace, service) (increase(nginx_ingress_controller_requests[{{.Range}}]))`}})
	if err != nil {
		t.Fatal(err)
	}
	rr := (&activity.Checker{API: prom.API(), Sources: rangeSrc, MinStep: time.Minute}).Check(context.Background(), end, window)
	if s := rr.Sources[0]; s.Status != activity.StatusOK || s.Last[activity.Ref{Namespace: "lab", Name: "vm-b"}].Before(activeUntil["vm-b"]) {
		t.Errorf("range mode: %s %s, vm-b last %s", s.Status, s.Detail, s.Last[activity.Ref{Namespace: "lab", Name: "vm-b"}])
	}
	_, _, err = prom.API().QueryRange(context.Background(), "nginx_ingress_controller_config_last_reload_successful",
		v1.Range{Start: end.Add(-window), End: end, Step: res.Step - time.Second})
	if err == nil || !strings.Contains(err.Error(), "11,000 points") {
		t.Errorf("a range query one second finer than the rule: %v, want Prometheus's 11,000 points refusal", err)
	}

	// The schedule over the weeks: checks every 6 hours of simulated time on the real data,
	// state carried as the Lease carries it. vm-a (14-day timeout, 3 alerts a day apart) is
	// alerted 14 days after its last use and paused a day after the third alert; vm-b never.
	tracker := &activity.Tracker{Lookback: window}
	settings := inactivity.DefaultSettings()
	policy := inactivity.Policy{Timeout: 14 * day, MaxAlerts: 3, Action: inactivity.ActionPause, From: "test"}
	states := map[string]inactivity.State{}
	alerts := map[string][]time.Time{}
	paused := map[string]time.Time{}
	refs := func(name string) map[string]activity.Ref {
		return map[string]activity.Ref{"nginx": {Namespace: "lab", Name: name}, "bastion": {Namespace: "lab", Name: name}}
	}
	for now := start.Add(day); !now.After(end); now = now.Add(6 * time.Hour) {
		tracker.Observe(checker.Check(context.Background(), now, tracker.Window(now, 7*time.Hour, []string{"nginx", "bastion"})))
		for _, name := range []string{"vm-a", "vm-b"} {
			d := inactivity.Decide(inactivity.Snapshot{Now: now, Target: lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "lab", Name: name},
				Created: start, Running: paused[name].IsZero(), Policy: policy, Activity: tracker.Lookup(refs(name)), State: states[name], Settings: settings})
			states[name] = d.State
			if d.Alert {
				alerts[name] = append(alerts[name], now)
			}
			if d.Change != nil {
				paused[name] = now
			}
		}
	}
	idle := activeUntil["vm-a"].Add(14 * day)
	if len(alerts["vm-a"]) != 3 || len(alerts["vm-b"]) != 0 {
		t.Fatalf("alerts: vm-a %v, vm-b %v; want three for vm-a from %s, none for vm-b", alerts["vm-a"], alerts["vm-b"], idle)
	}
	for i, at := range alerts["vm-a"] {
		want := idle.Add(time.Duration(i) * day)
		if at.Before(want) || at.Sub(want) > 6*time.Hour+slack {
			t.Errorf("vm-a alert %d at %s, want %s (+ one check and the step)", i+1, at, want)
		}
	}
	if p := paused["vm-a"]; p.Before(alerts["vm-a"][2].Add(day)) || p.Sub(alerts["vm-a"][2].Add(day)) > 6*time.Hour {
		t.Errorf("vm-a paused at %s, want a day after the last alert (%s)", p, alerts["vm-a"][2])
	}
	if !paused["vm-b"].IsZero() {
		t.Errorf("vm-b, used three days ago, was paused at %s", paused["vm-b"])
	}
}

// liveActivity is an exporter of ingress-nginx's metrics for environments, scraped by a real
// Prometheus every second.
type liveActivity struct {
	prom     *promtest.Server
	requests *prometheus.CounterVec
	ssh      *prometheus.GaugeVec
}

// keepUsing sends a request through the ingress to service every 500 ms, as a user of it
// would, until the returned stop is called.
func (l *liveActivity) keepUsing(ns, service string) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
				l.requests.WithLabelValues(ns, service, "200").Inc()
			}
		}
	}()
	return func() { close(done) }
}

func startLiveActivity(t *testing.T, withBastion bool) *liveActivity {
	t.Helper()
	exp := promtest.NewExporter(t)
	reload := prometheus.NewGauge(prometheus.GaugeOpts{Name: "nginx_ingress_controller_config_last_reload_successful"})
	reload.Set(1)
	l := &liveActivity{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nginx_ingress_controller_requests"}, []string{"namespace", "service", "status"}),
		ssh:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bastion_ssh_connections"}, []string{"namespace", "name"}),
	}
	exp.Registry.MustRegister(reload, l.requests)
	if withBastion {
		// The tracker exports a series per environment it knows, 0 while nobody is connected.
		l.ssh.WithLabelValues("none", "none").Set(0)
		exp.Registry.MustRegister(l.ssh)
	}
	l.prom = promtest.Start(t, promtest.Options{Scrape: []string{exp.Addr}, ScrapeInterval: time.Second})
	l.prom.WaitFor(t, "nginx_ingress_controller_config_last_reload_successful", 30*time.Second)
	return l
}

// inactivityOptions: 1 s checks and steps, 2 alerts 2 s apart, direct mode.
func inactivityOptions(t *testing.T, promURL string, sources []activity.Compiled) func(*app.Options) {
	return func(o *app.Options) {
		o.Mode = app.ModeDirect
		inactivityDetector(o, promURL, sources)
	}
}

// inactivityDetector turns the inactivity detector on with 1 s checks and steps and 2 alerts 2 s
// apart, leaving the mode alone.
func inactivityDetector(o *app.Options, promURL string, sources []activity.Compiled) {
	in := inactivity.DefaultOptions()
	in.Enabled = true
	in.Kinds = []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}}
	in.Prometheus.URL = promURL
	in.Sources = sources
	in.MinStep = time.Second
	in.Lookback = time.Hour
	in.Settings.CheckInterval = time.Second
	in.Settings.MaxAlerts = 2
	in.Settings.NotificationInterval = 2 * time.Second
	in.ProbeInterval = time.Second
	in.ProbeTimeout = time.Second
	in.Settings.ProbeFailures = 2
	o.Inactivity = in
}

func replicas(t *testing.T, ns, name string) int32 {
	t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func scale(t *testing.T, ns, name string, n int32) {
	t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &n
	if err := k8s.Patch(context.Background(), &d, patch); err != nil {
		t.Fatal(err)
	}
}

// bag is the inactivity state in a target's Lease.
func bag(t *testing.T, stateNS, ns, name string) map[string]string {
	t.Helper()
	return detectorBag(t, stateNS, inactivity.DetectorName, ns, name)
}

// detectorBag is the detector's state in the Lease of the Deployment ns/name.
func detectorBag(t *testing.T, stateNS, detector, ns, name string) map[string]string {
	t.Helper()
	key := lifecycle.KeyFor(detector, lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name})
	var leases coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &leases, client.InNamespace(stateNS)); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Annotations[state.AnnotationKey] == string(key) {
			out := map[string]string{}
			for k, v := range l.Annotations {
				if rest, ok := strings.CutPrefix(k, state.BagPrefix); ok {
					out[rest] = v
				}
			}
			return out
		}
	}
	return nil
}

// TestInactivityDirectMode: an idle environment is alerted twice, 2 s apart, then paused (scaled
// to zero); one used all along (requests every second through the ingress) is never alerted; a
// restart of the paused one resets its alerts in the Lease and starts a new idle period.
func TestInactivityDirectMode(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity", map[string]string{inactivity.AnnotationTimeout: "6s"})
	newEnvironmentOf(t, ns, "idle", 1, map[string]string{inactivity.AnnotationOwner: "ana@example.com"})
	newEnvironmentOf(t, ns, "busy", 1, nil)
	defer live.keepUsing(ns, "busy")()
	k := startKustos(t, inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s")))
	dumpOnFailure(t, k)

	alerts := waitEvents(t, ns, inactivity.ReasonInactive, 2)
	sort.Slice(alerts, func(i, j int) bool { return alerts[i].LastTimestamp.Before(&alerts[j].LastTimestamp) })
	for i, a := range alerts {
		if a.InvolvedObject.Name != "idle" || !strings.Contains(a.Message, "owner ana@example.com") && !strings.Contains(a.Message, "Owner ana@example.com") {
			t.Errorf("alert %d: %s %s", i+1, a.InvolvedObject.Name, a.Message)
		}
	}
	if gap := alerts[1].LastTimestamp.Sub(alerts[0].LastTimestamp.Time); gap < time.Second {
		t.Errorf("second alert %s after the first, want the 2 s interval", gap)
	}
	eventually(t, "idle paused (scaled to zero)", func() bool { return replicas(t, ns, "idle") == 0 })
	waitEvents(t, ns, inactivity.ReasonApplied, 1)
	if got := replicas(t, ns, "busy"); got != 1 {
		t.Errorf("busy has %d replicas, want 1", got)
	}
	if evs := kustosEvents(t, ns, inactivity.ReasonInactive); len(evs) != 2 {
		t.Errorf("alerts: %v", messages(evs))
	}
	b := bag(t, k.opts.StateNamespace, ns, "idle")
	if b["alerts-sent"] != "2" || b["last-alert-at"] == "" {
		t.Errorf("Lease state after the pause: %v", b)
	}

	// Restarted once Kustos has seen it paused: the alerts reset (the restart is activity), and
	// the idle period starts over.
	eventually(t, "the pause seen (Lease)", func() bool { return bag(t, k.opts.StateNamespace, ns, "idle")["paused"] == "true" })
	scale(t, ns, "idle", 1)
	eventually(t, "alerts reset in the Lease after the restart", func() bool {
		b := bag(t, k.opts.StateNamespace, ns, "idle")
		return b["alerts-sent"] == "" && b["paused"] == "" && b["last-activity"] != ""
	})
	waitEvents(t, ns, inactivity.ReasonInactive, 3)
	never(t, ns, inactivity.ReasonInactive, 3, time.Second)
	evs := kustosEvents(t, ns, inactivity.ReasonInactive)
	sort.Slice(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(&evs[j].LastTimestamp) })
	if evs[2].InvolvedObject.Name != "idle" || !strings.Contains(evs[2].Message, "alert 1 of 2") {
		t.Errorf("after the restart: %s", evs[2].Message)
	}
}

// TestInactivitySourceDown: a configured source that is not collecting (the bastion tracker is
// missing) keeps every target from being declared inactive: one ActivityUnknown Event for the
// idle one, naming the source, and it is never paused. Prometheus going down entirely does the
// same.
func TestInactivitySourceDown(t *testing.T) {
	live := startLiveActivity(t, false)
	ns := newNamespace(t, "inactivity-down", map[string]string{inactivity.AnnotationTimeout: "3s"})
	newEnvironmentOf(t, ns, "idle", 1, nil)
	k := startKustos(t, inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s")))
	dumpOnFailure(t, k)

	unknown := waitEvents(t, ns, inactivity.ReasonActivityUnknown, 1)[0]
	if !strings.Contains(unknown.Message, "bastion: unavailable") {
		t.Errorf("ActivityUnknown: %s", unknown.Message)
	}
	never(t, ns, inactivity.ReasonInactive, 0, 5*time.Second)
	if got := replicas(t, ns, "idle"); got != 1 {
		t.Fatalf("idle was paused (%d replicas) while a source was down", got)
	}

	// Prometheus down: still nothing.
	live.prom.Stop()
	never(t, ns, inactivity.ReasonInactive, 0, 4*time.Second)
	if got := replicas(t, ns, "idle"); got != 1 {
		t.Fatalf("idle was paused (%d replicas) while Prometheus was down", got)
	}
	if !strings.Contains(k.logs.String(), "Prometheus could not be asked") {
		t.Errorf("no log line says Prometheus could not be asked")
	}
}

// TestInactivityExamProbe: an exam environment whose endpoint stops answering is terminated
// (paused) after two failed probes, without alerts; one whose endpoint answers stays.
func TestInactivityExamProbe(t *testing.T) {
	live := startLiveActivity(t, true)
	exam := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer exam.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	ns := newNamespace(t, "inactivity-exam", nil)
	newEnvironmentOf(t, ns, "exam-1", 1, map[string]string{inactivity.AnnotationProbeURL: exam.URL + "/healthz"})
	newEnvironmentOf(t, ns, "exam-2", 1, map[string]string{inactivity.AnnotationProbeURL: up.URL + "/healthz"})
	k := startKustos(t, func(o *app.Options) {
		inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s"))(o)
		o.AllowedDestinations = allowLoopback(t) // the exam endpoints listen on 127.0.0.1
	})
	dumpOnFailure(t, k)

	time.Sleep(3 * time.Second) // a few good probes
	if got := replicas(t, ns, "exam-1"); got != 1 {
		t.Fatalf("exam-1 paused while its endpoint answered")
	}
	exam.Close()
	eventually(t, "exam-1 terminated after its endpoint stopped answering", func() bool { return replicas(t, ns, "exam-1") == 0 })
	applied := waitEvents(t, ns, inactivity.ReasonApplied, 1)[0]
	if applied.InvolvedObject.Name != "exam-1" {
		t.Errorf("applied: %s %s", applied.InvolvedObject.Name, applied.Message)
	}
	if got := replicas(t, ns, "exam-2"); got != 1 {
		t.Errorf("exam-2 (answering) has %d replicas", got)
	}
	if evs := kustosEvents(t, ns, inactivity.ReasonInactive); len(evs) > 0 {
		t.Errorf("exam targets got alerts: %v", messages(evs))
	}
}

// TestInactivityPRMode: a lab environment defined in Git, idle, gets two alerts — Events and
// notices to its owner through the webhook — then one pull request pausing it (spec.replicas: 0,
// its comment kept), which Kustos does not merge without auto-merge and does not carry out
// itself. A human closes the pull request: the environment stays, and no other pull request
// comes for the same idle period.
func TestInactivityPRMode(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity-pr", nil)
	g := newGitOps(t, ns)
	dir := g.addManifest("add the lab VM", "vm.yaml", "# ana's VM for the networking lab\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vm\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/inactivity-timeout: 4s\nspec:\n  replicas: 1 # one VM\n")
	newEnvironmentOf(t, ns, "vm", 1, map[string]string{inactivity.AnnotationOwner: "ana@example.com", inactivity.AnnotationTimeout: "4s"})
	sink := startNoticeSink(t)
	k := startKustos(t, g.prMode(func(o *app.Options) {
		inactivityDetector(o, live.prom.URL, sourcesWithRange(t, "3s"))
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	}))
	dumpOnFailure(t, k)

	p := g.waitPR(t, "the pause PR", func(githubtest.PullRequest) bool { return true })
	if !strings.Contains(p.Head, "inactivity") || !strings.Contains(p.Body, "ana@example.com") ||
		!strings.Contains(p.Body, "kustos.io/inactivity-ignore=true") || strings.Contains(p.Body, "resizer.io") {
		t.Errorf("PR head %q, body:\n%s", p.Head, p.Body)
	}
	// The evidence a reviewer reads at a glance: each source's last activity, and its chart.
	for _, want := range []string{"#### Activity per source", "| `nginx` | ", "| `bastion` | ", "```mermaid\nxychart-beta\n    title \"Idle per source (hours)\""} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("the PR body lacks %q:\n%s", want, p.Body)
		}
	}
	vm, ok := g.s.FileAt(ghOwner, ghRepo, p.Head, dir+"vm.yaml")
	if !ok || !strings.Contains(vm, "replicas: 0") || !strings.Contains(vm, "# ana's VM for the networking lab") {
		t.Errorf("vm.yaml on the PR branch:\n%s", vm)
	}
	alerts := waitEvents(t, ns, inactivity.ReasonInactive, 2)
	waitEvents(t, ns, inactivity.ReasonProposed, 1)
	notices := sink.notices(inactivity.NoticeAlert)
	if len(notices) != 2 {
		t.Fatalf("notices: %+v, want the two alerts", notices)
	}
	for i, n := range notices {
		if n.Owner != "ana@example.com" || n.Target.Name != "vm" || !strings.Contains(n.Subject, "idle since") || n.ID == notices[(i+1)%2].ID {
			t.Errorf("notice %d: %+v", i+1, n)
		}
	}
	if !strings.Contains(alerts[0].Message, "paused") {
		t.Errorf("alert: %s", alerts[0].Message)
	}
	if got := replicas(t, ns, "vm"); got != 1 {
		t.Errorf("PR mode paused the Git-managed VM itself (%d replicas)", got)
	}

	// A human says no.
	g.s.ClosePR(ghOwner, ghRepo, p.Number)
	waitEvents(t, ns, inactivity.ReasonDeclined, 1)
	g.onePR(t, 4*time.Second)
	never(t, ns, inactivity.ReasonInactive, 2, 0)
}

// openPausePR starts Kustos in PR mode (no auto-merge) over an idle lab VM in a new namespace
// (named from prefix) and waits for the pull request that pauses it.
func openPausePR(t *testing.T, prefix string) (*liveActivity, string, *gitops, githubtest.PullRequest) {
	t.Helper()
	live := startLiveActivity(t, false)
	ns := newNamespace(t, prefix, nil)
	g := newGitOps(t, ns)
	g.addManifest("add the lab VM", "vm.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vm\n  annotations:\n"+
		"    kustos.io/owner: ana@example.com\n    kustos.io/inactivity-timeout: 4s\nspec:\n  replicas: 1\n")
	newEnvironmentOf(t, ns, "vm", 1, map[string]string{inactivity.AnnotationOwner: "ana@example.com", inactivity.AnnotationTimeout: "4s"})
	k := startKustos(t, g.prMode(func(o *app.Options) {
		inactivityDetector(o, live.prom.URL, sourcesWithRange(t, "3s"))
		o.Inactivity.Sources = o.Inactivity.Sources[:1] // nginx only
	}))
	dumpOnFailure(t, k)
	p := g.waitPR(t, "the pause PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	return live, ns, g, p
}

// TestInactivityPRWithdrawn: the pause PR of an idle VM is open (no auto-merge, people have not
// looked yet) when its student logs in again. Kustos closes the PR itself, with a comment saying
// why, rather than leaving a pause of a VM in use for someone to merge; it is not taken for a
// human's decline, and the VM keeps running.
func TestInactivityPRWithdrawn(t *testing.T) {
	live, ns, g, p := openPausePR(t, "inactivity-withdrawn")

	// Ana is back: requests through the ingress, every half second until the test ends.
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		for ctx.Err() == nil {
			live.requests.WithLabelValues(ns, "vm", "200").Inc()
			time.Sleep(500 * time.Millisecond)
		}
	}()
	closed := g.waitPR(t, "the pause PR closed by Kustos", func(q githubtest.PullRequest) bool { return q.Number == p.Number && q.State == "closed" })
	if closed.Merged || len(closed.Comments) != 1 || !strings.HasPrefix(closed.Comments[0], "Kustos closes this pull request because Deployment.apps/"+ns+"/vm is not idle before") {
		t.Errorf("merged %v, comments %q", closed.Merged, closed.Comments)
	}
	waitEvents(t, ns, pipeline.ReasonWithdrawn, 1)
	g.onePR(t, 3*time.Second) // and while she works, no new one
	never(t, ns, inactivity.ReasonDeclined, 0, time.Second)
	if got := replicas(t, ns, "vm"); got != 1 {
		t.Errorf("the VM has %d replicas, want 1", got)
	}
}

// TestInactivityPROptOutWithdraws: the pause PR of an idle VM is open when its namespace's owner
// opts the VM out of the inactivity detector. Kustos closes the PR itself, saying why, as it
// does when the VM is used again: an opted-out target has no Change, and a PR left open would be
// merged by people, or (grouped with other VMs) by another VM's auto-merge.
func TestInactivityPROptOutWithdraws(t *testing.T) {
	_, ns, g, p := openPausePR(t, "inactivity-optout")

	patch := []byte(`{"metadata":{"annotations":{"` + inactivity.AnnotationIgnore + `":"true"}}}`)
	if err := k8s.Patch(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	closed := g.waitPR(t, "the pause PR closed by Kustos", func(q githubtest.PullRequest) bool { return q.Number == p.Number && q.State == "closed" })
	if closed.Merged || len(closed.Comments) != 1 || !strings.Contains(closed.Comments[0], "is opted out of the inactivity detector") {
		t.Errorf("merged %v, comments %q", closed.Merged, closed.Comments)
	}
	waitEvents(t, ns, pipeline.ReasonWithdrawn, 1)
	g.onePR(t, 3*time.Second)
	never(t, ns, inactivity.ReasonDeclined, 0, time.Second)
}
