package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// The observability the chart ships (files/alerts.yaml, files/dashboard.json, their templates)
// and docs/observability.md, checked against what Kustos really exports: the metrics registry
// this package fills by importing internal/app, as the binary does.

// TestAlertRules: `promtool check rules` and `promtool test rules` pass on the shipped
// alerts.yaml, and on the PrometheusRule groups the chart renders for another release with
// overrides; the rendered groups are alerts.yaml's, with the release's job and the overrides.
func TestAlertRules(t *testing.T) {
	files := filepath.Join(chartDir(t), "files")
	promtool(t, files, "check", "rules", "alerts.yaml")
	promtool(t, files, "test", "rules", "alerts_test.yaml")

	shipped := alertGroups(t)
	// Release "kustos": its metrics Service is kustos-metrics, the job alerts.yaml names.
	if got := renderedRule(t, "kustos", "--set", "prometheusRule.enabled=true"); !reflect.DeepEqual(got["spec"].(map[string]any)["groups"], shipped) {
		t.Errorf("the PrometheusRule of release kustos is not files/alerts.yaml:\n%v", got["spec"])
	}

	rule := renderedRule(t, "prod", "--set", "prometheusRule.enabled=true",
		"--set-json", `prometheusRule.rules={"KustosDown":{"for":"3m","severity":"page"},"KustosInvalidInput":{"disabled":true}}`)
	spec, err := yaml.Marshal(rule["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rendered.yaml"), spec, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "rendered.yaml")
	if strings.Contains(string(spec), `job="kustos-metrics"`) || !strings.Contains(string(spec), `job="prod-kustos-metrics"`) {
		t.Errorf("release prod's alerts do not select its job prod-kustos-metrics:\n%s", spec)
	}
	alerts := map[string]map[string]any{}
	for _, g := range rule["spec"].(map[string]any)["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			alerts[r["alert"].(string)] = r
		}
	}
	if _, ok := alerts["KustosInvalidInput"]; ok {
		t.Error("a disabled alert is rendered")
	}
	down := alerts["KustosDown"]
	if down == nil || down["for"] != "3m" || down["labels"].(map[string]any)["severity"] != "page" {
		t.Errorf("KustosDown's overrides are not applied: %v", down)
	}
	if n := alertNames(shipped); len(alerts) != len(n)-1 {
		t.Errorf("rendered %d alerts, want the %d shipped but the disabled one", len(alerts), len(n)-1)
	}
}

// TestAlertOverridesSchema: the values schema accepts overrides for exactly the shipped alerts,
// so that a misspelt name is an error at install, not an override silently ignored.
func TestAlertOverridesSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			PrometheusRule struct {
				Properties struct {
					Rules struct {
						PropertyNames struct {
							Enum []string `json:"enum"`
						} `json:"propertyNames"`
					} `json:"rules"`
				} `json:"properties"`
			} `json:"prometheusRule"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(schema.Properties.PrometheusRule.Properties.Rules.PropertyNames.Enum))
	if want := alertNames(alertGroups(t)); !slices.Equal(got, want) {
		t.Errorf("values.schema.json's prometheusRule.rules names %v, files/alerts.yaml %v", got, want)
	}
	if _, err := helm("template", "kustos", chartDir(t), "--set-json", `prometheusRule.rules={"KustosDwn":{"for":"5m"}}`); err == nil ||
		!strings.Contains(err.Error(), "KustosDwn") {
		t.Errorf("a misspelt alert name: %v, want an error naming it", err)
	}
}

// TestObservedMetricsExist: every metric the alerts, the dashboard and docs/observability.md
// read is one Kustos registers (or Prometheus's own up); every kustos_ metric in the code is
// registered and documented.
func TestObservedMetricsExist(t *testing.T) {
	used := map[string][]string{} // metric → where
	for _, g := range alertGroups(t) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			for _, m := range promqlMetricNames(r["expr"].(string)) {
				used[m] = append(used[m], "alert "+r["alert"].(string))
			}
		}
	}
	for _, q := range dashboardQueries(t) {
		for _, m := range promqlMetricNames(q) {
			used[m] = append(used[m], "dashboard")
		}
	}
	docs := readDoc(t)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bkustos_[a-z0-9_]+`).FindAllString(docs, -1) {
		documented[m] = true
		used[m] = append(used[m], "docs/observability.md")
	}
	if len(used) < 20 {
		t.Fatalf("found only %d metric names: %v", len(used), used)
	}
	for m, where := range used {
		if m == "up" { // Prometheus's own, per scrape
			continue
		}
		if !registered(t, m) {
			t.Errorf("%s (read by %s) is not a metric Kustos exports", m, strings.Join(slices.Compact(where), ", "))
		}
	}
	for _, m := range codeMetricNames(t) {
		if !registered(t, m) {
			t.Errorf("%s is named in the code but not registered", m)
		}
		if !documented[m] {
			t.Errorf("%s is not in docs/observability.md", m)
		}
	}
}

