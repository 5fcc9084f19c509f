package recommend

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
)

// TestRunPrometheusWindow: with --prometheus-url the window is kube-state-metrics'
// kube_resourcequota in a real Prometheus, as the controller reads it: team-p/compute has 16
// days of history peaking at 2 cores and shrinks with nothing holding it back; team-p/young's
// began 3 days ago and is held back by window, although its state Lease (none here) is not
// asked. The totals line follows.
func TestRunPrometheusWindow(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	from, to := now.Add(-16*24*time.Hour), now.Add(-2*time.Minute)
	var h promtest.History
	series := func(quota string, from time.Time, base, peak float64, peakAt time.Time) {
		var samples []promtest.Sample
		for at := from; at.Before(to); at = at.Add(time.Hour) {
			samples = append(samples, promtest.Sample{At: at, Value: base})
		}
		samples = append(samples, promtest.Sample{At: to, Value: base}, promtest.Sample{At: peakAt, Value: peak})
		h.Add("kube_resourcequota", "gauge", map[string]string{"namespace": "team-p", "resourcequota": quota,
			"resource": "requests.cpu", "type": "used", "job": "kube-state-metrics", "instance": "ksm-0"}, samples...)
	}
	peakAt := now.Add(-5 * 24 * time.Hour)
	series("compute", from, 1, 2, peakAt)
	series("young", now.Add(-3*24*time.Hour), 1, 1, to)
	s := promtest.Start(t, promtest.Options{History: &h})

	dump := filepath.Join(t.TempDir(), "dump.yaml")
	quota := func(name string) string {
		return "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: " + name + "\n  namespace: team-p\nstatus:\n  hard:\n    requests.cpu: \"10\"\n  used:\n    requests.cpu: \"1\"\n"
	}
	if err := os.WriteFile(dump, []byte(quota("compute")+"---\n"+quota("young")), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run([]string{"--now", now.Format(time.RFC3339), "--prometheus-url", s.URL, "-f", dump}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`{"namespace":"team-p","quota":"compute","resource":"requests.cpu","current":"10","used":"1","target":"2500m","recommended":"7500m","trigger":"shrink","peak":"2",`,
		`"windowComplete":true,"gates":["step"],"blocked":[],"reclaimable":"7500m",`,
		`{"namespace":"team-p","quota":"young","resource":"requests.cpu","current":"10","used":"1","target":"1250m","recommended":"7500m","trigger":"shrink","peak":"1",`,
		`"windowComplete":false,"gates":["step"],"blocked":["window"],"reclaimable":"8750m",`,
		`{"totals":{"requests.cpu":{"reclaimable":"16250m","quotas":2,"blocked":{"window":1}}}}` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %s; got:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "notice: a usage window from Prometheus is incomplete") {
		t.Errorf("stderr does not say why young's window is incomplete:\n%s", stderr.String())
	}
	checkLines(t, stdout.Bytes())
}
