package pr

import (
	"context"
	"net/http"
	"testing"
)

// restCalls counts the REST requests logged since the last reset; rateLimited counts those GitHub
// charges against the rate limit (a 304 answer to a conditional GET is free).
func restCalls(e *env) (rest, rateLimited int) {
	for _, r := range e.s.Requests() {
		if r.Git {
			continue
		}
		rest++
		if r.Status != http.StatusNotModified {
			rateLimited++
		}
	}
	return rest, rateLimited
}

// BenchmarkNewPR reports the REST calls it takes to open a new pull request (target ≤ 7), on the
// GitHub-compatible test server. Time per op includes the shallow clone and the local server.
func BenchmarkNewPR(b *testing.B) {
	ctx := context.Background()
	var calls int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		e := newEnv(b)
		w := e.writer(Config{})
		if _, err := w.BaseBranch(ctx); err != nil { // once per process, not per PR
			b.Fatal(err)
		}
		e.s.ResetRequests()
		b.StartTimer()
		if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		calls, _ = restCalls(e)
		b.StartTimer()
	}
	b.ReportMetric(float64(calls), "rest-calls/pr")
}

// BenchmarkIdlePoll reports what one poll of an open, unchanged pull request costs: the REST calls
// Kustos makes (Status, then MergeIfReady on the state just read) and how many of them count
// against GitHub's rate limit (target 0: the ETag cache turns them into 304s).
func BenchmarkIdlePoll(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	// Auto-merge on, the required check still pending: the PR stays open and blocked.
	e.s.SetRequiredChecks(owner, repoName, "ci/validate")
	w := e.writer(Config{})
	c := quotaChange("10", "12")
	if _, err := w.Propose(ctx, c, ProposeOptions{}); err != nil {
		b.Fatal(err)
	}
	poll := func() {
		st, err := w.Status(ctx, c.Key)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := w.MergeIfReady(ctx, c.Key, st, true); err != nil {
			b.Fatal(err)
		}
	}
	// Until GitHub has computed mergeable the PR's representation changes; an idle PR is one
	// whose state has settled (here: blocked by the pending check).
	for i := 0; ; i++ {
		st, err := w.Status(ctx, c.Key)
		if err != nil {
			b.Fatal(err)
		}
		if st.Mergeable != nil && st.MergeableState == "blocked" {
			break
		}
		if i == 100 {
			b.Fatalf("PR never settled: %+v", st)
		}
	}
	poll()
	e.s.ResetRequests()
	polls := 0
	for b.Loop() {
		poll()
		polls++
	}
	rest, limited := restCalls(e)
	b.ReportMetric(float64(rest)/float64(polls), "rest-calls/poll")
	b.ReportMetric(float64(limited)/float64(polls), "rate-limited-calls/poll")
}
