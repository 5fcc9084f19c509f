package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// soakTB runs githubtest outside a test: Errorf records a contract violation (the run fails),
// Fatalf records and panics with tbFatal (the caller recovers it), TempDir and Cleanup are
// undone by finish.
type soakTB struct {
	dir string

	mu       sync.Mutex
	errs     []string
	cleanups []func()
	n        int
}

type tbFatal string

var _ githubtest.TB = (*soakTB)(nil)

func (t *soakTB) Helper() {}

func (t *soakTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *soakTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	panic(tbFatal(msg))
}

func (t *soakTB) Logf(string, ...any) {}

func (t *soakTB) TempDir() string {
	t.mu.Lock()
	t.n++
	n := t.n
	t.mu.Unlock()
	d := filepath.Join(t.dir, fmt.Sprintf("tmp-%d", n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		panic(tbFatal(err.Error()))
	}
	return d
}

func (t *soakTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// takeErrs returns the errors recorded since the last call.
func (t *soakTB) takeErrs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.errs
	t.errs = nil
	return e
}

func (t *soakTB) finish() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// catch runs f and turns the server's Fatalf (a git ref moved under a human's push, say) into
// an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if m, ok := r.(tbFatal); ok {
				err = fmt.Errorf("githubtest: %s", string(m))
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// replica is one Kustos process slot: it is killed and restarted, each life with its own log
// and its own heap readings.
type replica struct {
	id      int
	bin     string
	args    []string
	logDir  string
	metrics string // host:port of /metrics
	ext     string // host:port of the extension server

	mu     sync.Mutex
	proc   *kustosproc.Process
	lives  int
	killed bool // the current process was killed on purpose
	heaps  []heapReading
}

type heapReading struct {
	life int
	at   time.Time
	live float64 // bytes
}

func (r *replica) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lives++
	log := r.logPathLocked()
	p, err := kustosproc.Start(r.bin, append(append([]string(nil), r.args...), "--metrics-bind-address="+r.metrics, "--extension-addr="+r.ext), log)
	if err != nil {
		return err
	}
	r.proc, r.killed = p, false
	return nil
}

// logPath is the output of the current (or last) life.
func (r *replica) logPath() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logPathLocked()
}

func (r *replica) logPathLocked() string {
	return filepath.Join(r.logDir, fmt.Sprintf("kustos-%d-%d.log", r.id, r.lives))
}

// kill sends SIGKILL and waits for the exit.
func (r *replica) kill() {
	r.mu.Lock()
	p := r.proc
	r.killed = true
	r.mu.Unlock()
	if p == nil {
		return
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.Exited()
}

// exitedOnItsOwn reports a process that exited without being killed.
func (r *replica) exitedOnItsOwn() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil || r.killed {
		return nil
	}
	return r.proc.Running()
}

func (r *replica) stop() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil && !r.killed {
		_, _, _ = p.Stop(stopGrace)
	}
}

// readHeap records the Go heap after the last GC of the running process.
func (r *replica) readHeap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := kmetrics.NewScraper(r.metrics).Scrape(ctx)
	if err != nil {
		return
	}
	live, ok := m.Sum("go_gc_heap_live_bytes", nil)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heaps = append(r.heaps, heapReading{life: r.lives, at: time.Now(), live: live})
}

// kustosArgs are the flags every replica runs with.
func kustosArgs(kubeconfig, apiURL, tokenFile, logLevel, groupBy string, notify, warn time.Duration, smtpPort int, extURL, extKeyFile string) []string {
	return []string{
		// Warnings by mail to each preview's owner (through the proxy that can take the mail
		// server away), with extension links served by every replica behind one front door.
		"--notify-mail-host=127.0.0.1", fmt.Sprintf("--notify-mail-port=%d", smtpPort), "--notify-mail-tls=none",
		"--notify-mail-from=Kustos <kustos@example.com>", "--notify-mail-batch-window=" + mailBatchWindow.String(),
		"--extension-url=" + extURL, "--extension-key-file=" + extKeyFile,
		"--extension-periods=" + strings.Join(extensionPeriods, ","), "--extension-max=1m",
		"--kubeconfig=" + kubeconfig, "--state-namespace=" + stateNamespace,
		"--leader-elect=true", "--health-probe-bind-address=0", "--log-level=" + logLevel,
		"--mode=pr", "--github-api-url=" + apiURL, "--github-token-file=" + tokenFile,
		"--git-repo=" + ghOwner + "/" + ghRepo, "--git-base-branch=" + baseBranch,
		"--cluster-name=" + clusterName, "--git-path=clusters/" + clusterName + "/",
		"--pr-labels=kustos", "--enable-auto-merge", "--pr-poll-interval=3s",
		"--group-by=expiry=" + groupBy + ",inactivity=none", "--group-window=" + groupWindow.String(), "--max-open-prs=20", "--max-new-prs-per-hour=0",
		"--enable-expiry=true", "--lifecycle-kinds=apps/v1/Deployment",
		"--expiry-warning-before=" + warn.String(), "--notification-interval=" + notify.String(),
		// The workload deletes nothing through Kustos directly: every preview has a manifest in
		// Git. The allowance is there so that a direct deletion is possible, and would be seen.
		"--allow-delete=expiry:apps/deployments",
		// The Leases of targets gone are swept every minute (10 minutes after their last
		// decision), not every hour: what Kustos holds then levels off within the run, as it
		// does within an hour in a cluster, and the heap rule compares like with like.
		"--lease-sweep-interval=1m",
	}
}

// endpoints are the REST endpoints Kustos uses, for faults aimed at one of them.
var endpoints = []string{
	"*",
	"/repos/{owner}/{repo}/pulls",
	"/repos/{owner}/{repo}/pulls/{pull_number}",
	"/repos/{owner}/{repo}/pulls/{pull_number}/merge",
	"/repos/{owner}/{repo}/git/ref/{ref}",
	"/repos/{owner}/{repo}/git/refs",
	"/repos/{owner}/{repo}/git/refs/{ref}",
	"/repos/{owner}/{repo}/git/commits",
	"/repos/{owner}/{repo}/git/trees",
	"/repos/{owner}/{repo}/contents/{path}",
	"/repos/{owner}/{repo}/commits/{ref}/check-runs",
	"/repos/{owner}/{repo}/commits/{ref}/status",
	"/repos/{owner}/{repo}/issues/{issue_number}/comments",
}

// fileAtFunc tells whether a file exists at a commit; commits do not change, so each answer is
// kept.
func fileAtFunc(s *githubtest.Server) func(sha, path string) bool {
	var mu sync.Mutex
	known := map[string]bool{}
	return func(sha, path string) bool {
		mu.Lock()
		defer mu.Unlock()
		k := sha + ":" + path
		if v, ok := known[k]; ok {
			return v
		}
		_, ok := s.FileAt(ghOwner, ghRepo, sha, path)
		known[k] = ok
		return ok
	}
}

// isAncestorFunc walks the first 200 commits below b (breadth first) looking for a.
func isAncestorFunc(s *githubtest.Server) func(a, b string) bool {
	return func(a, b string) bool {
		seen := map[string]bool{}
		queue := []string{b}
		for len(queue) > 0 && len(seen) < 200 {
			c := queue[0]
			queue = queue[1:]
			if c == a {
				return true
			}
			if seen[c] {
				continue
			}
			seen[c] = true
			queue = append(queue, s.CommitParents(ghOwner, ghRepo, c)...)
		}
		return false
	}
}

func joinLines(ls []string) string { return strings.Join(ls, "; ") }