// TestDashboard: the dashboard parses, chooses its data source by a variable (no data source
// UID of one Grafana), and every panel and query uses it.
func TestDashboard(t *testing.T) {
	d := dashboard(t)
	var ds map[string]any
	templating, _ := d["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		if v := v.(map[string]any); v["name"] == "datasource" {
			ds = v
		}
	}
	if ds == nil || ds["type"] != "datasource" || ds["query"] != "prometheus" {
		t.Fatalf("no Prometheus datasource variable: %v", ds)
	}
	var bad []string
	walkDatasources(d, "", func(path string, uid any) {
		if uid != "${datasource}" && uid != "-- Grafana --" {
			bad = append(bad, fmt.Sprintf("%s: %v", path, uid))
		}
	})
	if len(bad) > 0 {
		t.Errorf("data sources not taken from the variable:\n%s", strings.Join(bad, "\n"))
	}
	ids := map[float64]bool{}
	for _, p := range d["panels"].([]any) {
		p := p.(map[string]any)
		id := p["id"].(float64)
		if ids[id] {
			t.Errorf("panel id %v twice", id)
		}
		ids[id] = true
		if p["type"] != "row" && len(p["targets"].([]any)) == 0 {
			t.Errorf("panel %q has no query", p["title"])
		}
	}
}

