package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

const (
	prStateNamespace = "kustos-pr-system"
	ghOwner          = "acme"
	ghRepo           = "gitops"
	baseBranch       = "main"
	prTenant         = "team-e"
	requiredCheck    = "ci/validate"
	quotaPath        = "clusters/demo/" + prTenant + "/quota.yaml"
	prPollInterval   = 2 * time.Second
)

// quotaManifest is team-e's quota in the GitOps repository: commented, and without a namespace
// (the kustomization beside it sets one). The cluster gets the same quota.
const quotaManifest = `# Team quota. Owned by the platform team; Kustos may raise it through pull requests.
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute   # referenced by the team's runbook
spec:
  hard:
    # CPU: agreed with the team.
    requests.cpu: "10"   # keep quoted
    pods: "50"
`

// gitHub is the local GitHub-compatible server of the PR-mode acts with the GitOps repository,
// started by the first act that needs it (start) and stopped at the end of the demo (finish).
type gitHub struct {
	tb        *demoTB
	s         *githubtest.Server
	tokenFile string
}

// start starts the server, once, as a step of a.
func (g *gitHub) start(a *act) error {
	if g.s != nil {
		return nil
	}
	out := a.out
	a.step("PR mode: starting a local GitHub-compatible server (internal/gitops/githubtest) with the GitOps repository " + ghOwner + "/" + ghRepo)
	s := githubtest.New(g.tb, githubtest.Options{})
	files := map[string]string{
		"README.md":                        "# GitOps\n",
		"clusters/demo/kustomization.yaml": "resources:\n  - " + prTenant + "\n  - " + shrinkTenant + "\n",
		"clusters/demo/" + prTenant + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + prTenant + "\nresources:\n  - quota.yaml\n",
		quotaPath: quotaManifest,
		"clusters/demo/" + shrinkTenant + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + shrinkTenant + "\nresources:\n  - quota.yaml\n",
		shrinkQuotaPath: shrinkQuotaManifest,
	}
	s.SeedRepo(ghOwner, ghRepo, baseBranch, files)
	s.SetRequiredChecks(ghOwner, ghRepo, requiredCheck)
	for _, p := range []string{"clusters/demo/kustomization.yaml", "clusters/demo/" + prTenant + "/kustomization.yaml", quotaPath,
		"clusters/demo/" + shrinkTenant + "/kustomization.yaml", shrinkQuotaPath} {
		fmt.Fprintf(out, "     %s\n", p)
	}
	fmt.Fprintf(out, "     branch protection on %s requires the check %s\n", baseBranch, requiredCheck)
	tokenFile := filepath.Join(g.tb.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(s.Token()+"\n"), 0o600); err != nil {
		return err
	}
	g.s, g.tokenFile = s, tokenFile
	return nil
}

// finish stops the server and everything else the acts registered with its TB (Prometheus,
// Mailpit, temporary directories); the contract violations it recorded are the error.
func (g *gitHub) finish() error { return g.tb.finish() }

