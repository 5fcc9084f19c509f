package quota

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// withDays gives w's resource a peak on each day of its window: values[i] on the window's
// first day + i, "" for a day without one.
func withDays(w quotahistory.Window, name corev1.ResourceName, values ...string) quotahistory.Window {
	if w.Days == nil {
		w.Days = map[corev1.ResourceName][]quotahistory.DayPeak{}
	}
	first := utcDay(w.Start)
	for i, v := range values {
		if v != "" {
			w.Days[name] = append(w.Days[name], quotahistory.DayPeak{Day: first.AddDate(0, 0, i), Value: resource.MustParse(v)})
		}
	}
	return w
}

// TestChangeCarriesWindow: a quota's Change carries, per resource whose window holds daily
// peaks, what a pull request charts — the days, the peak, the target, the headroom and the
// gates checked — and nothing new when the window holds none.
func TestChangeCarriesWindow(t *testing.T) {
	days := []string{"6Gi", "7Gi", "", "8Gi", "6Gi", "6Gi", "5Gi", "6Gi", "7Gi", "6Gi", "6Gi", "6Gi", "6Gi", "7Gi", "6Gi"}
	const wantDaily = "2026-11-07:6Gi,7Gi,,8Gi,6Gi,6Gi,5Gi,6Gi,7Gi,6Gi,6Gi,6Gi,6Gi,7Gi,6Gi"
	// Evidence keys of a grow as today's pull requests show them, without a window.
	growKeys := []string{"current", "detector", "message", "namespace", "quota", "recommended", "resource", "thresholdPercent", "trigger", "used", "usedPercent"}

	t.Run("shrink", func(t *testing.T) {
		s := snap(rl("requests.memory", "16Gi"), rl("requests.memory", "5Gi"), func(s *Snapshot) {
			s.Policy = sizingPolicy()
			s.Window = withDays(win(true, "requests.memory", "8Gi"), "requests.memory", days...)
		})
		c := Decide(s).ShrinkChange()
		if c == nil {
			t.Fatal("no shrink")
		}
		e := c.Evidence[0]
		for k, want := range map[string]string{"dailyPeaks": wantDaily, "headroom": "25%", "checked": "failed-create,window,recent-grow,cooldown",
			"peak": "8Gi", "target": "10Gi", "recommended": "12Gi", "gates": "step"} {
			if e[k] != want {
				t.Errorf("%s = %q, want %q", k, e[k], want)
			}
		}
	})
	t.Run("grow with a window", func(t *testing.T) {
		s := snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9500Mi"), func(s *Snapshot) {
			s.Policy = sizingPolicy()
			s.Window = withDays(win(true, "requests.memory", "8Gi"), "requests.memory", days...)
		})
		c := Decide(s).Change()
		if c == nil {
			t.Fatal("no grow")
		}
		e := c.Evidence[0]
		for k, want := range map[string]string{"dailyPeaks": wantDaily, "headroom": "25%", "peak": "8Gi", "peakAt": "2026-11-18T12:00:00Z",
			"target": "12Gi", "windowComplete": "true", "trigger": "threshold"} {
			if e[k] != want {
				t.Errorf("%s = %q, want %q", k, e[k], want)
			}
		}
	})
	for _, tc := range []struct {
		name string
		w    quotahistory.Window
	}{
		{"grow without history", quotahistory.Window{}},
		{"grow whose window holds a single day", withDays(win(false, "requests.memory", "8Gi"), "requests.memory", "8Gi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9500Mi"), func(s *Snapshot) {
				s.Policy = sizingPolicy()
				s.Window = tc.w
			})
			c := Decide(s).Change()
			if c == nil {
				t.Fatal("no grow")
			}
			if got := slices.Sorted(maps.Keys(c.Evidence[0])); !slices.Equal(got, growKeys) {
				t.Errorf("evidence keys %v, want today's %v", got, growKeys)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		many := make([]string, 90)
		for i := range many {
			many[i] = "1Gi"
		}
		w := win(true, "requests.memory", "8Gi")
		w.Start = w.Start.AddDate(0, 0, -76)
		s := snap(rl("requests.memory", "16Gi"), rl("requests.memory", "5Gi"), func(s *Snapshot) {
			s.Policy = sizingPolicy()
			s.Window = withDays(w, "requests.memory", many...)
		})
		c := Decide(s).ShrinkChange()
		if c == nil {
			t.Fatal("no shrink")
		}
		// 90 days from 2026-08-23: the last 32 of them, from 2026-10-20 to 2026-11-20.
		if got := c.Evidence[0]["dailyPeaks"]; !strings.HasPrefix(got, "2026-10-20:1Gi,") || strings.Count(got, ",") != MaxWindowDays {
			t.Errorf("dailyPeaks %q: want the last %d days", got, MaxWindowDays+1)
		}
	})
}
