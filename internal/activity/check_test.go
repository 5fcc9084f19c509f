package activity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// answerServer serves one canned Prometheus API answer to every query, as JSON on the wire, and
// records the partial_response parameter of each request (its form value, as Thanos reads it).
type answerServer struct {
	*httptest.Server
	mu sync.Mutex
	// partial is each request's method and partial_response value, e.g. "POST false".
	partial []string
}

func newAnswerServer(t *testing.T, refusePost bool, answer map[string]any) *answerServer {
	t.Helper()
	body, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	s := &answerServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusePost && r.Method == http.MethodPost {
			http.Error(w, "POST not allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.partial = append(s.partial, r.Method+" "+r.Form.Get("partial_response"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestCheckWarnings: an answer with a warning — what Thanos's querier sends with the series of
// the stores that did answer when one did not — is partial: the source is StatusPartial with no
// target's activity, however complete the result looks, so nobody looks idle for a store that
// was down. The warning's text goes to Warnings (the operator's log), clipped and without URL
// credentials, not to Detail (tenants' Events). Every request asks for whole answers
// (partial_response=false), in the POST form and in the GET fallback.
func TestCheckWarnings(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	lastUse := float64(now.Add(-30 * time.Minute).Unix())
	ts := float64(now.Unix())
	const storeDown = `receive series from Addr: 10.0.7.12:10901 LabelSets: {store="b"}: rpc error: code = Unavailable desc = connection refused`
	vector := map[string]any{"resultType": "vector", "result": []any{
		map[string]any{"metric": map[string]string{availableLabel: "1"}, "value": []any{ts, "1"}},
		map[string]any{"metric": map[string]string{"namespace": "lab", "name": "vm-1"}, "value": []any{ts, fmt.Sprint(lastUse)}},
	}}
	matrix := map[string]any{"resultType": "matrix", "result": []any{
		map[string]any{"metric": map[string]string{availableLabel: "1"}, "values": []any{[]any{ts - 60, "1"}, []any{ts, "1"}}},
		map[string]any{"metric": map[string]string{"namespace": "lab", "name": "vm-1"}, "values": []any{[]any{ts - 60, "1"}, []any{ts, "0"}}},
	}}
	many := make([]string, 8)
	for i := range many {
		many[i] = fmt.Sprintf("store %d did not answer", i)
	}
	for _, tc := range []struct {
		name       string
		mode       string
		refusePost bool
		answer     map[string]any
		status     Status
		targets    int
		warnings   []string // want, in Warnings
	}{
		{"a whole answer", ModeInstant, false, map[string]any{"status": "success", "data": vector}, StatusOK, 1, nil},
		{"a warning: partial", ModeInstant, false, map[string]any{"status": "success", "data": vector, "warnings": []string{storeDown}}, StatusPartial, 0, []string{storeDown}},
		{"a warning in a range query: partial", ModeRange, false, map[string]any{"status": "success", "data": matrix, "warnings": []string{"remote read: connection refused"}}, StatusPartial, 0, []string{"remote read: connection refused"}},
		{"a warning from a server that takes only GET", ModeInstant, true, map[string]any{"status": "success", "data": vector, "warnings": []string{storeDown}}, StatusPartial, 0, []string{storeDown}},
		{"a URL password in a warning is hidden", ModeInstant, false, map[string]any{"status": "success", "data": vector, "warnings": []string{"remote read https://ro:s3cret@lts.example/api/v1/read failed"}}, StatusPartial, 0, []string{"remote read https://***@lts.example/api/v1/read failed"}},
		{"eight warnings: five kept", ModeInstant, false, map[string]any{"status": "success", "data": vector, "warnings": many}, StatusPartial, 0, append(many[:5:5], "(and 3 more)")},
		{"an info annotation is no warning", ModeInstant, false, map[string]any{"status": "success", "data": vector, "infos": []string{"PromQL info: metric might not be a counter"}}, StatusOK, 1, nil},
		{"an error with a warning: the error", ModeInstant, false, map[string]any{"status": "error", "errorType": "execution", "error": "query timed out", "warnings": []string{storeDown}}, StatusError, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAnswerServer(t, tc.refusePost, tc.answer)
			api, err := NewAPI(Access{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			src, err := Compile([]Source{{Name: "nginx", Available: "vector(1)", Data: "up", Mode: tc.mode}})
			if err != nil {
				t.Fatal(err)
			}
			r := (&Checker{API: api, Sources: src, Timeout: 5 * time.Second}).Check(context.Background(), now, time.Hour).Sources[0]
			if r.Status != tc.status || len(r.Last) != tc.targets {
				t.Errorf("status %s with %d targets (%s), want %s with %d", r.Status, len(r.Last), r.Detail, tc.status, tc.targets)
			}
			if strings.Join(r.Warnings, "|") != strings.Join(tc.warnings, "|") {
				t.Errorf("warnings %q, want %q", r.Warnings, tc.warnings)
			}
			if tc.status == StatusPartial {
				if !strings.Contains(r.Detail, "may be partial") {
					t.Errorf("detail %q does not say the answer may be partial", r.Detail)
				}
				if strings.Contains(r.Detail, "10.0.7.12") || strings.Contains(r.Detail, "s3cret") {
					t.Errorf("detail %q, which tenants see, carries the warning's text", r.Detail)
				}
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			wantMethod := http.MethodPost
			if tc.refusePost {
				wantMethod = http.MethodGet
			}
			if len(srv.partial) == 0 {
				t.Fatal("no request recorded")
			}
			for _, p := range srv.partial {
				if p != wantMethod+" false" {
					t.Errorf("a request asked %q, want %q (partial_response=false)", p, wantMethod+" false")
				}
			}
		})
	}
}

// TestTrackerPartialIsUnknown: a partial answer makes every target of the source unknown, and
// the next whole answer covers the time since the last one (the missing store's series are
// back).
func TestTrackerPartialIsUnknown(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	tr := &Tracker{Lookback: 14 * 24 * time.Hour}
	vm1 := Ref{Namespace: "lab", Name: "vm-1"}
	tr.Observe(Result{At: t0, Window: tr.Lookback, Sources: []SourceResult{{Name: "nginx", Status: StatusOK}}})
	tr.Observe(Result{At: t0.Add(5 * time.Minute), Window: 11 * time.Minute, Sources: []SourceResult{{Name: "nginx", Status: StatusPartial, Detail: "warnings"}}})
	if a := tr.Lookup(map[string]Ref{"nginx": vm1}); a.Known() {
		t.Errorf("known after a partial answer: %+v", a)
	}
	if w := tr.Window(t0.Add(10*time.Minute), 7*time.Minute, []string{"nginx"}); w != 17*time.Minute {
		t.Errorf("window after a partial answer = %s, want back to the last whole one (17m)", w)
	}
	tr.Observe(Result{At: t0.Add(10 * time.Minute), Window: 17 * time.Minute, Sources: []SourceResult{{Name: "nginx", Status: StatusOK}}})
	if a := tr.Lookup(map[string]Ref{"nginx": vm1}); !a.Known() || !a.CoveredSince.Equal(t0.Add(-tr.Lookback)) {
		t.Errorf("after a whole answer: known %v, covered since %s", a.Known(), a.CoveredSince)
	}
}

// TestCollectingSinceNeverAhead: instant mode's break search is a subquery whose steps
// Prometheus aligns to multiples of its step (GapStep: 20m10s over two weeks). A source that
// began collecting after the last of them (installed, or Prometheus started, moments ago) has
// its break there: the step after it is ahead of the check, and silence counted from then
// alerted idle targets up to 20 minutes late. Collecting since is then the check itself; an
// older break keeps the step after it.
func TestCollectingSinceNeverAhead(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	window := 14 * 24 * time.Hour
	gapStep := GapStep(window, StepFor(window, time.Minute))
	for _, tc := range []struct {
		name string
		gap  time.Time // the last step of the break search with nothing
		want time.Time
	}{
		{"the break at the last aligned step, a second ago", now.Add(-time.Second), now},
		{"the break at the last aligned step, just under a step ago", now.Add(-gapStep + time.Second), now},
		{"the break a step and more ago: the step after it", now.Add(-gapStep - time.Minute), now.Add(-time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := float64(now.Unix())
			srv := newAnswerServer(t, false, map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": []any{
				map[string]any{"metric": map[string]string{availableLabel: "1"}, "value": []any{ts, "1"}},
				map[string]any{"metric": map[string]string{gapLabel: "1"}, "value": []any{ts, fmt.Sprint(tc.gap.Unix())}},
			}}})
			api, err := NewAPI(Access{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			src, err := Compile([]Source{{Name: "nginx", Available: "vector(1)", Data: "up"}})
			if err != nil {
				t.Fatal(err)
			}
			r := (&Checker{API: api, Sources: src, Timeout: 5 * time.Second}).Check(context.Background(), now, window).Sources[0]
			if r.Status != StatusOK || !r.CollectingSince.Equal(tc.want) {
				t.Errorf("status %s (%s), collecting since %s; want ok, %s (check at %s, break search step %s)", r.Status, r.Detail, r.CollectingSince, tc.want, now, gapStep)
			}
		})
	}
}