// quotaAct is the demo's second act: Kustos in PR mode against the local GitHub-compatible
// server. Once the PR is merged, it runs next (the Cleaner act) with the same Kustos, and stops
// that Kustos before returning.
func quotaAct(ctx context.Context, a *act, kustosBin, kubeconfig string, c client.Client, g *gitHub, usage *quotaUsage, next func() error) error {
	out, s, tb, tokenFile := a.out, g.s, g.tb, g.tokenFile
	a.watch(prTenant, shrinkTenant, prStateNamespace)
	usage.start(a) //nolint:contextcheck // test tooling: promtest bounds its own start and stops with the TB's cleanups
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prStateNamespace}}); err != nil {
		return err
	}
	// The Cleaner act's Cleaner is stamped with its author (the demo's admin) with this key, as
	// the chart's admission webhook would; Kustos deletes only what that author may delete.
	authorKeyFile := filepath.Join(filepath.Dir(tokenFile), "cleaner-author-key")
	if err := os.WriteFile(authorKeyFile, []byte(demoAuthorKey), 0o600); err != nil {
		return err
	}
	args := []string{"run", "--kubeconfig=" + kubeconfig, "--state-namespace=" + prStateNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--mode=pr", "--github-api-url=" + s.URL(), "--github-token-file=" + tokenFile,
		"--git-repo=" + ghOwner + "/" + ghRepo, "--git-base-branch=" + baseBranch,
		"--cluster-name=demo", "--git-path=clusters/demo/", "--pr-labels=kustos,quota-resize",
		"--enable-auto-merge", "--pr-poll-interval=" + prPollInterval.String(), "--cleaner-author-key-file=" + authorKeyFile,
		// team-f's usage window (its namespace opts in to shrinking: no --enable-shrink).
		"--prometheus-url=" + usage.s.URL,
		// The Cleaner act's CloudEvent sink listens on loopback, which a tenant's sink may not
		// reach unless the operator allows it.
		"--allowed-destinations=127.0.0.1/32",
		// Deletion is an opt-in per detector and kind: the Cleaner act's preview (not in Git)
		// and the Cleaner itself are deleted from the cluster.
		"--allow-delete=cleaner:serving.knative.dev/services,cleaner:serving.knative.dev/revisions,cleaner:kustos.io/cleaners"}
	a.step("starting a second kustos run: " + strings.Join(redact(append(args[2:3:3], args[5:]...), tokenFile), " "))
	stop, err := a.startKustos("kustos (PR mode)", kustosBin, args)
	if err != nil {
		return err
	}
	defer stop()

	a.step("creating tenants:")
	t := tenant{name: prTenant, about: "the quota of " + quotaPath + " (requests.cpu 10), pods use 8500m (85%)",
		hard: rl("requests.cpu", "10", "pods", "50"), pods: []corev1.ResourceList{rl("cpu", "8500m")}}
	fmt.Fprintf(out, "     %-7s %s\n", t.name, t.about)
	if err := t.create(ctx, c); err != nil {
		return fmt.Errorf("tenant %s: %w", t.name, err)
	}
	if err := createShrinkTenant(ctx, a, c); err != nil {
		return err
	}

	a.step("waiting for Kustos's pull request for " + prTenant)
	p, err := waitQuotaPR(ctx, s, prTenant)
	if err != nil {
		return err
	}
	before, ok := s.FileAt(ghOwner, ghRepo, p.BaseSHA, quotaPath)
	if !ok {
		return fmt.Errorf("%s missing at the PR's base %s", quotaPath, p.BaseSHA)
	}
	after, ok := s.FileAt(ghOwner, ghRepo, p.HeadSHA, quotaPath)
	if !ok {
		return fmt.Errorf("%s missing on the PR branch %s", quotaPath, p.Head)
	}
	diff, err := unifiedDiff(tb.TempDir(), quotaPath, version{before, true}, version{after, true})
	if err != nil {
		return err
	}
	if err := keepsComments(before, after); err != nil {
		return err
	}

	fmt.Fprintln(out)
	fmt.Fprintf(out, "Pull request #%d (%s → %s):\n", p.Number, p.Head, p.Base)
	fmt.Fprintln(out, "  Title: "+p.Title)
	fmt.Fprintln(out, "  Body:")
	fmt.Fprint(out, indent(p.Body, "    | "))
	fmt.Fprintln(out, "  Diff:")
	fmt.Fprint(out, indent(diff, "    "))
	fmt.Fprintln(out)

	a.step(fmt.Sprintf("check %s has not reported: Kustos leaves the PR open (watching %s)", requiredCheck, 2*prPollInterval))
	time.Sleep(2 * prPollInterval)
	cur, _ := s.PR(ghOwner, ghRepo, p.Number)
	if cur.State != "open" || cur.Merged {
		return fmt.Errorf("PR #%d is %s (merged %v) before its required check passed", p.Number, cur.State, cur.Merged)
	}
	fmt.Fprintf(out, "     #%d: state %s, labels [%s], mergeable_state %s\n", cur.Number, cur.State, strings.Join(cur.Labels, ", "), cur.MergeableState)
	if got, _ := s.FileAt(ghOwner, ghRepo, baseBranch, quotaPath); got != before {
		return fmt.Errorf("%s changed on %s before the merge:\n%s", quotaPath, baseBranch, got)
	}

	// The head may have moved since (Kustos updates its branch when usage changes).
	p = cur
	if after, ok = s.FileAt(ghOwner, ghRepo, p.HeadSHA, quotaPath); !ok {
		return fmt.Errorf("%s missing on the PR branch %s", quotaPath, p.Head)
	}
	a.step(fmt.Sprintf("check %s turns green on %s: waiting for Kustos to merge", requiredCheck, short(p.HeadSHA)))
	p, err = greenAndMerged(ctx, s, p)
	if err != nil {
		return fmt.Errorf("not merged: %w", err)
	}
	merged, ok := s.FileAt(ghOwner, ghRepo, baseBranch, quotaPath)
	if !ok || merged != after {
		return fmt.Errorf("%s on %s after the merge is not the PR's version:\n%s", quotaPath, baseBranch, merged)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "merged #%d as %s\n", p.Number, p.MergeCommitSHA)
	fmt.Fprintf(out, "  commit message: %s\n", firstLine(s.CommitMessage(ghOwner, ghRepo, p.MergeCommitSHA)))
	fmt.Fprintf(out, "  %s on %s:\n", quotaPath, baseBranch)
	fmt.Fprint(out, indent(merged, "    "))

	a.step("waiting for Kustos's events on " + prTenant)
	var evs []corev1.Event
	if err := poll(ctx, func() (bool, error) {
		all, err := kustosEvents(ctx, c)
		if err != nil {
			return false, err
		}
		evs = evs[:0]
		merged := false
		for _, e := range all {
			if e.Namespace == prTenant && e.Reason != "QuotaResizeRecommended" { // the observer's
				evs = append(evs, e)
				merged = merged || e.Reason == "QuotaResizeMerged"
			}
		}
		return merged, nil
	}); err != nil {
		return fmt.Errorf("no QuotaResizeMerged event: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tOBJECT\tTYPE\tREASON\tMESSAGE")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", e.Namespace, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
	shrink, err := showShrinkPR(ctx, a, s, tb.TempDir())
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Summary (PR mode): pull request #%d, comments kept, merged by Kustos once %s passed; %s's shrink, pull request #%d, waits for its check and a reviewer; the cluster's quotas are left to the GitOps controller.\n",
		p.Number, requiredCheck, shrinkTenant, shrink.Number)

	if err := next(); err != nil {
		return err
	}
	stop()
	// The Cleaner's targets are not in the repository: they were deleted directly, no PR.
	if n := len(s.PRs(ghOwner, ghRepo)); n != 2 {
		return fmt.Errorf("want exactly two pull requests in the end (%s's grow, %s's shrink), got %d", prTenant, shrinkTenant, n)
	}
	return nil
}

