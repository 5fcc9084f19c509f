package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// actDeadlines are each act's own deadline, sized for a loaded 2-core machine (`make demo` beside
// `make test`): several times what the act takes on a quiet one (observer 8s, pr 14s, cleaner
// 15s, expiry 30s, inactivity 42s with the owner's resume, vsphere 30s). One overall deadline made
// the last act pay for the earlier acts' slowness, and named none. setup is starting the control
// plane.
var actDeadlines = map[string]time.Duration{
	actSetup:      3 * time.Minute,
	actObserver:   2 * time.Minute,
	actPR:         2 * time.Minute,
	actCleaner:    2 * time.Minute,
	actExpiry:     3 * time.Minute,
	actInactivity: 4 * time.Minute,
	actVSphere:    3 * time.Minute,
}

// actSetup is the control plane's start, reported like an act when it fails.
const actSetup = "setup"

// act is one act of the demo while it runs: the step it is at, its Kustos's log and the
// namespaces it works in. When it fails, the demo reports all of them (report).
type act struct {
	name     string
	deadline time.Duration
	out      io.Writer

	mu         sync.Mutex
	at         string        // the step it is at
	logs       *lockedBuffer // its Kustos's stderr; nil: no Kustos (yet)
	logOf      string        // which Kustos that is
	namespaces []string      // where its Events are
}

// step prints s as the act's next step and remembers it.
func (a *act) step(s string) {
	a.mu.Lock()
	a.at = s
	a.mu.Unlock()
	step(a.out, s)
}

// watch adds namespaces whose Events the failure report shows.
func (a *act) watch(namespaces ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.namespaces = append(a.namespaces, namespaces...)
}

// useLogs makes logs the act's Kustos log (the Cleaner act shares the PR act's Kustos).
func (a *act) useLogs(of string, logs *lockedBuffer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logOf, a.logs = of, logs
}

// startKustos runs kustosBin with args as the act's Kustos, its stderr kept for the failure
// report. stop (idempotent) ends it with SIGTERM and waits.
func (a *act) startKustos(of, kustosBin string, args []string) (stop func(), err error) {
	logs := &lockedBuffer{}
	cmd := exec.Command(kustosBin, args...)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (run `make build`): %w", kustosBin, err)
	}
	a.useLogs(of, logs)
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}, nil
}

// acts runs the acts: each with its own deadline, one at a time (the Cleaner act inside the PR
// act, with its Kustos). The first to fail is the one reported.
type acts struct {
	out     io.Writer
	timeout time.Duration // -timeout: every act's deadline; 0: actDeadlines
	took    map[string]time.Duration
	ran     int // acts started so far
	mu      sync.Mutex
	failed  *act
	failure error
}

func newActs(out io.Writer, timeout time.Duration) *acts {
	return &acts{out: out, timeout: timeout, took: map[string]time.Duration{}}
}

// run runs f as act name with the act's deadline, counted from now: an act nested in another
// (the Cleaner act in the PR act) keeps parent's values, not its deadline. A githubtest Fatalf
// (tbFatal) in f is the act's failure too.
func (r *acts) run(parent context.Context, name string, f func(ctx context.Context, a *act) error) (err error) {
	a := &act{name: name, deadline: actDeadlines[name], out: r.out}
	if r.ran > 0 {
		fmt.Fprintln(r.out) // a blank line between acts
	}
	r.ran++
	if r.timeout > 0 {
		a.deadline = r.timeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), a.deadline)
	defer cancel()
	t0 := time.Now()
	defer func() {
		r.took[name] = time.Since(t0)
		if p := recover(); p != nil {
			fatal, ok := p.(tbFatal)
			if !ok {
				panic(p)
			}
			err = errors.New(string(fatal))
		}
		if err != nil {
			r.mu.Lock()
			if r.failed == nil { // the innermost act fails first
				r.failed, r.failure = a, err
			}
			r.mu.Unlock()
		}
	}()
	return f(ctx, a)
}

// report writes, for the act that failed, which act and step failed and why, the last
// logLines lines of its Kustos's log and the Events in its namespaces. c lists the Events
// (nil: no control plane).
func (r *acts) report(w io.Writer, c client.Client, err error) {
	r.mu.Lock()
	a, failure := r.failed, r.failure
	r.mu.Unlock()
	if a == nil {
		fmt.Fprintf(w, "\ndemo failed: %v\n", err)
		return
	}
	a.mu.Lock()
	at, logs, logOf, namespaces := a.at, a.logs, a.logOf, append([]string(nil), a.namespaces...)
	a.mu.Unlock()
	fmt.Fprintf(w, "\ndemo failed: the %s act, at the step %q: %v\n", a.name, at, failure)
	if errors.Is(failure, context.DeadlineExceeded) {
		fmt.Fprintf(w, "  (the act's deadline, %s, passed; -timeout sets every act's)\n", a.deadline)
	}
	// Contract violations the GitHub-compatible server recorded are joined to the failure.
	if extra := strings.TrimSpace(strings.Replace(err.Error(), failure.Error(), "", 1)); extra != "" {
		fmt.Fprintf(w, "  also: %s\n", extra)
	}
	if logs != nil {
		tail, n := lastLines(logs.String(), logLines)
		fmt.Fprintf(w, "\n%s: the last %d lines of its log:\n", logOf, n)
		fmt.Fprint(w, indent(tail, "  "))
	}
	if c == nil || len(namespaces) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintf(w, "\nEvents in %s (kubectl get events -n …):\n", strings.Join(namespaces, ", "))
	evs, lerr := eventsIn(ctx, c, namespaces)
	if lerr != nil {
		fmt.Fprintf(w, "  cannot list them: %v\n", lerr)
		return
	}
	if len(evs) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LAST SEEN\tNAMESPACE\tOBJECT\tSOURCE\tTYPE\tREASON\tMESSAGE")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s\t%s/%s\t%s\t%s\t%s\t%s\n", clock(eventTime(e)), e.Namespace, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name,
			e.Source.Component, e.Type, e.Reason, clip(e.Message, 300))
	}
	_ = tw.Flush()
}

// logLines is how much of the failed act's Kustos log the report shows.
const logLines = 40

// lastLines is the last n lines of s (each clipped: a JSON log line can be long), and how many
// there are.
func lastLines(s string, n int) (string, int) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return "", 0
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = clip(l, 1000)
	}
	return strings.Join(lines, "\n") + "\n", len(lines)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// eventsIn lists the Events of every source in namespaces, oldest first.
func eventsIn(ctx context.Context, c client.Client, namespaces []string) ([]corev1.Event, error) {
	var out []corev1.Event
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).Before(eventTime(out[j])) })
	return out, nil
}
