package quotahistory_test

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/quotahistory"
)

func TestStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		window  time.Duration
		step    time.Duration
		buckets int
	}{
		{"two weeks: days", 14 * day, day, 14},
		{"a week", 7 * day, day, 7},
		{"a day", day, day, 1},
		{"under a day: one bucket", time.Hour, time.Hour, 1},
		{"36 hours: two equal buckets", 36 * time.Hour, 18 * time.Hour, 2},
		{"a day and a second: whole seconds, covering it", day + time.Second, 12*time.Hour + time.Second, 2},
		{"a hundred years: under 11,000 points", 36500 * day, 286717 * time.Second, 10999},
		{"zero", 0, 0, 0},
		{"negative", -day, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			step, n := quotahistory.Step(tc.window)
			if step != tc.step || n != tc.buckets {
				t.Fatalf("Step(%s) = %s, %d; want %s, %d", tc.window, step, n, tc.step, tc.buckets)
			}
			if n > 0 {
				// The buckets cover the window, the coverage point before it included, in at
				// most Prometheus's 11,000 points per series.
				if time.Duration(n)*step < tc.window || n+1 > 11000 || step%time.Second != 0 {
					t.Errorf("%d × %s does not cover %s in ≤ 11,000 points of whole seconds", n, step, tc.window)
				}
			}
		})
	}
}

func TestQuantity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  corev1.ResourceName
		v    float64
		want string
	}{
		{"requests.cpu", 0.1, "100m"},
		{"requests.cpu", 0.3, "300m"},
		{"limits.cpu", 2.5, "2500m"},
		{"cpu", 2, "2"},
		{"requests.cpu", 0.0005, "1m"},   // below a millicore: up to one, never down to zero
		{"requests.cpu", 0.1234, "124m"}, // not a whole millicore: up
		{"requests.cpu", 0, "0"},
		{"requests.memory", 1 << 30, "1Gi"},
		{"limits.memory", 3 << 30, "3Gi"},
		{"requests.memory", 1.5e9, "1500M"},
		{"requests.memory", 1.5, "1500m"},
		{"requests.storage", 10 << 30, "10Gi"},
		{"requests.ephemeral-storage", 512 << 20, "512Mi"},
		{"hugepages-2Mi", 4 << 20, "4Mi"},
		{"pods", 3, "3"},
		{"count/deployments.apps", 12, "12"},
		{"requests.nvidia.com/gpu", 2, "2"},
		{"services.loadbalancers", 1e3, "1k"},
	} {
		t.Run(string(tc.res)+"="+resource.NewScaledQuantity(int64(tc.v*1000), resource.Milli).String(), func(t *testing.T) {
			t.Parallel()
			q, err := quotahistory.Quantity(tc.res, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if q.String() != tc.want {
				t.Errorf("Quantity(%s, %v) = %s, want %s", tc.res, tc.v, q.String(), tc.want)
			}
		})
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, -0.001, 1e19} {
		if q, err := quotahistory.Quantity("requests.memory", v); err == nil {
			t.Errorf("Quantity(requests.memory, %v) = %s, want an error", v, q.String())
		}
	}
	if q, err := quotahistory.Quantity("requests.cpu", 1e16); err == nil {
		t.Errorf("Quantity(requests.cpu, 1e16) = %s, want an error (no millicore count fits)", q.String())
	}
}

// FuzzQuantity: whatever kube-state-metrics sends, a Quantity is never below the value (a peak
// is never understated), at most one unit of its precision above it, and reads back as itself.
func FuzzQuantity(f *testing.F) {
	for _, v := range []float64{0, 0.1, 0.3, 2.5, 1 << 30, 1.5, 1e-9, 9.2e15, 9.2e18, math.NaN(), -1} {
		f.Add("requests.cpu", v)
		f.Add("requests.memory", v)
		f.Add("pods", v)
	}
	f.Fuzz(func(t *testing.T, name string, v float64) {
		q, err := quotahistory.Quantity(corev1.ResourceName(name), v)
		if err != nil {
			return
		}
		got := q.AsApproximateFloat64()
		if got < v*(1-1e-9) || got > v*(1+1e-9)+0.001 {
			t.Fatalf("Quantity(%q, %v) = %s (%v): not the value rounded up to its precision", name, v, q.String(), got)
		}
		back, err := resource.ParseQuantity(q.String())
		if err != nil || back.Cmp(q) != 0 {
			t.Fatalf("Quantity(%q, %v) = %s reads back as %s (%v)", name, v, q.String(), back.String(), err)
		}
	})
}
