package inactivityplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/state"
)

const now = "2026-05-10T12:00:00Z"

// sample is one series of a fake answer: its labels and its value.
type sample struct {
	labels map[string]string
	value  float64
}

// fakeProm answers Prometheus's instant query API (/api/v1/query) as Prometheus formats it, with
// a vector per source: the data series (the last activity of a target as a Unix time) and, when
// the source is available, one series labelled kustos_source_available="1" of value 1 — what
// the combined query activity.Checker sends returns. It is one of the few fakes the tests use:
// the query language itself is Prometheus's, and the real-Prometheus path (a real server with
// history, the default sources' PromQL) is covered by the e2e tests on
// internal/activity/promtest. A source is told by its metric names: "bastion" or else nginx.
type fakeProm struct {
	t   *testing.T
	srv *httptest.Server
	// data and available are per source name.
	data        map[string][]sample
	unavailable map[string]bool
	at          time.Time
	// warnings go with every answer (a Thanos querier with a store down).
	warnings []string

	mu      sync.Mutex
	queries map[string]int
}

func newFakeProm(t *testing.T, at string, data map[string][]sample, unavailable ...string) *fakeProm {
	t.Helper()
	f := &fakeProm{t: t, data: data, unavailable: map[string]bool{}, queries: map[string]int{}}
	if at != "" {
		var err error
		if f.at, err = time.Parse(time.RFC3339, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range unavailable {
		f.unavailable[u] = true
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProm) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.Error(w, `{"status":"error","errorType":"bad_data","error":"not found"}`, http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("parsing the query: %v", err)
	}
	q := r.Form.Get("query")
	source := "nginx"
	if strings.Contains(q, "bastion") {
		source = "bastion"
	}
	f.mu.Lock()
	f.queries[source]++
	f.mu.Unlock()
	// The check is made at --now (when the test gives one), the combined query is the data or
	// the availability marked.
	if ts, err := strconv.ParseFloat(r.Form.Get("time"), 64); err != nil || (!f.at.IsZero() && int64(ts) != f.at.Unix()) {
		f.t.Errorf("query at time %q; want %d (--now)", r.Form.Get("time"), f.at.Unix())
	}
	if !strings.Contains(q, `or label_replace(`) || !strings.Contains(q, `"kustos_source_available"`) {
		f.t.Errorf("not the combined query: %s", q)
	}
	type result struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	at := float64(f.at.Unix())
	if f.at.IsZero() {
		at = float64(time.Now().Unix())
	}
	results := []result{}
	for _, s := range f.data[source] {
		results = append(results, result{Metric: s.labels, Value: [2]any{at, strconv.FormatFloat(s.value, 'f', -1, 64)}})
	}
	if !f.unavailable[source] {
		results = append(results, result{Metric: map[string]string{"kustos_source_available": "1"}, Value: [2]any{at, "1"}})
	}
	w.Header().Set("Content-Type", "application/json")
	answer := map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": results}}
	if len(f.warnings) > 0 {
		answer["warnings"] = f.warnings
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// count is the number of queries per source so far.
func (f *fakeProm) count() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.queries {
		out[k] = v
	}
	return out
}

func unix(t *testing.T, s string) float64 {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return float64(ts.Unix())
}

// activityData is what the sources saw in testdata: lab/web used through the ingress (nginx, by
// namespace and service), solo/db over SSH (bastion, by namespace and name), and one series
// that names no target.
func activityData(t *testing.T) map[string][]sample {
	return map[string][]sample{
		"nginx": {
			{labels: map[string]string{"namespace": "lab", "service": "web"}, value: unix(t, "2026-05-08T09:30:00Z")},
			{labels: map[string]string{"namespace": "lab", "service": "other"}, value: unix(t, "2026-05-09T00:00:00Z")},
		},
		"bastion": {
			{labels: map[string]string{"namespace": "solo", "name": "db"}, value: unix(t, "2026-05-09T20:00:00Z")},
			{labels: map[string]string{"name": "no-namespace"}, value: unix(t, "2026-05-09T20:00:00Z")},
		},
	}
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const (
	ok   = `"sources":{"bastion":"ok","nginx":"ok"}`
	nowT = `"2026-05-10T12:00:00Z"`
)

// golden is the plan of testdata/objects.yaml with the state of testdata/leases.yaml at now,
// with the default flags (--activity-lookback 14d: the sources cover time since 2026-04-26T12:00)
// and activityData:
//   - idle was never used (and lab/idle's expiry Lease is not read): idle since the lookback's
//     start, its timeout (7d, its Namespace's) is over: the first alert is due now.
//   - web was used at 09:30 two days ago: alerted at 09:30 + 7d. Its Lease's alerts-sent does
//     not parse: dropped (0), and a problem.
//   - done3 got its three alerts, the last 30h ago (more than --notification-interval): it is
//     paused now.
//   - waiting got one alert at midnight: the second goes out 24h later.
//   - tmp is persistent "false" with max-alerts "0": deleted now, without alerts.
//   - forever (timeout never), broken (a timeout that does not parse), paused (zero replicas),
//     legacy (its Namespace opted out) and tools (no timeout anywhere): nothing.
//   - db (Namespace not in the input: its own 1d) was used over SSH at 20:00 last night.
//   - leaving is being deleted, and the ConfigMap is not a target: no lines.
var golden = []string{
	`{"key":"inactivity/Deployment.apps/default/tools","target":"Deployment.apps/default/tools","lastActivity":null,` + ok + `,"alertsSent":0,"next":"none","at":null}`,
	`{"key":"inactivity/Deployment.apps/lab/broken","target":"Deployment.apps/lab/broken","lastActivity":null,` + ok + `,"alertsSent":0,"next":"none","at":null,"problems":["kustos.io/inactivity-timeout=\"5 days\" on Deployment.apps/lab/broken: not a timeout (e.g. 90m, 7d, 2w, or \"never\"): invalid duration: \"5 days\": \"5\" needs a unit (ns, us, ms, s, m, h, d or w); the target is left alone"]}`,
	`{"key":"inactivity/Deployment.apps/lab/done3","target":"Deployment.apps/lab/done3","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":3,"next":"pause","at":` + nowT + `}`,
	`{"key":"inactivity/Deployment.apps/lab/forever","target":"Deployment.apps/lab/forever","lastActivity":null,` + ok + `,"alertsSent":0,"next":"none","at":null}`,
	`{"key":"inactivity/Deployment.apps/lab/idle","target":"Deployment.apps/lab/idle","lastActivity":null,` + ok + `,"alertsSent":0,"next":"alert","at":` + nowT + `}`,
	`{"key":"inactivity/Deployment.apps/lab/paused","target":"Deployment.apps/lab/paused","lastActivity":null,` + ok + `,"alertsSent":0,"next":"none","at":null}`,
	`{"key":"inactivity/Deployment.apps/lab/tmp","target":"Deployment.apps/lab/tmp","lastActivity":null,` + ok + `,"alertsSent":0,"next":"delete","at":` + nowT + `}`,
	`{"key":"inactivity/Deployment.apps/lab/waiting","target":"Deployment.apps/lab/waiting","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":1,"next":"alert","at":"2026-05-11T00:00:00Z"}`,
	`{"key":"inactivity/Deployment.apps/lab/web","target":"Deployment.apps/lab/web","lastActivity":"2026-05-08T09:30:00Z",` + ok + `,"alertsSent":0,"next":"alert","at":"2026-05-15T09:30:00Z","problems":["state lease kustos-system/state-inactivity-deployment.apps-lab-web of inactivity/Deployment.apps/lab/web: unreadable inactivity state alerts-sent=\"lots\" dropped, as the controller drops it"]}`,
	`{"key":"inactivity/Deployment.apps/quiet/legacy","target":"Deployment.apps/quiet/legacy","lastActivity":null,` + ok + `,"alertsSent":0,"next":"none","at":null}`,
	`{"key":"inactivity/StatefulSet.apps/solo/db","target":"StatefulSet.apps/solo/db","lastActivity":"2026-05-09T20:00:00Z",` + ok + `,"alertsSent":0,"next":"alert","at":"2026-05-10T20:00:00Z"}`,
}

// goldenWarnings are the warnings of every run over the testdata with activityData.
var goldenWarnings = []string{
	`kustos inactivity plan: warning: activity source bastion: 1 result series skipped: no target labels (namespace, name) or no time as value`,
	`kustos inactivity plan: warning: testdata/objects.yaml:74: kustos.io/inactivity-timeout="5 days" on Deployment.apps/lab/broken: not a timeout (e.g. 90m, 7d, 2w, or "never"): invalid duration: "5 days": "5" needs a unit (ns, us, ms, s, m, h, d or w); the target is left alone`,
	`kustos inactivity plan: warning: testdata/leases.yaml:48: state lease kustos-system/state-inactivity-deployment.apps-lab-web of inactivity/Deployment.apps/lab/web: unreadable inactivity state alerts-sent="lots" dropped, as the controller drops it`,
}

// keyOf is a line's key.
func keyOf(t *testing.T, l string) string {
	t.Helper()
	var v struct{ Key string }
	if err := json.Unmarshal([]byte(l), &v); err != nil || v.Key == "" {
		t.Fatalf("bad line %s: %v", l, err)
	}
	return v.Key
}

// expect is golden with the lines of some keys replaced ("" removes a line) and others added
// (in key order).
func expect(t *testing.T, base []string, changes map[string]string) []string {
	t.Helper()
	lines := map[string]string{}
	for _, l := range base {
		lines[keyOf(t, l)] = l
	}
	for k, l := range changes {
		if l == "" {
			delete(lines, k)
			continue
		}
		if keyOf(t, l) != k {
			t.Fatalf("change for %s has key %s", k, keyOf(t, l))
		}
		lines[k] = l
	}
	var out []string
	for _, l := range lines {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return keyOf(t, out[i]) < keyOf(t, out[j]) })
	return out
}

// unknown is a golden line as it is when activity is unknown: next unknown, at null, the
// sources as given, and problems.
func unknown(t *testing.T, key, target, lastActivity, sources string, alerts int, problems ...string) string {
	t.Helper()
	p, err := json.Marshal(problems)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"key":%q,"target":%q,"lastActivity":%s,%s,"alertsSent":%d,"next":"unknown","at":null,"problems":%s}`,
		key, target, lastActivity, sources, alerts, p)
}

func TestPlan(t *testing.T) {
	files := []string{"-f", "testdata/objects.yaml", "--filename", "testdata/leases.yaml"}
	bastionDown := `activity source bastion: unavailable: its availability query returned no sample other than 0: count(bastion_ssh_connections)`
	bastionSources := `"sources":{"bastion":"unavailable","nginx":"ok"}`
	for _, tc := range []struct {
		name        string
		args        []string
		unavailable []string
		changes     map[string]string
		warnings    []string // besides goldenWarnings
	}{
		{name: "state from the Leases"},
		{name: "direct mode decides the same", args: []string{"--mode", "direct"}},
		{name: "observe mode decides the same", args: []string{"--mode", "observe"}},
		{name: "a default timeout", args: []string{"--inactivity-timeout", "30d"},
			changes: map[string]string{
				"inactivity/Deployment.apps/default/tools": `{"key":"inactivity/Deployment.apps/default/tools","target":"Deployment.apps/default/tools","lastActivity":null,` + ok + `,"alertsSent":0,"next":"alert","at":"2026-05-26T12:00:00Z"}`,
			}},
		{name: "more alerts", args: []string{"--max-alerts", "5"},
			changes: map[string]string{
				// The fourth alert is due now; the Lease counted three before it.
				"inactivity/Deployment.apps/lab/done3": `{"key":"inactivity/Deployment.apps/lab/done3","target":"Deployment.apps/lab/done3","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":3,"next":"alert","at":` + nowT + `}`,
			}},
		{name: "deleted by default", args: []string{"--inactivity-persistent-default=false"},
			changes: map[string]string{
				"inactivity/Deployment.apps/lab/done3": `{"key":"inactivity/Deployment.apps/lab/done3","target":"Deployment.apps/lab/done3","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":3,"next":"delete","at":` + nowT + `}`,
			}},
		{name: "a longer notification interval", args: []string{"--notification-interval", "2d"},
			changes: map[string]string{
				"inactivity/Deployment.apps/lab/done3":   `{"key":"inactivity/Deployment.apps/lab/done3","target":"Deployment.apps/lab/done3","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":3,"next":"pause","at":"2026-05-11T06:00:00Z"}`,
				"inactivity/Deployment.apps/lab/waiting": `{"key":"inactivity/Deployment.apps/lab/waiting","target":"Deployment.apps/lab/waiting","lastActivity":"2026-05-01T00:00:00Z",` + ok + `,"alertsSent":1,"next":"alert","at":"2026-05-12T00:00:00Z"}`,
			}},
		{name: "Deployments only", args: []string{"--inactivity-kinds", "apps/v1/Deployment"},
			changes: map[string]string{"inactivity/StatefulSet.apps/solo/db": ""}},
		{name: "a source unavailable: nothing is inactive", unavailable: []string{"bastion"},
			changes: func() map[string]string {
				m := map[string]string{}
				for _, l := range golden {
					m[keyOf(t, l)] = strings.Replace(l, ok, bastionSources, 1)
				}
				m["inactivity/Deployment.apps/lab/idle"] = unknown(t, "inactivity/Deployment.apps/lab/idle", "Deployment.apps/lab/idle", "null", bastionSources, 0, bastionDown)
				m["inactivity/Deployment.apps/lab/web"] = unknown(t, "inactivity/Deployment.apps/lab/web", "Deployment.apps/lab/web", `"2026-05-08T09:30:00Z"`, bastionSources, 0,
					`state lease kustos-system/state-inactivity-deployment.apps-lab-web of inactivity/Deployment.apps/lab/web: unreadable inactivity state alerts-sent="lots" dropped, as the controller drops it`, bastionDown)
				m["inactivity/Deployment.apps/lab/done3"] = unknown(t, "inactivity/Deployment.apps/lab/done3", "Deployment.apps/lab/done3", `"2026-05-01T00:00:00Z"`, bastionSources, 3, bastionDown)
				m["inactivity/Deployment.apps/lab/waiting"] = unknown(t, "inactivity/Deployment.apps/lab/waiting", "Deployment.apps/lab/waiting", `"2026-05-01T00:00:00Z"`, bastionSources, 1, bastionDown)
				m["inactivity/Deployment.apps/lab/tmp"] = unknown(t, "inactivity/Deployment.apps/lab/tmp", "Deployment.apps/lab/tmp", "null", bastionSources, 0, bastionDown)
				// Its last activity is bastion's, which said nothing this time.
				m["inactivity/StatefulSet.apps/solo/db"] = unknown(t, "inactivity/StatefulSet.apps/solo/db", "StatefulSet.apps/solo/db", "null", bastionSources, 0, bastionDown)
				return m
			}(),
			warnings: []string{"kustos inactivity plan: warning: " + bastionDown + "; no target is declared inactive (next: unknown)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := activityData(t)
			for _, u := range tc.unavailable {
				delete(data, u) // an unavailable source answers nothing
			}
			prom := newFakeProm(t, now, data, tc.unavailable...)
			code, out, errs := run(t, "", append(append(files, "--now", now, "--prometheus-url", prom.srv.URL), tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			want := expect(t, golden, tc.changes)
			if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			wantErrs := append([]string{}, tc.warnings...)
			if len(tc.unavailable) > 0 {
				wantErrs = append(wantErrs, goldenWarnings[1:]...) // an unavailable source's series are not read
			} else {
				wantErrs = append(wantErrs, goldenWarnings...)
			}
			if got := strings.TrimSuffix(errs, "\n"); got != strings.Join(wantErrs, "\n") {
				t.Fatalf("stderr:\n%s\nwant:\n%s", got, strings.Join(wantErrs, "\n"))
			}
			// Prometheus is asked once per source, whatever the number of targets.
			if got := prom.count(); got["nginx"] != 1 || got["bastion"] != 1 || len(got) != 2 {
				t.Errorf("queries per source %v; want one each", got)
			}
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				var line Line
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Errorf("not a Line: %s: %v", l, err)
				}
			}
		})
	}
}

// TestPrometheusDown: Prometheus cannot be asked: every target that would be counted is unknown,
// each source is said unavailable (with why in problems and on stderr), and the exit status is 0.
func TestPrometheusDown(t *testing.T) {
	prom := newFakeProm(t, now, nil)
	prom.srv.Close()
	code, out, errs := run(t, "", "-f", "testdata/objects.yaml", "-f", "testdata/leases.yaml", "--now", now, "--prometheus-url", prom.srv.URL)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, source := range []string{"nginx", "bastion"} {
		if !strings.Contains(errs, "kustos inactivity plan: warning: activity source "+source+": error: Prometheus could not be asked: ") {
			t.Errorf("stderr does not say that %s could not be asked:\n%s", source, errs)
		}
	}
	next := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var line Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("not a Line: %s: %v", l, err)
		}
		next[string(line.Key)] = string(line.Next)
		if line.Sources["nginx"] != "unavailable" || line.Sources["bastion"] != "unavailable" || len(line.Sources) != 2 {
			t.Errorf("%s: sources %v; want both unavailable", line.Key, line.Sources)
		}
		if line.Next == inactivity.NextUnknown {
			if line.At != nil {
				t.Errorf("%s: unknown at %s", line.Key, line.At)
			}
			n := 0
			for _, p := range line.Problems {
				if strings.Contains(p, ": error: Prometheus could not be asked: ") {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%s: problems %q; want both sources' errors", line.Key, line.Problems)
			}
		}
	}
	want := map[string]string{}
	for _, l := range golden {
		var line Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		want[string(line.Key)] = string(line.Next)
		if line.Next != inactivity.NextNone {
			want[string(line.Key)] = string(inactivity.NextUnknown)
		}
	}
	if fmt.Sprint(next) != fmt.Sprint(want) {
		t.Fatalf("next per key %v; want %v", next, want)
	}
}

// TestPartialAnswer: answers with a warning (Thanos's querier with a store down) make both
// sources partial: every target that would be due is unknown, and stderr, the operator's view,
// carries the warning's text.
func TestPartialAnswer(t *testing.T) {
	prom := newFakeProm(t, now, activityData(t))
	prom.warnings = []string{"receive series from store b: connection refused"}
	code, out, errs := run(t, "", "-f", "testdata/objects.yaml", "-f", "testdata/leases.yaml", "--now", now, "--prometheus-url", prom.srv.URL)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, source := range []string{"nginx", "bastion"} {
		for _, want := range []string{
			"kustos inactivity plan: warning: activity source " + source + ": partial: Prometheus answered with 1 warning(s), so its answer may be partial",
			"kustos inactivity plan: warning: activity source " + source + ": Prometheus warned: receive series from store b: connection refused",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errs)
			}
		}
	}
	unknown := 0
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var line Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("not a Line: %s: %v", l, err)
		}
		if line.Next != inactivity.NextNone && line.Next != inactivity.NextUnknown {
			t.Errorf("%s: next %s on partial answers, want unknown", line.Key, line.Next)
		}
		if line.Next == inactivity.NextUnknown {
			unknown++
		}
	}
	if unknown == 0 {
		t.Error("no target is unknown")
	}
}

const (
	instance = "apiVersion: crownlabs.polito.it/v1alpha2\nkind: Instance\nmetadata:\n  namespace: course\n  creationTimestamp: \"2026-04-01T00:00:00Z\"\n"
	template = "apiVersion: crownlabs.polito.it/v1alpha2\nkind: Template\nmetadata:\n  namespace: course\n"
)

// TestTemplates: CrownLabs' Instances, paused by spec.running=false, with their timeout on the
// Template they name, and a sources file of one source.
func TestTemplates(t *testing.T) {
	dir := t.TempDir()
	objects := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: course\n  annotations: {kustos.io/owner: prof@example.com}\n---\n" +
		template + "  name: tpl-a\n  annotations: {kustos.io/inactivity-timeout: 2d, kustos.io/persistent: \"true\"}\n---\n" +
		template + "  name: tpl-bad\n  annotations: {kustos.io/max-alerts: many, kustos.io/inactivity-timeout: 2d}\n---\n" +
		instance + "  name: vm-1\nspec:\n  running: true\n  template: {name: tpl-a, namespace: course}\n---\n" +
		instance + "  name: vm-2\nspec:\n  running: false\n  template: {name: tpl-a}\n---\n" +
		instance + "  name: vm-3\nspec:\n  running: true\n  template: {name: tpl-missing}\n---\n" +
		instance + "  name: vm-4\nspec:\n  template: tpl-a\n---\n" +
		instance + "  name: vm-5\nspec:\n  template: tpl-bad\n---\n" +
		instance + "  name: vm-6\nspec:\n  template: [tpl-a]\n"
	config := "- name: nginx\n  available: count(nginx_up)\n  data: max by (namespace, service) (last_request_time[{{.Window}}])\n  labels: {namespace: namespace, name: service}\n"
	for name, content := range map[string]string{"a.yaml": objects, "sources.yaml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	prom := newFakeProm(t, now, map[string][]sample{"nginx": {
		{labels: map[string]string{"namespace": "course", "service": "vm-4"}, value: unix(t, "2026-05-10T00:00:00Z")},
	}})
	code, out, errs := run(t, "", "-f", "a.yaml", "--now", now, "--prometheus-url", prom.srv.URL, "--inactivity-config", "sources.yaml",
		"--inactivity-kinds", "crownlabs.polito.it/v1alpha2/Instance", "--inactivity-pause-field", "spec.running=false",
		"--template-ref-field", "spec.template", "--template-kind", "crownlabs.polito.it/v1alpha2/Template")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	src := `"sources":{"nginx":"ok"}`
	want := []string{
		// Never used, its Template's 2d are over: alerted now.
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-1","target":"Instance.crownlabs.polito.it/course/vm-1","lastActivity":null,` + src + `,"alertsSent":0,"next":"alert","at":` + nowT + `}`,
		// spec.running: false: paused already.
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-2","target":"Instance.crownlabs.polito.it/course/vm-2","lastActivity":null,` + src + `,"alertsSent":0,"next":"none","at":null}`,
		// Its Template is not in the input: no timeout anywhere.
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-3","target":"Instance.crownlabs.polito.it/course/vm-3","lastActivity":null,` + src + `,"alertsSent":0,"next":"none","at":null,"problems":["spec.template=\"course/tpl-missing\" on Instance/course/vm-3: no Template of that name in the input; the template's metadata is not read"]}`,
		// Used at midnight: alerted two days later.
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-4","target":"Instance.crownlabs.polito.it/course/vm-4","lastActivity":"2026-05-10T00:00:00Z",` + src + `,"alertsSent":0,"next":"alert","at":"2026-05-12T00:00:00Z"}`,
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-5","target":"Instance.crownlabs.polito.it/course/vm-5","lastActivity":null,` + src + `,"alertsSent":0,"next":"none","at":null,"problems":["kustos.io/max-alerts=\"many\" on Template/course/tpl-bad: want a whole number from 0 to 100; the target is left alone"]}`,
		`{"key":"inactivity/Instance.crownlabs.polito.it/course/vm-6","target":"Instance.crownlabs.polito.it/course/vm-6","lastActivity":null,` + src + `,"alertsSent":0,"next":"none","at":null,"problems":["spec.template=\"[tpl-a]\" on Instance/course/vm-6: want a template name or {name, namespace}; the template's metadata is not read"]}`,
	}
	if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	// Each problem names the file and line of the object that carries the value.
	wantErrs := []string{
		`kustos inactivity plan: warning: a.yaml:41: spec.template="course/tpl-missing" on Instance/course/vm-3: no Template of that name in the input; the template's metadata is not read`,
		`kustos inactivity plan: warning: a.yaml:14: kustos.io/max-alerts="many" on Template/course/tpl-bad: want a whole number from 0 to 100; the target is left alone`,
		`kustos inactivity plan: warning: a.yaml:69: spec.template="[tpl-a]" on Instance/course/vm-6: want a template name or {name, namespace}; the template's metadata is not read`,
	}
	if got := strings.TrimSuffix(errs, "\n"); got != strings.Join(wantErrs, "\n") {
		t.Fatalf("stderr:\n%s\nwant:\n%s", got, strings.Join(wantErrs, "\n"))
	}
	if got := prom.count(); got["nginx"] != 1 || len(got) != 1 {
		t.Errorf("queries per source %v; want one", got)
	}
}

