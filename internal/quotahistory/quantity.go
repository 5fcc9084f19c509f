package quotahistory

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxPoints is Prometheus's limit of points per series in a range query: it refuses a query
// whose (end − start) / step exceeds it.
const maxPoints = 11000

// Step is the width of the buckets a window's history is read in, and how many cover it: days
// (a 14-day window is 14 buckets of one day). A window under a day is one bucket; one that is no
// whole number of days is cut into equal buckets of whole seconds that together cover it, at
// most a few seconds more. The buckets are aligned to the Unix epoch, so a window touches one
// more, and one before it says whether the history reaches back past its start: the buckets are
// at most 10,999, and a range query over all of them stays within Prometheus's 11,000 points
// per series. Zero for a window that is not positive.
func Step(window time.Duration) (step time.Duration, buckets int) {
	if window <= 0 {
		return 0, 0
	}
	n := int((window + day - 1) / day)
	n = min(max(n, 1), maxPoints-1)
	step = (window + time.Duration(n) - 1) / time.Duration(n)
	if r := step % time.Second; r != 0 {
		step += time.Second - r
	}
	return step, n
}

const day = 24 * time.Hour

// Quantity converts kube-state-metrics' float for resource name into the Quantity it stands
// for. kube-state-metrics reports cpu in cores (a Quantity's MilliValue()/1000) and everything
// else in its unit (bytes, counts), so: cpu in whole millicores, the rest in whole units, each
// rounded to the nearest when the float is within its rounding error of one, else up (a peak
// is never understated; 0.0005 cores is 1m, as the API server rounds a request). Bytes are
// BinarySI when they are a multiple of 1024 (1Gi), the rest DecimalSI (1500M). A value that is no usage (negative, NaN, infinite) or
// too large for a Quantity's int64 is an error.
func Quantity(name corev1.ResourceName, v float64) (resource.Quantity, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return resource.Quantity{}, fmt.Errorf("the usage of %s is %v, not a quantity", name, v)
	}
	format := resource.DecimalSI
	if inBytes(name) {
		format = resource.BinarySI
	}
	if cpu(name) {
		m, ok := whole(v * 1000)
		if !ok {
			return resource.Quantity{}, fmt.Errorf("the usage of %s is %v cores, too large for a quantity", name, v)
		}
		return *resource.NewMilliQuantity(m, format), nil
	}
	if n, ok := whole(v); ok && near(v, float64(n)) {
		if n%1024 != 0 {
			// 1500000000 bytes reads better as 1500M than in BinarySI's plain digits.
			format = resource.DecimalSI
		}
		return *resource.NewQuantity(n, format), nil
	}
	// Not a whole unit (a memory request of "1500m" bytes is legal): in thousandths.
	m, ok := whole(v * 1000)
	if !ok {
		return resource.Quantity{}, fmt.Errorf("the usage of %s is %v, too large for a quantity", name, v)
	}
	return *resource.NewMilliQuantity(m, format), nil
}

// whole is x as an integer: the nearest one when x is within a float's rounding error of it,
// else the next one up; false when it does not fit an int64.
func whole(x float64) (int64, bool) {
	r := math.Round(x)
	if !near(x, r) {
		r = math.Ceil(x)
	}
	// 2^63 is the first float64 past the int64 range.
	if r >= math.Exp2(63) {
		return 0, false
	}
	return int64(r), true
}

// near: x and r differ by no more than the rounding error of a float multiplied once more,
// relative to their size, so that a positive usage never rounds to zero.
func near(x, r float64) bool { return math.Abs(x-r) <= 1e-9*math.Max(math.Abs(x), math.Abs(r)) }

func cpu(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || strings.HasSuffix(string(name), ".cpu")
}

// inBytes: memory, storage and huge pages, as the API server reports them.
func inBytes(name corev1.ResourceName) bool {
	s := string(name)
	return s == "memory" || strings.HasSuffix(s, ".memory") || strings.HasSuffix(s, "storage") ||
		strings.HasPrefix(s, "hugepages-") || strings.Contains(s, ".hugepages-")
}