// TestObservabilityChart: the PrometheusRule and the dashboard's ConfigMap are rendered only
// when enabled, where asked, with the labels the operator's Prometheus and Grafana's sidecar
// select on, and `helm lint --strict` finds nothing with them on.
func TestObservabilityChart(t *testing.T) {
	kinds := func(args ...string) map[string]map[string]any {
		t.Helper()
		out, err := helm(append([]string{"template", "kustos", chartDir(t), "--namespace", "ops"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		objs := map[string]map[string]any{}
		for _, o := range helmObjects(t, out) {
			md := o["metadata"].(map[string]any)
			objs[o["kind"].(string)+"/"+md["name"].(string)] = o
		}
		return objs
	}
	off := kinds()
	if _, ok := off["PrometheusRule/kustos"]; ok {
		t.Error("a PrometheusRule by default")
	}
	if _, ok := off["ConfigMap/kustos-dashboard"]; ok {
		t.Error("a dashboard by default")
	}

	on := []string{"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.namespace=monitoring",
		"--set", "prometheusRule.additionalLabels.release=kps",
		"--set", "dashboard.enabled=true", "--set", "dashboard.namespace=grafana", "--set", "dashboard.annotations.grafana_folder=Kustos"}
	objs := kinds(on...)
	rule, cm := objs["PrometheusRule/kustos"], objs["ConfigMap/kustos-dashboard"]
	if rule == nil || cm == nil {
		t.Fatalf("enabled, rendered %v", slices.Sorted(maps.Keys(objs)))
	}
	if md := rule["metadata"].(map[string]any); md["namespace"] != "monitoring" || md["labels"].(map[string]any)["release"] != "kps" {
		t.Errorf("PrometheusRule metadata %v, want namespace monitoring and label release=kps", md)
	}
	md := cm["metadata"].(map[string]any)
	if md["namespace"] != "grafana" || md["labels"].(map[string]any)["grafana_dashboard"] != "1" || md["annotations"].(map[string]any)["grafana_folder"] != "Kustos" {
		t.Errorf("dashboard ConfigMap metadata %v, want namespace grafana, label grafana_dashboard=1 and the folder annotation", md)
	}
	file, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm["data"].(map[string]any)["kustos.json"]; got != strings.TrimRight(string(file), "\n") {
		t.Error("the ConfigMap's kustos.json is not files/dashboard.json")
	}
	if out, err := helm(append([]string{"lint", "--strict", chartDir(t)}, on...)...); err != nil {
		t.Errorf("helm lint --strict with the alerts and the dashboard: %v\n%s", err, out)
	}
}

// TestObservabilityOnPrometheus: a real Prometheus scrapes Kustos's registry while a PR-mode
// Kustos keeps a pull request open against the GitHub-compatible server: the open pull request
// shows in kustos_pull_requests_open and its age, and every dashboard query and alert
// expression is one this Prometheus evaluates (for the dashboard's variables: its data source
// and All), with the healthy Kustos not down.
func TestObservabilityOnPrometheus(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci") // never green: the PR stays open
	startKustos(t, g.prMode(func(o *app.Options) { o.PR.AutoMerge = true }))
	overQuota(t, ns, 5)
	g.waitPR(t, "an open PR", func(p githubtest.PullRequest) bool { return p.State == "open" })

	metricsSrv := httptest.NewServer(promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(metricsSrv.Close)
	prom := promtest.Start(t, promtest.Options{Scrape: []string{metricsSrv.Listener.Addr().String()}})
	prom.WaitFor(t, `kustos_pull_requests_open{detector="quota"} >= 1`, time.Minute)
	prom.WaitFor(t, `kustos_pull_request_oldest_open_seconds{detector="quota"} > 0`, time.Minute)
	prom.WaitFor(t, `kustos_changes_failing{detector="quota"} == 0`, time.Minute)
	prom.WaitFor(t, `kustos_prs_total{detector="quota", action="opened"} >= 1`, time.Minute)

	job := `job="` + promtest.Job + `"`
	dashboardVars := strings.NewReplacer("$__rate_interval", "1m", "$namespace", ".*", "$job", promtest.Job)
	for _, q := range dashboardQueries(t) {
		q = promqlLabelVals.ReplaceAllString(q, "$1")
		prom.Query(t, dashboardVars.Replace(q), time.Now()) // fails the test unless Prometheus evaluates it
	}
	for _, g := range alertGroups(t) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			v := prom.Query(t, strings.ReplaceAll(r["expr"].(string), `job="kustos-metrics"`, job), time.Now())
			if quiet := r["alert"] == "KustosDown" || r["alert"] == "KustosPullRequestOpenTooLong"; quiet && len(v) > 0 {
				t.Errorf("%s's expression holds on a healthy Kustos with a young PR: %v", r["alert"], v)
			}
		}
	}
}

// TestPromQLMetricNames: the metric names promqlMetricNames finds, so that the checks above
// see every metric a query reads and nothing else.
func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="kustos-metrics"} == 0`, []string{"up"}},
		{`sum by (namespace, job) (rate(a_total{job=~"x|y", code=~"5.."}[15m])) / sum(rate(b_total[5m])) > 0.5`, []string{"a_total", "b_total"}},
		{`max by (detector) (x_seconds{namespace=~"$namespace", job=~"$job"}) > 3 * 86400`, []string{"x_seconds"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_seconds_bucket{SEL}[$__rate_interval])))`, []string{"h_seconds_bucket"}},
		{`a == 0 and on (source) increase(b{status="denied"}[30m]) > 0 unless on(x) c offset 5m`, []string{"a", "b", "c"}},
		{`count(max by (source) (s_up) == 0) or vector(0)`, []string{"s_up"}},
		{`label_values(k_count{namespace=~"$namespace"}, job)`, []string{"k_count"}},
		{`sum without (instance) (m) / ignoring(x) group_left(y) n`, []string{"m", "n"}},
	} {
		if got := promqlMetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("promqlMetricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

var (
	promqlStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promqlGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlVariables = regexp.MustCompile(`\$\{?\w+\}?`)
	promqlLabelVals = regexp.MustCompile(`\blabel_values\(([^,]*),\s*\w+\)`)
	promqlIdent     = regexp.MustCompile(`[a-zA-Z_:][\w:]*`)
	promqlKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// promqlMetricNames returns the metric names a PromQL expression (or a Grafana label_values
// query) reads, sorted: identifiers that are neither functions, keywords, label names nor
// inside strings, matchers, ranges or Grafana variables.
func promqlMetricNames(expr string) []string {
	expr = promqlLabelVals.ReplaceAllString(expr, "$1")
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlGrouping.ReplaceAllString(expr, " ")
	expr = promqlRanges.ReplaceAllString(expr, " ")
	expr = promqlVariables.ReplaceAllString(expr, " ")
	var names []string
	for _, loc := range promqlIdent.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(expr[loc[0]-1:loc[0]], "0123456789.") {
			continue // a number's exponent or unit, e.g. 1e3
		}
		if strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " \t\n"), "(") || promqlKeywords[strings.ToLower(name)] {
			continue // a function call, or a keyword
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// registered reports whether Kustos's metrics registry (controller-runtime's, which the
// manager serves on /metrics) holds a metric called name: a probe with that name and another
// help text is refused exactly when one is. A histogram's series are found by its name.
func registered(t *testing.T, name string) bool {
	t.Helper()
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(t, base) {
			return true
		}
	}
	p := probe{prometheus.NewDesc(name, "probe of the observability test", nil, nil)}
	err := ctrlmetrics.Registry.Register(p)
	if err == nil {
		ctrlmetrics.Registry.Unregister(p)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name") {
		return true
	}
	t.Fatalf("probing %s: %v", name, err)
	return false
}

type probe struct{ d *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.d }
func (p probe) Collect(chan<- prometheus.Metric)    {}

// codeMetricNames are the kustos_ metric names the code under internal/ declares.
func codeMetricNames(t *testing.T) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(kustos_[a-z0-9_]+)"`)
	var names []string
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("found only %v declared in internal/", names)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func readDoc(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alertGroups reads files/alerts.yaml's groups.
func alertGroups(t *testing.T) []any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("files/alerts.yaml has no groups")
	}
	return f.Groups
}

func alertNames(groups []any) []string {
	var names []string
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			names = append(names, r.(map[string]any)["alert"].(string))
		}
	}
	sort.Strings(names)
	return names
}

