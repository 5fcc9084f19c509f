package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

const (
	labNamespace = "courses-lab"
	labStateNS   = "kustos-inactivity-system"
	labDir       = "clusters/demo/" + labNamespace + "/"
	labIdle      = "ana-desktop" // nobody uses it
	labUsed      = "bob-desktop" // a request through the ingress every second
	labTimeout   = 10 * time.Second
	labInterval  = 5 * time.Second // --notification-interval: between the alerts, and to the pause
	labMaxAlerts = 2
	labCheck     = 2 * time.Second // --inactivity-check-interval
	// labMinRange is the sources' minRange: the range of increase()/max_over_time() in their
	// queries. The default, 5m, suits a production timeout of hours or days; with a 10 s timeout it
	// would blur every activity by five minutes. 3s is three scrapes at the 1 s scrape interval.
	labMinRange = "3s"
)

// labManifest is a lab environment as the course declares it in Git: its owner and its
// inactivity timeout next to it.
func labManifest(name, owner string) string {
	return `# Lab desktop of ` + owner + `; paused when nobody uses it.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  annotations:
    ` + fmt.Sprintf("%-38s", "kustos.io/owner: "+owner) + `# alerted before the pause
    kustos.io/inactivity-timeout: 10s     # idle this long: alerts, then the pause
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
        - name: desktop
          image: registry.example/desktop:1
`
}

