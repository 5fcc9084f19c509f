package statusreport

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/detect/quota"
)

// TestPrintReclaim: the totals section of the table and the totals line of JSON, and nothing
// at all without totals (the output of a cluster without shrinks is as it was).
func TestPrintReclaim(t *testing.T) {
	sh := func(res, current, goal string, blocked ...quota.Gate) quota.Shrink {
		return quota.Shrink{Resource: corev1.ResourceName("requests." + res), Current: resource.MustParse(current),
			Goal: resource.MustParse(goal), Recommended: resource.MustParse(goal), Blocked: blocked}
	}
	totals := quota.ReclaimTotals{}
	totals.Add(quota.Reclaims([]quota.Shrink{sh("cpu", "200", "16", quota.GateWindow), sh("memory", "64Gi", "16Gi")}))
	totals.Add(quota.Reclaims([]quota.Shrink{sh("cpu", "10", "10")}))
	for _, tc := range []struct {
		name, format string
		totals       quota.ReclaimTotals
		want         string
	}{
		{"table", "table", totals, "\nRECLAIMABLE (quotas above their usage window's target)\n" +
			"requests.cpu: 184 reclaimable in 1 quota; 1 blocked by window\n" +
			"requests.memory: 48Gi reclaimable in 1 quota\n"},
		{"json", "json", totals, `{"totals":{"requests.cpu":{"reclaimable":"184","quotas":1,"blocked":{"window":1}},"requests.memory":{"reclaimable":"48Gi","quotas":1,"blocked":{}}}}` + "\n"},
		{"no totals", "table", quota.ReclaimTotals{}, ""},
		{"no totals as json", "json", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintReclaim(&buf, tc.totals, tc.format); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", buf.String(), tc.want)
			}
		})
	}
}