const (
	deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: n\n  creationTimestamp: \"2026-05-01T00:00:00Z\"\n"
	stateLease = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: s\n  namespace: kustos-system\n" +
		"  labels: {app.kubernetes.io/managed-by: kustos}\n  annotations:\n"
)

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Prometheus is never asked about input that cannot be used.
	prom := newFakeProm(t, now, nil)
	url := prom.srv.URL
	timed := deployment + "  annotations: {kustos.io/inactivity-timeout: 1d}\n"
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "no --prometheus-url", file: write("i.yaml", timed), args: []string{}, want: "--prometheus-url is required"},
		{name: "bad --prometheus-url", file: write("i.yaml", timed), args: []string{"--prometheus-url", "prometheus:9090"}, want: `--prometheus-url="prometheus:9090": want an http or https URL`},
		{name: "a missing token file", file: write("i.yaml", timed), args: []string{"--prometheus-bearer-token-file", filepath.Join(dir, "no-token")},
			want: "--prometheus-bearer-token-file: open " + filepath.Join(dir, "no-token") + ": no such file"},
		{name: "a CA for http", file: write("i.yaml", timed), args: []string{"--prometheus-ca-file", filepath.Join(dir, "ca.crt")}, want: "--prometheus-url is not https"},
		{name: "YAML syntax", file: write("a.yaml", "a: [\n"), want: "a.yaml:"},
		{name: "Lease with a time that does not parse",
			file: write("c.yaml", timed+"---\n"+stateLease+"    "+state.AnnotationKey+": inactivity/Deployment.apps/n/x\n    "+state.AnnotationLastModified+": yesterday\n"),
			want: "c.yaml:9: state lease kustos-system/s: annotation " + state.AnnotationLastModified + `="yesterday" is not an RFC 3339 time`},
		{name: "no creation time", file: write("e.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: n}\n"),
			want: "e.yaml:1: Deployment.apps/n/x: metadata.creationTimestamp is missing"},
		{name: "no name", file: write("f.yaml", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {namespace: n}\n"),
			want: "f.yaml:1: StatefulSet: metadata.name is missing"},
		{name: "an object twice", file: write("g.yaml", timed+"---\n"+timed), want: "g.yaml:9: Deployment.apps/n/x is also at " + filepath.Join(dir, "g.yaml") + ":1; give each object once"},
		{name: "a Lease twice", file: write("h.yaml", stateLease+"    "+state.AnnotationKey+": inactivity/Deployment.apps/n/x\n---\n"+stateLease+"    "+state.AnnotationKey+": inactivity/Deployment.apps/n/x\n"),
			want: "h.yaml:10: state lease kustos-system/s holds the state of inactivity/Deployment.apps/n/x, as does kustos-system/s at " + filepath.Join(dir, "h.yaml") + ":1; give each Lease once"},
		{name: "missing file", file: filepath.Join(dir, "nope.yaml"), want: "nope.yaml: cannot read: no such file or directory"},
		{name: "bad --now", file: write("i.yaml", timed), args: []string{"--now", "tomorrow"}, want: `invalid --now "tomorrow"`},
		{name: "bad --mode", file: write("i.yaml", timed), args: []string{"--mode", "auto"}, want: `invalid --mode="auto": want observe, pr, direct`},
		{name: "bad --inactivity-kinds", file: write("i.yaml", timed), args: []string{"--inactivity-kinds", "apps/v1/deployments"}, want: `invalid --inactivity-kinds="apps/v1/deployments"`},
		{name: "bad --inactivity-timeout", file: write("i.yaml", timed), args: []string{"--inactivity-timeout", "5 days"}, want: `invalid --inactivity-timeout="5 days": invalid duration`},
		{name: "--max-alerts out of range", file: write("i.yaml", timed), args: []string{"--max-alerts", "101"}, want: "--max-alerts=101: want 0 to 100"},
		{name: "no notification interval", file: write("i.yaml", timed), args: []string{"--notification-interval", "0s"}, want: "--notification-interval=0s: must be positive"},
		{name: "no probe failures", file: write("i.yaml", timed), args: []string{"--probe-failures", "0"}, want: "--probe-failures=0: at least 1"},
		{name: "no lookback", file: write("i.yaml", timed), args: []string{"--activity-lookback", "0s"}, want: "--activity-lookback: must be positive"},
		{name: "too fine a step", file: write("i.yaml", timed), args: []string{"--activity-min-step", "10ms"}, want: "--activity-min-step=10ms: at least 1s"},
		{name: "bad --inactivity-pause-field", file: write("i.yaml", timed), args: []string{"--inactivity-pause-field", "spec.running"}, want: `--inactivity-pause-field: "spec.running": want path=value`},
		{name: "bad --template-ref-field", file: write("i.yaml", timed), args: []string{"--template-ref-field", "metadata.name", "--template-kind", "v1/ConfigMap"}, want: "--template-ref-field: \"metadata.name\" is not a field Git declares"},
		{name: "--template-ref-field without a kind", file: write("i.yaml", timed), args: []string{"--template-ref-field", "spec.template"}, want: "--template-ref-field=spec.template needs --template-kind"},
		{name: "bad --template-kind", file: write("i.yaml", timed), args: []string{"--template-ref-field", "spec.template", "--template-kind", "v1/ConfigMap,v1/Secret"}, want: `--template-kind="v1/ConfigMap,v1/Secret": want one group/version/Kind`},
		{name: "sources file missing", file: write("i.yaml", timed), args: []string{"--inactivity-config", filepath.Join(dir, "none.yaml")}, want: "--inactivity-config: open " + filepath.Join(dir, "none.yaml")},
		{name: "sources file invalid", file: write("i.yaml", timed), args: []string{"--inactivity-config", write("s.yaml", "- name: Nginx\n  available: up\n  data: x\n")},
			want: "--inactivity-config=" + filepath.Join(dir, "s.yaml") + `: invalid inactivity sources: sources[0].name: "Nginx"`},
		{name: "unknown flag", file: write("i.yaml", timed), args: []string{"--dry-run"}, want: "kustos inactivity plan: unknown flag --dry-run\nRun 'kustos inactivity plan --help' for usage."},
		{name: "an argument", file: write("i.yaml", timed), args: []string{"objects.yaml"}, want: `unexpected argument "objects.yaml" (give input files with -f)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"--prometheus-url", url}
			} else if len(args) > 0 && !strings.HasPrefix(tc.name, "bad --prometheus-url") {
				args = append([]string{"--prometheus-url", url}, args...)
			}
			code, out, errs := run(t, "", append([]string{"-f", tc.file}, args...)...)
			if code != ExitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("stderr %q; want it to contain %q", errs, tc.want)
			}
		})
	}
	if got := prom.count(); len(got) != 0 {
		t.Errorf("Prometheus was asked %v about input that cannot be used", got)
	}
}

// TestStdinAndClock: without -f the input is stdin, and without --now the clock decides (a
// target created far ahead gives the same plan whenever the test runs).
func TestStdinAndClock(t *testing.T) {
	obj := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: n\n  creationTimestamp: \"2999-01-01T00:00:00Z\"\n" +
		"  annotations: {kustos.io/inactivity-timeout: 1d}\n"
	// The fake answers whatever time it is asked at.
	prom := newFakeProm(t, "", nil)
	var out, errb bytes.Buffer
	code := Run([]string{"--prometheus-url", prom.srv.URL}, strings.NewReader(obj), &out, &errb)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := `{"key":"inactivity/Deployment.apps/n/x","target":"Deployment.apps/n/x","lastActivity":null,"sources":{"bastion":"ok","nginx":"ok"},"alertsSent":0,"next":"alert","at":"2999-01-02T00:00:00Z"}` + "\n"
	if out.String() != want {
		t.Fatalf("output %s; want %s", out.String(), want)
	}
}

func TestHelp(t *testing.T) {
	code, out, errs := run(t, "", "-h")
	if code != ExitOK || errs != "" || !strings.HasPrefix(out, "Usage: kustos inactivity plan -f FILE") || !strings.Contains(out, longText) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the help on stdout", code, out, errs)
	}
}

// TestUsage keeps the help true to the names and defaults it documents.
func TestUsage(t *testing.T) {
	_, help, _ := run(t, "", "--help")
	for _, s := range []string{
		state.AnnotationKey, state.BagPrefix, state.LabelManagedBy + "=" + state.ManagedByValue,
		inactivity.AnnotationPersistent, inactivity.AnnotationProbeURL, inactivity.ReasonInactivityDue,
		"(default " + expiry.DefaultLifecycleKinds + ")",
		string(inactivity.NextAlert), string(inactivity.NextPause), string(inactivity.NextDelete),
		string(inactivity.NextNone), string(inactivity.NextUnknown),
		"--mode observe|pr|direct", "(default observe)", "(default 3)", "(default 1d)", "(default 14d)", "(default 30s)",
	} {
		if !strings.Contains(help, s) {
			t.Errorf("the help does not mention %q", s)
		}
	}
	s := inactivity.DefaultSettings()
	if s.MaxAlerts != 3 || s.NotificationInterval != 24*time.Hour || s.ProbeFailures != 3 {
		t.Errorf("defaults changed: %+v; the help tested above says 3 alerts, 1d, 3 probe failures", s)
	}
}