// waitQuotaPR waits for the one open pull request of namespace ns's quota.
func waitQuotaPR(ctx context.Context, s *githubtest.Server, ns string) (githubtest.PullRequest, error) {
	var p githubtest.PullRequest
	err := poll(ctx, func() (bool, error) {
		var mine []githubtest.PullRequest
		for _, pr := range s.PRs(ghOwner, ghRepo) {
			if strings.Contains(pr.Head, "/quota/"+ns+"/") {
				mine = append(mine, pr)
			}
		}
		if len(mine) > 1 {
			return false, fmt.Errorf("want one pull request for %s, got %d: %+v", ns, len(mine), mine)
		}
		if len(mine) == 1 && mine[0].State == "open" && mine[0].HeadSHA != "" {
			p = mine[0]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return p, fmt.Errorf("no pull request for %s: %w", ns, err)
	}
	return p, nil
}

// poll calls cond every 250ms until it is true, fails, or ctx ends.
// greenAndMerged reports the required check green on p's head (the CI) and waits until Kustos
// has merged p; it returns p as merged.
func greenAndMerged(ctx context.Context, s *githubtest.Server, p githubtest.PullRequest) (githubtest.PullRequest, error) {
	s.SetCheck(ghOwner, ghRepo, p.HeadSHA, requiredCheck, "success")
	err := poll(ctx, func() (bool, error) {
		cur, ok := s.PR(ghOwner, ghRepo, p.Number)
		if !ok {
			return false, fmt.Errorf("PR #%d disappeared", p.Number)
		}
		if cur.State == "closed" && !cur.Merged {
			return false, fmt.Errorf("PR #%d was closed without merging", p.Number)
		}
		p = cur
		return cur.Merged, nil
	})
	return p, err
}

func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// version is a file as a commit has it: its text, or absent.
type version struct {
	text   string
	exists bool
}

// unifiedDiff is `git diff` of two versions of path, computed in dir: a file absent on one side
// is shown as created or deleted (/dev/null), not as emptied.
func unifiedDiff(dir, path string, before, after version) (string, error) {
	sides := []string{"/dev/null", "/dev/null"}
	for i, v := range []version{before, after} {
		if !v.exists {
			continue
		}
		side := []string{"a", "b"}[i]
		f := filepath.Join(dir, side, path)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(f, []byte(v.text), 0o644); err != nil {
			return "", err
		}
		sides[i] = side + "/" + path
	}
	cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--no-prefix", sides[0], sides[1])
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "", fmt.Errorf("the PR does not change %s", path)
	case errors.As(err, &ee) && ee.ExitCode() == 1: // differences
		return string(b), nil
	default:
		return "", fmt.Errorf("git diff: %w: %s", err, stderr.String())
	}
}

// keepsComments checks that every comment of before is still in after.
func keepsComments(before, after string) error {
	for _, l := range strings.Split(before, "\n") {
		if i := strings.Index(l, "#"); i >= 0 && !strings.Contains(after, strings.TrimSpace(l[i:])) {
			return fmt.Errorf("the PR dropped the comment %q", strings.TrimSpace(l[i:]))
		}
	}
	return nil
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(strings.TrimRight(prefix+l, " ") + "\n")
	}
	return b.String()
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func redact(args []string, tokenFile string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, tokenFile, "$TMP/token")
	}
	return out
}

// demoTB runs githubtest outside a test: Errorf records (the demo fails at the end), Fatalf
// records and panics with tbFatal (prAct recovers it), TempDir and Cleanup are undone by finish.
type demoTB struct {
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

type tbFatal string

var _ githubtest.TB = (*demoTB)(nil)

func (t *demoTB) Helper() {}

func (t *demoTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *demoTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Errorf("%s", msg)
	panic(tbFatal(msg))
}

func (t *demoTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (t *demoTB) TempDir() string {
	dir, err := os.MkdirTemp("", "kustos-demo-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (t *demoTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// failed says whether an error was recorded.
func (t *demoTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.errs) > 0
}

// finish runs the cleanups, last registered first, and returns the recorded errors.
func (t *demoTB) finish() error {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("the GitHub-compatible server reported %d error(s) (contract violations fail the demo):\n  %s",
		len(t.errs), strings.Join(t.errs, "\n  "))
}

// lockedBuffer is a bytes.Buffer that a child process may write while it is read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