// inactivityAct is the demo's inactivity act: a real Prometheus (bin/prometheus) scraping an
// exporter that plays ingress-nginx and the bastion tracker, two lab environments defined in Git
// with a 10 s inactivity timeout, one used (a request every second), one idle, and Kustos in PR
// mode with --enable-inactivity. The idle one's owner gets two alerts 5 s apart (Events, and
// notices at a webhook), then Kustos proposes the pause — spec.replicas: 0 — by a pull request,
// merged once the check is green. The used one gets nothing.
func inactivityAct(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client, g *gitHub) error {
	out, s, tb, tokenFile := a.out, g.s, g.tb, g.tokenFile
	a.watch(labNamespace, labStateNS)
	dir := tb.TempDir()
	a.step("Inactivity: a real Prometheus (bin/prometheus) scraping, every second, an exporter that plays ingress-nginx and the bastion tracker")
	exp := promtest.NewExporter(tb)
	reload := prometheus.NewGauge(prometheus.GaugeOpts{Name: "nginx_ingress_controller_config_last_reload_successful"})
	reload.Set(1)
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nginx_ingress_controller_requests"}, []string{"namespace", "service", "status"})
	ssh := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bastion_ssh_connections"}, []string{"namespace", "name"})
	// The tracker exports a series per environment it knows, 0 while nobody is connected; with
	// no series at all the bastion source would be unavailable, and nothing ever inactive.
	for _, name := range []string{labIdle, labUsed} {
		ssh.WithLabelValues(labNamespace, name).Set(0)
	}
	requests.WithLabelValues(labNamespace, labUsed, "200")
	exp.Registry.MustRegister(reload, requests, ssh)
	prom := promtest.Start(tb, promtest.Options{Scrape: []string{exp.Addr}, ScrapeInterval: time.Second}) //nolint:contextcheck // test tooling: it bounds its own start and stops with tb's cleanups
	prom.WaitFor(tb, "nginx_ingress_controller_config_last_reload_successful", 30*time.Second)            //nolint:contextcheck // test tooling: each query has its own deadline
	fmt.Fprintf(out, "     %s scrapes %s:\n", prom.URL, exp.Addr)
	fmt.Fprintln(out, "       nginx_ingress_controller_config_last_reload_successful 1")
	fmt.Fprintf(out, "       nginx_ingress_controller_requests{namespace=%q,service=%q,status=\"200\"}   +1 every second\n", labNamespace, labUsed)
	for _, name := range []string{labIdle, labUsed} {
		fmt.Fprintf(out, "       bastion_ssh_connections{namespace=%q,name=%q}   0 (nobody connected)\n", labNamespace, name)
	}

	a.step("two lab environments in Git and in the cluster: " + labIdle + " (idle) and " + labUsed + " (used)")
	owners := map[string]string{labIdle: "ana@example.com", labUsed: "bob@example.com"}
	files := map[string]string{
		labDir + "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + labNamespace +
			"\nresources:\n  - " + labIdle + ".yaml\n  - " + labUsed + ".yaml\n",
		labDir + labIdle + ".yaml": labManifest(labIdle, owners[labIdle]),
		labDir + labUsed + ".yaml": labManifest(labUsed, owners[labUsed]),
	}
	s.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add two lab desktops", files)
	fmt.Fprint(out, indent(files[labDir+labIdle+".yaml"], "     | "))
	for _, ns := range []string{labNamespace, labStateNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	created := time.Now()
	fmt.Fprintf(out, "     created at %s\n", clock(created))
	for _, name := range []string{labIdle, labUsed} {
		labels := map[string]string{"app": name}
		if err := c.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: labNamespace, Name: name, Annotations: map[string]string{
				inactivity.AnnotationOwner: owners[name], inactivity.AnnotationTimeout: labTimeout.String()}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "desktop", Image: "registry.example/desktop:1"}}}}},
		}); err != nil {
			return err
		}
	}
	// Bob works: a request through the ingress every second, until the act ends.
	var sent atomic.Int64
	used, stopUsing := context.WithCancel(ctx)
	defer stopUsing()
	go func() {
		for {
			requests.WithLabelValues(labNamespace, labUsed, "200").Inc()
			sent.Add(1)
			select {
			case <-used.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()

	// The default sources (ingress-nginx requests, the bastion's connections) with a shorter
	// minRange: see labMinRange.
	srcs := activity.DefaultSources()
	for i := range srcs {
		srcs[i].MinRange = labMinRange
	}
	b, err := yaml.Marshal(srcs)
	if err != nil {
		return err
	}
	sourcesFile := filepath.Join(dir, "sources.yaml")
	if err := os.WriteFile(sourcesFile, b, 0o600); err != nil {
		return err
	}
	hook, err := startHook(ctx)
	if err != nil {
		return err
	}
	// The extension server: the pause notice's resume link points at it.
	keyFile, extAddr, err := extensionServer(dir, "demo-resume-key-0123456789abcdef0123456")
	if err != nil {
		return err
	}
	args := []string{"run", "--kubeconfig=" + kubeconfig, "--state-namespace=" + labStateNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--mode=pr", "--github-api-url=" + s.URL(), "--github-token-file=" + tokenFile,
		"--git-repo=" + ghOwner + "/" + ghRepo, "--git-base-branch=" + baseBranch,
		"--cluster-name=demo", "--git-path=clusters/demo/", "--enable-auto-merge", "--pr-poll-interval=" + prPollInterval.String(),
		"--group-window=2s", "--enable-cleaners=false", "--enable-expiry=false",
		"--enable-inactivity", "--prometheus-url=" + prom.URL, "--inactivity-config=" + sourcesFile,
		"--inactivity-check-interval=" + labCheck.String(), "--activity-min-step=1s",
		fmt.Sprintf("--max-alerts=%d", labMaxAlerts), "--notification-interval=" + labInterval.String(),
		"--notify-webhook-url=" + hook.url,
		"--extension-addr=" + extAddr, "--extension-url=http://" + extAddr, "--extension-key-file=" + keyFile,
		// A successful check and a decision log at debug only: without them, a failure report's
		// log tail would show start-up lines and nothing of what the checks found.
		"--log-level=debug"}
	// The timeout is the environments' own (kustos.io/inactivity-timeout, in Git), not
	// --inactivity-timeout: that would apply to every Deployment of the cluster, the observer
	// act's team-b/web included (not in Git: it would be paused directly).
	a.step(fmt.Sprintf("starting kustos run --mode=pr --group-window=2s --enable-inactivity --prometheus-url=%s --inactivity-config=$TMP/sources.yaml (nginx and bastion, minRange: %s) --inactivity-check-interval=%s --activity-min-step=1s --max-alerts=%d --notification-interval=%s --notify-webhook-url=… --extension-addr=…",
		prom.URL, labMinRange, labCheck, labMaxAlerts, labInterval))
	stop, err := a.startKustos("kustos (inactivity)", kustosBin, args)
	if err != nil {
		return err
	}
	defer stop()

	a.step(fmt.Sprintf("waiting for the alerts: %d, %s apart, from %s after creation", labMaxAlerts, labInterval, labTimeout))
	var alerts []lifecycle.Notice
	var deliveries map[string]int
	if err := poll(ctx, func() (bool, error) {
		alerts, deliveries = hook.unique(inactivity.NoticeAlert)
		return len(alerts) >= labMaxAlerts, nil
	}); err != nil {
		return fmt.Errorf("no alerts: %w", err)
	}
	for _, n := range alerts {
		if n.Target.Name != labIdle {
			return fmt.Errorf("%s was alerted although it is used: %s", n.Target.Name, n.Text)
		}
		fmt.Fprintf(out, "     webhook received %q for %s, sent at %s (%s after creation):\n", n.Subject, n.To, clock(n.At), n.At.Sub(created).Round(time.Second))
		fmt.Fprintf(out, "       %s\n", n.Text)
		if k := deliveries[n.ID]; k > 1 {
			fmt.Fprintf(out, "       (delivered %d times with the same id %q: at least once, the receiver deduplicates)\n", k, n.ID)
		}
	}
	if gap := alerts[1].At.Sub(alerts[0].At); gap < labInterval-time.Second {
		return fmt.Errorf("the second alert came %s after the first, want %s", gap, labInterval)
	}

	a.step("waiting for Kustos's pull request: the pause, a notification interval after the last alert")
	var p githubtest.PullRequest
	var opened time.Time
	if err := poll(ctx, func() (bool, error) {
		for _, pr := range s.PRs(ghOwner, ghRepo) {
			if strings.Contains(pr.Head, "inactivity") && pr.State == "open" && pr.HeadSHA != "" {
				p, opened = pr, time.Now()
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("no pause pull request: %w", err)
	}
	path := labDir + labIdle + ".yaml"
	if !strings.Contains(p.Body, "/"+labIdle+"`") {
		return fmt.Errorf("the pull request %s is not about %s:\n%s", p.Head, labIdle, p.Body)
	}
	before, _ := s.FileAt(ghOwner, ghRepo, p.BaseSHA, path)
	after, _ := s.FileAt(ghOwner, ghRepo, p.HeadSHA, path)
	diff, err := unifiedDiff(filepath.Join(dir, fmt.Sprint(p.Number)), path, version{before, true}, version{after, true})
	if err != nil {
		return err
	}
	if !strings.Contains(after, "replicas: 0") {
		return fmt.Errorf("the pull request does not set spec.replicas: 0:\n%s", after)
	}
	if err := keepsComments(before, after); err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Pull request #%d (%s → %s), seen at %s (%s after creation):\n", p.Number, p.Head, p.Base, clock(opened), opened.Sub(created).Round(time.Second))
	fmt.Fprintln(out, "  Title: "+p.Title)
	fmt.Fprintln(out, "  Body:")
	fmt.Fprint(out, indent(p.Body, "    | "))
	fmt.Fprintln(out, "  Diff:")
	fmt.Fprint(out, indent(diff, "    "))
	fmt.Fprintln(out)

	a.step(fmt.Sprintf("check %s turns green: waiting for Kustos to merge", requiredCheck))
	p, err = greenAndMerged(ctx, s, p)
	if err != nil {
		return fmt.Errorf("not merged: %w", err)
	}
	fmt.Fprintf(out, "     merged #%d as %s: %s\n", p.Number, short(p.MergeCommitSHA), firstLine(s.CommitMessage(ghOwner, ghRepo, p.MergeCommitSHA)))

	var evs []corev1.Event
	if err := poll(ctx, func() (bool, error) {
		all, err := kustosEvents(ctx, c)
		if err != nil {
			return false, err
		}
		evs = evs[:0]
		merged := false
		for _, e := range all {
			if e.Namespace == labNamespace {
				evs = append(evs, e)
				merged = merged || e.Reason == inactivity.ReasonMerged
			}
		}
		return merged, nil
	}); err != nil {
		return fmt.Errorf("no %s event: %w", inactivity.ReasonMerged, err)
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Events written by Kustos in %s:\n", labNamespace)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LAST SEEN\tOBJECT\tTYPE\tREASON\tMESSAGE")
	inactive := 0
	for _, e := range evs {
		if e.InvolvedObject.Name != labIdle {
			return fmt.Errorf("an Event about %s, which is used: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
		if e.Reason == inactivity.ReasonInactive {
			inactive++
		}
		fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", clock(eventTime(e)), strings.ToLower(e.InvolvedObject.Kind),
			e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
	}
	_ = tw.Flush()
	if inactive != labMaxAlerts {
		return fmt.Errorf("%d %s Events, want %d", inactive, inactivity.ReasonInactive, labMaxAlerts)
	}

	// The used environment: nothing, and still running.
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: labNamespace, Name: labUsed}, &d); err != nil {
		return err
	}
	for _, pr := range s.PRs(ghOwner, ghRepo) {
		if strings.Contains(pr.Body, "/"+labUsed+"`") {
			return fmt.Errorf("a pull request for %s, which is used: #%d %s", labUsed, pr.Number, pr.Title)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "     %s (used, %d requests so far): no alert, no notice, no pull request; spec.replicas %d\n",
		labUsed, sent.Load(), ptr.Deref(d.Spec.Replicas, 1))

	shown := map[string]string{} // the Events above, by UID: their messages
	for _, e := range evs {
		shown[string(e.UID)] = e.Message
	}
	resume, err := ownerResumes(ctx, a, c, s, hook, dir, p.Number, shown)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Summary (inactivity): Prometheus was asked once per source every %s for both desktops; %s, idle for its %s timeout, was alerted %d times, %s apart (each waits for an activity check at or after its time) (Events, and notices at the owner's webhook), then its pause — spec.replicas: 0 — was proposed by pull request #%d, comments kept, and merged once %s passed; %s, used every second, got nothing. Once paused, its owner got a one-time resume link, used it, and pull request #%d set spec.replicas back to 1. Nothing was changed in the cluster by Kustos: the GitOps tool syncs the merges.\n",
		labCheck, labIdle, labTimeout, labMaxAlerts, labInterval, p.Number, requiredCheck, labUsed, resume.Number)
	return nil
}

// ownerResumes is the end of the inactivity act: the GitOps tool (the demo plays it) syncs the
// merged pause, Kustos sees the desktop paused and sends its owner the pause notice with a
// one-time resume link; she POSTs it, Kustos writes OwnerResumed and proposes spec.replicas: 1
// back by a pull request (PR mode: Kustos never scales what Git defines), merged once the check
// is green and synced by the GitOps tool. paused is the pause's pull request; shown are the
// Events printed already (by UID: their message), not printed again.
func ownerResumes(ctx context.Context, a *act, c client.Client, s *githubtest.Server, h *hook, dir string, paused int, shown map[string]string) (githubtest.PullRequest, error) {
	out := a.out
	var p githubtest.PullRequest
	a.step("the GitOps tool syncs the merge (the demo plays it): " + labIdle + " scaled to 0; Kustos sees the pause and sends its owner the notice with a resume link")
	synced := time.Now()
	if err := scaleLab(ctx, c, labIdle, 0); err != nil {
		return p, err
	}
	var notice lifecycle.Notice
	if err := poll(ctx, func() (bool, error) {
		ns, _ := h.unique(inactivity.NoticePaused)
		if len(ns) > 0 {
			notice = ns[0]
		}
		return len(ns) > 0, nil
	}); err != nil {
		return p, fmt.Errorf("no pause notice at the webhook: %w", err)
	}
	if notice.Target.Name != labIdle || len(notice.Links) != 1 || !strings.Contains(notice.Links[0].URL, extension.ResumePath+"?") {
		return p, fmt.Errorf("pause notice without one resume link for %s: %+v", labIdle, notice)
	}
	fmt.Fprintf(out, "     webhook received %q for %s, sent at %s (%s after the sync):\n", notice.Subject, notice.To, clock(notice.At), notice.At.Sub(synced).Round(time.Second))
	fmt.Fprintf(out, "       %s\n", notice.Text)
	fmt.Fprintf(out, "       [%s] %s\n", notice.Links[0].Label, shortenToken(notice.Links[0].URL))

	a.step("ana presses the button of her resume link (POST)")
	u, err := url.Parse(notice.Links[0].URL)
	if err != nil {
		return p, err
	}
	code, body, err := httpDo(http.MethodPost, u.Scheme+"://"+u.Host+u.Path, u.Query())
	if err != nil {
		return p, err
	}
	if code != http.StatusOK {
		return p, fmt.Errorf("POST the resume link: %d %s", code, pageText(body))
	}
	fmt.Fprintf(out, "     POST → %d %s\n", code, pageText(body))
	if code, _, err = httpDo(http.MethodPost, u.Scheme+"://"+u.Host+u.Path, u.Query()); err != nil {
		return p, err
	}
	if code != http.StatusConflict {
		return p, fmt.Errorf("POST the same resume link again: %d, want %d (each link works once)", code, http.StatusConflict)
	}
	fmt.Fprintf(out, "     POST the same link again → %d (each link works once)\n", code)

	a.step("waiting for Kustos's resume pull request")
	if err := poll(ctx, func() (bool, error) {
		for _, pr := range s.PRs(ghOwner, ghRepo) {
			if pr.Number != paused && strings.Contains(pr.Head, "inactivity") && pr.HeadSHA != "" && (pr.State == "open" || pr.Merged) {
				p = pr
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return p, fmt.Errorf("no resume pull request: %w", err)
	}
	path := labDir + labIdle + ".yaml"
	before, _ := s.FileAt(ghOwner, ghRepo, p.BaseSHA, path)
	after, _ := s.FileAt(ghOwner, ghRepo, p.HeadSHA, path)
	diff, err := unifiedDiff(filepath.Join(dir, fmt.Sprint(p.Number)), path, version{before, true}, version{after, true})
	if err != nil {
		return p, err
	}
	if !strings.Contains(after, "replicas: 1") {
		return p, fmt.Errorf("the resume pull request #%d does not set spec.replicas: 1:\n%s", p.Number, after)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Pull request #%d (%s → %s):\n", p.Number, p.Head, p.Base)
	fmt.Fprintln(out, "  Title: "+p.Title)
	fmt.Fprintln(out, "  Diff:")
	fmt.Fprint(out, indent(diff, "    "))
	fmt.Fprintln(out)

	a.step(fmt.Sprintf("check %s turns green: waiting for Kustos to merge; the GitOps tool syncs it", requiredCheck))
	p, err = greenAndMerged(ctx, s, p)
	if err != nil {
		return p, fmt.Errorf("resume not merged: %w", err)
	}
	fmt.Fprintf(out, "     merged #%d as %s: %s\n", p.Number, short(p.MergeCommitSHA), firstLine(s.CommitMessage(ghOwner, ghRepo, p.MergeCommitSHA)))
	if err := scaleLab(ctx, c, labIdle, 1); err != nil {
		return p, err
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: labNamespace, Name: labIdle}, &d); err != nil {
		return p, err
	}
	fmt.Fprintf(out, "     %s: spec.replicas %d again\n", labIdle, ptr.Deref(d.Spec.Replicas, 1))

	var evs []corev1.Event
	if err := poll(ctx, func() (bool, error) {
		all, err := kustosEvents(ctx, c)
		if err != nil {
			return false, err
		}
		evs = evs[:0]
		resumed := false
		for _, e := range all {
			if msg, ok := shown[string(e.UID)]; ok && msg == e.Message {
				continue
			}
			if e.Namespace == labNamespace && !eventTime(e).Before(synced.Truncate(time.Second)) {
				evs = append(evs, e)
				resumed = resumed || e.Reason == extension.ReasonOwnerResumed
			}
		}
		return resumed, nil
	}); err != nil {
		return p, fmt.Errorf("no %s event: %w", extension.ReasonOwnerResumed, err)
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Events written by Kustos in %s since the sync:\n", labNamespace)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LAST SEEN\tOBJECT\tTYPE\tREASON\tMESSAGE")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", clock(eventTime(e)), strings.ToLower(e.InvolvedObject.Kind),
			e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
	}
	_ = tw.Flush()
	return p, nil
}

// scaleLab sets a lab desktop's spec.replicas, as the GitOps tool does when it syncs a merge.
func scaleLab(ctx context.Context, c client.Client, name string, replicas int32) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: labNamespace, Name: name}, &d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := c.Patch(ctx, &d, patch); err != nil {
		return fmt.Errorf("scaling %s to %d: %w", name, replicas, err)
	}
	return nil
}

// clock is a time of day as the messages write it (UTC, to the second).
func clock(t time.Time) string { return t.UTC().Format("15:04:05Z") }

// eventTime is when an Event last happened (the reporter's clocks are to the second).
func eventTime(e corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	return t
}

// unique is every notice of kind received so far, in order, each ID once, and how many times
// each was delivered. Delivery is at least once: the pipeline sends a Notice before it writes the
// detector's state, and sends it again (same ID) when that write has to be retried.
func (h *hook) unique(kind string) ([]lifecycle.Notice, map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []lifecycle.Notice
	times := map[string]int{}
	for _, n := range h.got {
		if n.Kind != kind {
			continue
		}
		if times[n.ID] == 0 {
			out = append(out, n)
		}
		times[n.ID]++
	}
	return out, times
}
