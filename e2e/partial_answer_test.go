package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
)

// storeDownWarning is what Thanos's querier adds to an answer when a store did not answer.
const storeDownWarning = `receive series from Addr: 10.0.7.12:10901 LabelSets: {store="b"}: rpc error: code = Unavailable desc = connection refused`

// partialProxy stands in front of a real Prometheus as Thanos's querier does with a store down:
// while down is set, the answer to a query that names match lacks the series whose label
// `drop` has the value dropValue (they sat on the missing store) and carries a warning, with
// status "success". It records each query's partial_response parameter and Prometheus's status.
type partialProxy struct {
	*httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	// asked is, per query request, "partial_response=<value> status=<Prometheus's status>".
	asked []string
}

func newPartialProxy(t *testing.T, promURL, match, drop, dropValue string) *partialProxy {
	t.Helper()
	upstream, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &partialProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for k, v := range r.URL.Query() {
			form[k] = append(form[k], v...)
		}
		query := strings.HasPrefix(r.URL.Path, "/api/v1/query")
		partial := p.down.Load() && strings.Contains(form.Get("query"), match)
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(upstream)
				pr.Out.Body = io.NopCloser(bytes.NewReader(body))
				pr.Out.ContentLength = int64(len(body))
				pr.Out.Header.Del("Accept-Encoding") // the proxy's transport decompresses
			},
			ModifyResponse: func(resp *http.Response) error {
				if !query {
					return nil
				}
				raw, err := io.ReadAll(resp.Body)
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				var answer struct {
					Status string `json:"status"`
					Data   struct {
						ResultType string           `json:"resultType"`
						Result     []map[string]any `json:"result"`
					} `json:"data"`
					Warnings []string `json:"warnings,omitempty"`
				}
				if err := json.Unmarshal(raw, &answer); err != nil {
					return fmt.Errorf("Prometheus's answer: %w", err)
				}
				p.mu.Lock()
				p.asked = append(p.asked, fmt.Sprintf("partial_response=%s status=%s", form.Get("partial_response"), answer.Status))
				p.mu.Unlock()
				if partial && answer.Status == "success" {
					kept := answer.Data.Result[:0]
					for _, s := range answer.Data.Result {
						if m, _ := s["metric"].(map[string]any); m[drop] != dropValue {
							kept = append(kept, s)
						}
					}
					answer.Data.Result = kept
					answer.Warnings = append(answer.Warnings, storeDownWarning)
					if raw, err = json.Marshal(answer); err != nil {
						return err
					}
				}
				resp.Body = io.NopCloser(bytes.NewReader(raw))
				resp.ContentLength = int64(len(raw))
				resp.Header.Set("Content-Length", strconv.Itoa(len(raw)))
				return nil
			},
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// requests are the recorded query requests.
func (p *partialProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// TestPrometheusPartialAnswer asks a real Prometheus through a proxy that makes its answers
// partial as Thanos's querier does with a store down (a series missing, a warning, status
// success). Without the fix the missing target simply looked idle. A partial answer makes the
// source "partial" (no target's activity at all), in instant and range mode; a whole answer is
// ok. Every query carries partial_response=false, and the real Prometheus answers it
// successfully: it ignores the Thanos parameter.
func TestPrometheusPartialAnswer(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	proxy := newPartialProxy(t, prom.URL, "vm-2", "service", "vm-2")
	api, err := activity.NewAPI(activity.Access{URL: proxy.URL})
	if err != nil {
		t.Fatal(err)
	}
	series := func(name, value string) string {
		return fmt.Sprintf(`label_replace(label_replace(vector(%s), "namespace", "lab", "", ""), "service", %q, "", "")`, value, name)
	}
	labels := activity.ResultLabels{Namespace: "namespace", Name: "service"}
	srcs, err := activity.Compile([]activity.Source{
		{Name: "instant", Available: "vector(1)", Data: series("vm-1", "time() - 60") + " or " + series("vm-2", "time() - 60"), Labels: labels},
		{Name: "range", Mode: activity.ModeRange, Available: "vector(1)", Data: series("vm-1", "1") + " or " + series("vm-2", "1"), Labels: labels},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &activity.Checker{API: api, Sources: srcs, Timeout: 10 * time.Second}
	for _, tc := range []struct {
		name    string
		down    bool
		status  activity.Status
		targets int
	}{
		{"a whole answer", false, activity.StatusOK, 2},
		{"a store down: partial, nobody looks idle", true, activity.StatusPartial, 0},
		{"the store back", false, activity.StatusOK, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.down.Store(tc.down)
			for _, r := range c.Check(context.Background(), time.Now(), time.Hour).Sources {
				if r.Status != tc.status || len(r.Last) != tc.targets {
					t.Errorf("%s: status %s with %d targets (%s), want %s with %d", r.Name, r.Status, len(r.Last), r.Detail, tc.status, tc.targets)
				}
				if tc.down && (len(r.Warnings) != 1 || r.Warnings[0] != storeDownWarning) {
					t.Errorf("%s: warnings %q, want Thanos's", r.Name, r.Warnings)
				}
			}
		})
	}
	asked := proxy.requests()
	if len(asked) != 6 {
		t.Errorf("%d query requests, want 6 (one per source and check): %q", len(asked), asked)
	}
	for _, a := range asked {
		if a != "partial_response=false status=success" {
			t.Errorf("a query: %s; want partial_response=false answered with success", a)
		}
	}
}

// TestInactivityPartialAnswer: the environment "busy" is used all along, but its requests sit
// on a Thanos store that is down, so the querier's answers lack its series and carry a warning
// (status success). Kustos must not take that for silence: both environments get
// ActivityUnknown naming the nginx source as partial (without the warning's text, which only
// the log has), neither is alerted or paused. When the store is back, "idle" is alerted and
// "busy" is not.
func TestInactivityPartialAnswer(t *testing.T) {
	live := startLiveActivity(t, true)
	proxy := newPartialProxy(t, live.prom.URL, "nginx_ingress_controller_requests", "service", "busy")
	proxy.down.Store(true)
	ns := newNamespace(t, "inactivity-partial", map[string]string{inactivity.AnnotationTimeout: "4s"})
	newEnvironmentOf(t, ns, "idle", 1, nil)
	newEnvironmentOf(t, ns, "busy", 1, nil)
	defer live.keepUsing(ns, "busy")()
	k := startKustos(t, inactivityOptions(t, proxy.URL, sourcesWithRange(t, "3s")))
	dumpOnFailure(t, k)

	// Idle for the 4 s timeout by the partial answers, both would be alerted twice, 2 s apart,
	// and paused within these 10 s.
	never(t, ns, inactivity.ReasonInactive, 0, 10*time.Second)
	for _, e := range waitEvents(t, ns, inactivity.ReasonActivityUnknown, 2) {
		if !strings.Contains(e.Message, "nginx: partial") || strings.Contains(e.Message, "bastion:") {
			t.Errorf("ActivityUnknown for %s: %s; want the nginx source named as partial", e.InvolvedObject.Name, e.Message)
		}
		if strings.Contains(e.Message, "10.0.7.12") {
			t.Errorf("ActivityUnknown for %s carries the querier's warning: %s", e.InvolvedObject.Name, e.Message)
		}
	}
	for _, name := range []string{"idle", "busy"} {
		if got := replicas(t, ns, name); got != 1 {
			t.Errorf("%s was paused (%d replicas) on a partial answer", name, got)
		}
	}
	if !strings.Contains(k.logs.String(), "10.0.7.12:10901") {
		t.Errorf("no log line carries the querier's warning")
	}

	// The store is back: the answers are whole again.
	proxy.down.Store(false)
	alert := waitEvents(t, ns, inactivity.ReasonInactive, 1)[0]
	if alert.InvolvedObject.Name != "idle" {
		t.Errorf("alerted %s, want idle: %s", alert.InvolvedObject.Name, alert.Message)
	}
	end := time.Now().Add(6 * time.Second)
	for time.Now().Before(end) {
		for _, e := range kustosEvents(t, ns, inactivity.ReasonInactive) {
			if e.InvolvedObject.Name == "busy" {
				t.Fatalf("busy, used all along, was alerted once the store was back: %s", e.Message)
			}
		}
		time.Sleep(tick)
	}
	if got := replicas(t, ns, "busy"); got != 1 {
		t.Errorf("busy was paused (%d replicas)", got)
	}
	for _, a := range proxy.requests() {
		if a != "partial_response=false status=success" {
			t.Errorf("a query: %s; want partial_response=false answered with success", a)
		}
	}
}
