package main

import (
	"context"
	"encoding/json"
	"fmt"
	stdhtml "html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify/mailpittest"
)

const (
	expiryNamespace  = "previews-lab"
	expiryStateNS    = "kustos-expiry-system"
	expiryDir        = "clusters/demo/" + expiryNamespace + "/"
	expiryTTL        = 20 * time.Second
	expiryWarnBefore = 15 * time.Second
	expiryInterval   = 8 * time.Second
	// expiryGroupWindow gathers the previews that fall due together into one pull request.
	expiryGroupWindow = 5 * time.Second
)

// previews are the act's preview environments: the first is extended, the other two go.
var previews = []string{"preview-pr-41", "preview-pr-42", "preview-pr-43"}

// previewManifest is a preview environment as a team declares it in Git: its owner and its
// lifetime next to it.
func previewManifest(name string) string {
	return `# Preview environment of ` + name + `; goes when its lifetime ends.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  annotations:
    kustos.io/owner: ana@example.com   # warned before the deadline
    kustos.io/ttl: 20s                 # counted from creation
spec:
  replicas: 0
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
        - name: app
          image: registry.example/app:1
`
}

// expiryAct is the demo's last act: three preview environments defined in Git with a 20 s
// lifetime, Kustos in PR mode with short warning and notification intervals, a webhook that
// receives the owner's warnings with their extension links. One link is clicked: the preview
// is extended and Kustos writes the new deadline back to Git by a pull request; the other two
// fall due together and are removed by one grouped pull request at their deadline.
func expiryAct(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client, g *gitHub) error {
	out, s, tb, tokenFile := a.out, g.s, g.tb, g.tokenFile
	a.watch(expiryNamespace, expiryStateNS)
	dir := tb.TempDir()
	a.step("Expiry: a real SMTP server (Mailpit, from bin/) and a webhook receiver for the owner's notices, and three preview environments in Git and in the cluster")
	hook, err := startHook(ctx)
	if err != nil {
		return err
	}
	mp := mailpittest.Start(tb, mailpittest.AcceptAny...) //nolint:contextcheck // test tooling: it bounds its own requests and stops with tb's cleanups
	files := map[string]string{
		expiryDir + "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + expiryNamespace +
			"\nresources:\n  - preview-pr-41.yaml\n  - preview-pr-42.yaml\n  - preview-pr-43.yaml\n",
	}
	for _, name := range previews {
		files[expiryDir+name+".yaml"] = previewManifest(name)
	}
	s.PushBaseCommit(ghOwner, ghRepo, baseBranch, "add three preview environments", files)
	fmt.Fprint(out, indent(files[expiryDir+"preview-pr-41.yaml"], "     | "))
	for _, ns := range []string{expiryNamespace, expiryStateNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	created := time.Now()
	for _, name := range previews {
		labels := map[string]string{"app": name}
		if err := c.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: expiryNamespace, Name: name,
				Annotations: map[string]string{"kustos.io/owner": "ana@example.com", "kustos.io/ttl": "20s"}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}},
		}); err != nil {
			return err
		}
	}

	keyFile, addr, err := extensionServer(dir, "demo-extension-key-0123456789abcdef0123")
	if err != nil {
		return err
	}
	args := []string{"run", "--kubeconfig=" + kubeconfig, "--state-namespace=" + expiryStateNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--mode=pr", "--github-api-url=" + s.URL(), "--github-token-file=" + tokenFile,
		"--git-repo=" + ghOwner + "/" + ghRepo, "--git-base-branch=" + baseBranch,
		"--cluster-name=demo", "--git-path=clusters/demo/", "--enable-auto-merge", "--pr-poll-interval=" + prPollInterval.String(),
		"--group-window=" + expiryGroupWindow.String(), "--enable-cleaners=false",
		"--expiry-warning-before=" + expiryWarnBefore.String(), "--notification-interval=" + expiryInterval.String(),
		"--extension-addr=" + addr, "--extension-url=http://" + addr, "--extension-periods=1m,5m", "--extension-max=10m",
		"--extension-key-file=" + keyFile, "--notify-webhook-url=" + hook.url,
		"--notify-mail-host=127.0.0.1", fmt.Sprintf("--notify-mail-port=%d", mp.Port), "--notify-mail-tls=none",
		"--notify-mail-from=Kustos <kustos@example.com>", "--notify-mail-batch-window=2s"}
	a.step("starting kustos run --mode=pr --group-window=5s --expiry-warning-before=15s --notification-interval=8s --extension-addr=… --notify-webhook-url=… --notify-mail-host=…")
	stop, err := a.startKustos("kustos (expiry)", kustosBin, args)
	if err != nil {
		return err
	}
	defer stop()

	a.step(fmt.Sprintf("waiting for the warnings (deadline − 15 s, about %s after creation)", (expiryTTL - expiryWarnBefore).Round(time.Second)))
	var warnings map[string]lifecycle.Notice
	if err := poll(ctx, func() (bool, error) {
		warnings = hook.byTarget("expiry.warning")
		return len(warnings) == len(previews), nil
	}); err != nil {
		return fmt.Errorf("no warnings: %w", err)
	}
	w := warnings["preview-pr-41"]
	fmt.Fprintf(out, "     webhook received %q for %s, %s after creation:\n", w.Subject, w.To, time.Since(created).Round(time.Second))
	fmt.Fprintf(out, "       %s\n", w.Text)
	for _, lk := range w.Links {
		fmt.Fprintf(out, "       [%s] %s\n", lk.Label, shortenToken(lk.URL))
	}

	var link string
	for _, lk := range w.Links {
		if strings.HasSuffix(lk.Label, "5m") {
			link = lk.URL
		}
	}
	a.step("the owner opens the 5m link (GET shows the choice and changes nothing), then presses the button (POST)")
	code, body, err := httpDo(http.MethodGet, link, nil)
	if err != nil {
		return fmt.Errorf("GET the link: %w", err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET the link: %d %s", code, pageText(body))
	}
	fmt.Fprintf(out, "     GET  → %d %s\n", code, pageText(body))
	u, _ := url.Parse(link)
	code, body, err = httpDo(http.MethodPost, "http://"+addr+"/extend", u.Query())
	if err != nil {
		return fmt.Errorf("POST the link: %w", err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST the link: %d %s", code, pageText(body))
	}
	fmt.Fprintf(out, "     POST → %d %s\n", code, pageText(body))
	code, _, _ = httpDo(http.MethodPost, "http://"+addr+"/extend", u.Query())
	fmt.Fprintf(out, "     POST the same link again → %d (each link works once)\n", code)

	// The mail after the click: the click must come within the notification interval after the
	// warning (then the deadline), and the mail waits for its batch window and SMTP, which take
	// longer on a busy machine.
	var mails []mailpittest.Message
	if err := poll(ctx, func() (bool, error) { //nolint:contextcheck // test tooling: each request has its own 10 s deadline
		mails = mp.MessagesTo(tb, "ana@example.com", 1)
		return len(mails) > 0, nil
	}); err != nil {
		return fmt.Errorf("no warning mail at Mailpit: %w", err)
	}
	batched := "one mail for the three previews (batched)"
	if len(mails) > 1 {
		batched = fmt.Sprintf("%d mails (the warnings came further apart than the 2 s batch window)", len(mails))
	}
	fmt.Fprintf(out, "     the same warnings reached the owner by mail too: %s, subject %q, Message-ID %s; its text part:\n", batched, mails[0].Subject, mails[0].MessageID)
	fmt.Fprint(out, indent(shortenTokens(mails[0].Text)+"\n", "       | "))

	a.step("waiting for Kustos's pull requests: the extension written back to Git, the two other previews removed together at their deadline")
	seen := map[int]bool{}
	var merged []githubtest.PullRequest
	done := func() bool {
		p41, _ := s.FileAt(ghOwner, ghRepo, baseBranch, expiryDir+"preview-pr-41.yaml")
		_, has42 := s.FileAt(ghOwner, ghRepo, baseBranch, expiryDir+"preview-pr-42.yaml")
		_, has43 := s.FileAt(ghOwner, ghRepo, baseBranch, expiryDir+"preview-pr-43.yaml")
		return strings.Contains(p41, "kustos.io/expires-at") && !has42 && !has43
	}
	if err := poll(ctx, func() (bool, error) {
		open := 0
		for _, p := range s.PRs(ghOwner, ghRepo) {
			if !strings.Contains(p.Head, "expiry") || seen[p.Number] {
				continue
			}
			if p.State == "open" && p.HeadSHA != "" {
				open++
				s.SetCheck(ghOwner, ghRepo, p.HeadSHA, requiredCheck, "success") // CI passes
			}
			if p.Merged {
				seen[p.Number] = true
				merged = append(merged, p)
			}
		}
		return open == 0 && done(), nil
	}); err != nil {
		return fmt.Errorf("want the extension in Git and preview-pr-42 and preview-pr-43 removed from it by merged pull requests (merged: %d): %w", len(merged), err)
	}
	grouped := false
	for _, p := range merged {
		_, kept42 := s.FileAt(ghOwner, ghRepo, p.HeadSHA, expiryDir+"preview-pr-42.yaml")
		_, kept43 := s.FileAt(ghOwner, ghRepo, p.HeadSHA, expiryDir+"preview-pr-43.yaml")
		grouped = grouped || (!kept42 && !kept43 && strings.Contains(p.Head, "/group-namespace/"))
		fmt.Fprintf(out, "\n     Pull request #%d merged: %s  (branch %s)\n", p.Number, p.Title, p.Head)
		for _, name := range previews {
			path := expiryDir + name + ".yaml"
			var before, after version
			before.text, before.exists = s.FileAt(ghOwner, ghRepo, p.BaseSHA, path)
			after.text, after.exists = s.FileAt(ghOwner, ghRepo, p.HeadSHA, path)
			if before == after {
				continue
			}
			diff, err := unifiedDiff(filepath.Join(dir, fmt.Sprint(p.Number)), path, before, after)
			if err != nil {
				return err
			}
			fmt.Fprint(out, indent(diff, "       "))
		}
	}
	if !grouped {
		return fmt.Errorf("preview-pr-42 and preview-pr-43 fell due together but no one pull request of their namespace's group removed both")
	}
	fmt.Fprintln(out)
	all, err := kustosEvents(ctx, c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tREASON\tMESSAGE")
	for _, e := range all {
		if e.Namespace == expiryNamespace {
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\n", strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Summary (expiry): the owner was warned about the three previews (webhook, and batched mail) with one-time links before anything happened; one link extended preview-pr-41 and Kustos wrote kustos.io/expires-at to Git; preview-pr-42 and preview-pr-43 fell due together and were removed from Git by one grouped pull request (one per namespace, --group-by=namespace), a full notification interval after their warning. Nothing was deleted in the cluster by Kustos: the GitOps tool syncs the merges.")
	return nil
}

// extensionServer prepares what a Kustos needs to serve extension links: the signing key in a
// file below dir, and a free loopback address for --extension-addr.
func extensionServer(dir, key string) (keyFile, addr string, err error) {
	keyFile = filepath.Join(dir, "extension-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		return "", "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	addr = l.Addr().String()
	return keyFile, addr, l.Close()
}

// hook is the owner's webhook receiver.
type hook struct {
	url string
	mu  sync.Mutex
	got []lifecycle.Notice
}

func startHook(ctx context.Context) (*hook, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hook{url: "http://" + l.Addr().String() + "/notices"}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n lifecycle.Notice
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, n)
		h.mu.Unlock()
	})}
	go func() { _ = srv.Serve(l) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return h, nil
}

func (h *hook) byTarget(kind string) map[string]lifecycle.Notice {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]lifecycle.Notice{}
	for _, n := range h.got {
		if n.Kind == kind {
			out[n.Target.Name] = n
		}
	}
	return out
}

func httpDo(method, u string, form url.Values) (int, string, error) {
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = http.PostForm(u, form)
	} else {
		resp, err = http.Get(u)
	}
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

var (
	tags   = regexp.MustCompile(`(?s)<title>.*?</title>|<[^>]+>`)
	spaces = regexp.MustCompile(`\s+`)
)

// pageText is the visible text of an extension page, on one line.
func pageText(html string) string {
	return strings.TrimSpace(spaces.ReplaceAllString(stdhtml.UnescapeString(tags.ReplaceAllString(html, " ")), " "))
}

// shortenTokens shortens every link in a text as shortenToken does.
func shortenTokens(text string) string {
	return linkRE.ReplaceAllStringFunc(text, shortenToken)
}

var linkRE = regexp.MustCompile(`http://[^\s)\]]+`)

// shortenToken keeps a printed link readable: the token's signature is cut.
func shortenToken(u string) string {
	i := strings.Index(u, "token=")
	if i < 0 || len(u) < i+30 {
		return u
	}
	return u[:i+30] + "…"
}
