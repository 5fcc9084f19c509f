package kmetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const sample = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="expiry-deployment.apps",result="success"} 9990
controller_runtime_reconcile_total{controller="expiry-deployment.apps",result="error"} 10
controller_runtime_reconcile_total{controller="expiry-namespace",result="success"} 102
controller_runtime_active_workers{controller="expiry-deployment.apps"} 0
controller_runtime_active_workers{controller="expiry-namespace"} 1
workqueue_depth{controller="expiry-deployment.apps",name="expiry-deployment.apps",priority=""} 0
workqueue_depth{controller="expiry-namespace",name="expiry-namespace",priority="-100"} 2
workqueue_depth{controller="resourcequota",name="resourcequota",priority=""} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3 1700000000000
kustos_reconcile_duration_seconds_count{detector="inactivity"} 4
odd_label{a="x\"y,z}",b="\\"} +Inf
`

func TestParseAndSum(t *testing.T) {
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Sum(Reconciles, ControllerIs("expiry-deployment.apps")); !ok || v != 10000 {
		t.Errorf("reconciles of Deployments: %v %v", v, ok)
	}
	if v, _ := m.Sum(Reconciles, nil); v != 10102 {
		t.Errorf("all reconciles: %v", v)
	}
	if v, _ := m.Sum(Requests, nil); v != 15 {
		t.Errorf("requests: %v", v)
	}
	if v, ok := m.Sum("kustos_reconcile_duration_seconds_count", LabelIs("detector", "inactivity")); !ok || v != 4 {
		t.Errorf("by label: %v %v", v, ok)
	}
	if _, ok := m.Sum("missing", nil); ok {
		t.Error("a missing metric was found")
	}
	var odd Sample
	for _, s := range m {
		if s.Name == "odd_label" {
			odd = s
		}
	}
	if odd.Labels["a"] != `x"y,z}` || odd.Labels["b"] != `\` || odd.Value < 1e308 {
		t.Errorf("escapes: %+v", odd)
	}
	if d := Delta(Metrics{{Name: Requests, Value: 3}}, m, Requests); d != 12 {
		t.Errorf("delta %v, want 12", d)
	}
	for _, bad := range []string{"novalue", `x{a="1"`, `x{a=1} 2`, `x{a="1} 2`, "x one", "x 1 2 3"} {
		if _, err := Parse(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadQueueAndSettled(t *testing.T) {
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	q, err := ReadQueue(m, Reconciles, ControllerIs("expiry-deployment.apps"), ControllerHasPrefix("expiry-"))
	if err != nil {
		t.Fatal(err)
	}
	if q != (Queue{Reconciles: 10000, Ready: 2, Active: 1}) {
		t.Errorf("queue: %+v", q)
	}
	if _, err := ReadQueue(m, Reconciles, ControllerIs("none"), ControllerHasPrefix("none-")); err == nil {
		t.Error("a controller without metrics: no error")
	}
	done := Queue{Reconciles: 120}
	for _, c := range []struct {
		name      string
		prev, cur Queue
		want      bool
	}{
		{"idle twice", done, done, true},
		{"too few reconciles", Queue{Reconciles: 99}, Queue{Reconciles: 99}, false},
		{"reconciled in between", Queue{Reconciles: 119}, done, false},
		{"still queued", Queue{Reconciles: 120, Ready: 1}, done, false},
		{"one in progress", done, Queue{Reconciles: 120, Active: 1}, false},
	} {
		if got := Settled(c.prev, c.cur, 100); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(sample))
	}))
	defer srv.Close()
	s := NewScraper(strings.TrimPrefix(srv.URL, "http://"))
	m, err := s.Scrape(context.Background())
	if err != nil || len(m) != 12 {
		t.Fatalf("%d samples, %v", len(m), err)
	}
	s.URL = srv.URL + "/other"
	if _, err := s.Scrape(context.Background()); err == nil {
		t.Error("a 404 was not an error")
	}
	if addr, err := FreeAddr(context.Background()); err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("FreeAddr: %q %v", addr, err)
	}
	if Clip("abcdef", 3) != "abc…" || Clip("ab", 3) != "ab" {
		t.Error("Clip")
	}
}