// renderedRule renders the chart for release and returns its PrometheusRule.
func renderedRule(t *testing.T, release string, args ...string) map[string]any {
	t.Helper()
	out, err := helm(append([]string{"template", release, chartDir(t), "--show-only", "templates/prometheusrule.yaml"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs := helmObjects(t, out)
	if len(objs) != 1 || objs[0]["kind"] != "PrometheusRule" {
		t.Fatalf("rendered %v, want one PrometheusRule", objs)
	}
	return objs[0]
}

// helmObjects splits helm's output into objects, kept as maps (the monitoring.coreos.com kinds
// are not in client-go's scheme).
func helmObjects(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("helm rendered YAML that does not parse: %v\n%s", err, doc)
		}
		objs = append(objs, o)
	}
	return objs
}

func dashboard(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("files/dashboard.json: %v", err)
	}
	return d
}

// dashboardQueries are the PromQL of every panel target and the queries of the variables.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	d := dashboard(t)
	var qs []string
	for _, p := range d["panels"].([]any) {
		targets, _ := p.(map[string]any)["targets"].([]any)
		for _, tg := range targets {
			qs = append(qs, tg.(map[string]any)["expr"].(string))
		}
	}
	for _, v := range d["templating"].(map[string]any)["list"].([]any) {
		if q, ok := v.(map[string]any)["definition"].(string); ok {
			qs = append(qs, q)
		}
	}
	return qs
}

// walkDatasources calls f with every "datasource" object's uid in v.
func walkDatasources(v any, path string, f func(path string, uid any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if ds, ok := x.(map[string]any); ok && k == "datasource" {
				f(path+"."+k, ds["uid"])
				continue
			}
			walkDatasources(x, path+"."+k, f)
		}
	case []any:
		for i, x := range v {
			walkDatasources(x, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

// promtool runs the promtool `make testbin` builds, in dir, and fails the test on an error.
func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtest.Binary(t, "promtool"), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s (build it with `make testbin`): %v\n%s", strings.Join(args, " "), err, out)
	}
}
