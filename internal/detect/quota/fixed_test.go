package quota

import (
	"math"
	"math/big"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fuzzQuantity parses a fuzzer's quantity the way FuzzRoundUp does: ParseQuantity itself takes
// minutes for "1e-2000000000", which no caller passes on.
func fuzzQuantity(s string) (resource.Quantity, bool) {
	if len(s) > evMaxQuantity || !evExponentOK(s) {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

func fracOf(num, den uint64) *big.Rat {
	return new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))
}

// sameQuantity reports whether two results are indistinguishable to Decide's callers.
func sameQuantity(a, b resource.Quantity) bool {
	return a.String() == b.String() && a.Cmp(b) == 0 && a.Format == b.Format && RatOf(a).Cmp(RatOf(b)) == 0
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// checkFastMatchesExact compares every integer fast path with its math/big reference for one
// input.
func checkFastMatchesExact(t *testing.T, hard, used resource.Quantity, threshold, increment *big.Rat, name corev1.ResourceName) {
	t.Helper()
	desc := func() string {
		return "hard=" + hard.String() + " used=" + used.String() + " threshold=" + threshold.RatString() +
			" increment=" + increment.RatString() + " name=" + string(name)
	}

	// The threshold decision.
	wantPressure := underPressureExact(used, hard, threshold)
	if got, ok := underPressureFixed(used, hard, threshold); ok && got != wantPressure {
		t.Fatalf("%s: underPressureFixed = %v, exact %v", desc(), got, wantPressure)
	}
	if got := underPressure(used, hard, threshold); got != wantPressure {
		t.Fatalf("%s: underPressure = %v, exact %v", desc(), got, wantPressure)
	}

	// Floats for messages.
	for _, r := range []*big.Rat{threshold, increment, RatOf(used)} {
		want, _ := r.Float64()
		if got := ratFloat(r); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: ratFloat(%s) = %v, Float64 %v", desc(), r.RatString(), got, want)
		}
	}

	// The threshold recommendation: value, percent, error.
	gotRec, gotPct, gotErr := thresholdRaise(hard, used, increment, name)
	wantRec, wantPct, wantErr := thresholdRaiseExact(hard, used, increment, name)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("%s: thresholdRaise error %v, exact %v", desc(), gotErr, wantErr)
	}
	if wantErr == nil {
		if !sameQuantity(gotRec, wantRec) {
			t.Fatalf("%s: thresholdRaise = %s, exact %s", desc(), gotRec.String(), wantRec.String())
		}
		if math.Float64bits(gotPct) != math.Float64bits(wantPct) {
			t.Fatalf("%s: used percent %v, exact %v", desc(), gotPct, wantPct)
		}
	}

	// RoundUp of arbitrary exact values: the threshold and increment as plain numbers, the used
	// value, and the used value in thousandths (values at a finer scale than current).
	for _, exact := range []*big.Rat{threshold, increment, RatOf(used), new(big.Rat).Quo(RatOf(used), big.NewRat(1000, 1))} {
		got, gotErr := RoundUp(exact, hard, name)
		want, _, wantErr := roundUpExact(exact, hard, name)
		if !sameError(gotErr, wantErr) {
			t.Fatalf("%s: RoundUp(%s) error %v, exact %v", desc(), exact.RatString(), gotErr, wantErr)
		}
		if wantErr == nil && !sameQuantity(got, want) {
			t.Fatalf("%s: RoundUp(%s) = %s, exact %s", desc(), exact.RatString(), got.String(), want.String())
		}
	}
}

// checkQuoFloat compares quoFloat(n, d) with big.Rat.Float64, for d > 0.
func checkQuoFloat(t *testing.T, n, d uint64) {
	t.Helper()
	if d == 0 {
		return
	}
	got, ok := quoFloat(n, d)
	if !ok {
		if n <= maxExactFloat && d <= maxExactFloat || new(big.Rat).SetFrac(new(big.Int).SetUint64(n), new(big.Int).SetUint64(d)).Cmp(big.NewRat(1<<55, 1)) < 0 {
			t.Fatalf("quoFloat(%d, %d) fell back", n, d)
		}
		return
	}
	want, _ := fracOf(n, d).Float64()
	if math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("quoFloat(%d, %d) = %v (%x), Float64 %v (%x)", n, d, got, math.Float64bits(got), want, math.Float64bits(want))
	}
}

func TestQuoFloat(t *testing.T) {
	const top = math.MaxUint64
	pairs := [][2]uint64{
		{0, 1}, {0, top}, {1, 3}, {2, 3}, {80, 1}, {175, 2}, {1, 100000},
		{top, 1}, {top, 3}, {top, top}, {top - 1, top}, {1, top}, {3, top},
		{1 << 53, 3}, {1<<53 + 1, 1}, {1<<53 + 1, 2}, {1<<54 + 3, 4}, {1<<55 - 1, 1}, {1 << 55, 1},
		{1<<55 + 1, 2}, {1<<56 - 1, 3}, {9500 * 100, 10000}, {97 << 40 * 100, 100 << 40},
		{106652627894272 * 100, 100 << 40}, {1e17 + 1, 1e15 + 7}, {12345678901234567891, 98765432109876543},
	}
	for _, p := range pairs {
		checkQuoFloat(t, p[0], p[1])
		checkQuoFloat(t, p[1], p[0])
	}
	// Every value just below and above a halfway point between two float64s.
	for _, base := range []uint64{1 << 53, 1 << 54, 1<<60 + 1<<8, 3 << 58} {
		for delta := uint64(0); delta < 40; delta++ {
			for _, den := range []uint64{1, 2, 3, 7, 1 << 20, 1<<20 + 1} {
				checkQuoFloat(t, base+delta, den)
				checkQuoFloat(t, base-delta, den)
			}
		}
	}
}

// FuzzFastPathMatchesExact checks that the integer fast paths (fixed.go) give exactly what the
// math/big paths give: the same threshold decision, the same recommended quantity (String(),
// value and format), the same used percentage to the bit, and an error exactly when the exact
// path has one, with the same message.
func FuzzFastPathMatchesExact(f *testing.F) {
	f.Add("10", "9500m", uint64(80), uint64(1), uint64(1), uint64(5), "requests.cpu")
	f.Add("20Gi", "4Gi", uint64(80), uint64(1), uint64(1), uint64(5), "requests.memory")
	f.Add("10", "8", uint64(80), uint64(1), uint64(1), uint64(5), "pods")
	f.Fuzz(func(t *testing.T, hardS, usedS string, tNum, tDen, iNum, iDen uint64, name string) {
		if tDen == 0 || iDen == 0 {
			return
		}
		hard, ok := fuzzQuantity(hardS)
		if !ok {
			return
		}
		used, ok := fuzzQuantity(usedS)
		if !ok {
			return
		}
		checkFastMatchesExact(t, hard, used, fracOf(tNum, tDen), fracOf(iNum, iDen), corev1.ResourceName(name))
		for _, p := range [][2]uint64{{tNum, tDen}, {iNum, iDen}, {tNum, iDen}, {iNum, tDen}, {tDen, tNum}} {
			checkQuoFloat(t, p[0], p[1])
		}
	})
}

// TestFastPathCoversCommonQuotas makes sure the fast paths are actually taken for the values real
// quotas hold (a fast path that always fell back would pass the fuzzer), and agree with the
// exact ones there.
func TestFastPathCoversCommonQuotas(t *testing.T) {
	cases := []struct {
		name       corev1.ResourceName
		hard, used string
	}{
		{"requests.cpu", "10", "9500m"},
		{"requests.cpu", "4", "4"},
		{"limits.cpu", "500m", "450m"},
		{"requests.cpu", "1500m", "1400m"},
		{"requests.memory", "20Gi", "19Gi"},
		{"requests.memory", "1Gi", "900Mi"},
		{"limits.memory", "512Mi", "500Mi"},
		{"limits.memory", "64Ti", "60Ti"},
		{"requests.storage", "100Ti", "97Ti"},
		{"requests.storage", "5P", "4900T"},
		{"requests.storage", "100G", "95G"},
		{"requests.ephemeral-storage", "50Gi", "49000000000"},
		{"pods", "10", "9"},
		{"count/deployments.apps", "20k", "19k"},
		{"requests.nvidia.com/gpu", "4", "4"},
		{"requests.cpu", "0", "0"},
	}
	policies := []Settings{
		{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)},
		{Threshold: big.NewRat(175, 2), Increment: big.NewRat(1, 8)},
		{Threshold: big.NewRat(100, 1), Increment: big.NewRat(10, 1)},
		{Threshold: big.NewRat(0, 1), Increment: big.NewRat(1, 100000)},
	}
	for _, tc := range cases {
		for _, set := range policies {
			hard, used := resource.MustParse(tc.hard), resource.MustParse(tc.used)
			if _, ok := underPressureFixed(used, hard, set.Threshold); !ok {
				t.Errorf("%s %s/%s: underPressureFixed fell back", tc.name, tc.used, tc.hard)
			}
			if _, _, ok := thresholdRaiseFixed(hard, used, set.Increment, tc.name); !ok {
				t.Errorf("%s %s/%s +%s: thresholdRaiseFixed fell back", tc.name, tc.used, tc.hard, set.Increment.RatString())
			}
			if _, _, ok := roundUpRat(RatOf(used), hard, tc.name); !ok {
				t.Errorf("%s RoundUp(%s, %s): roundUpRat fell back", tc.name, tc.used, tc.hard)
			}
			checkFastMatchesExact(t, hard, used, set.Threshold, set.Increment, tc.name)
		}
	}
}

// TestFastPathFallsBack checks inputs the integer paths cannot hold: they must report so, and
// the combined result must still be the exact one.
func TestFastPathFallsBack(t *testing.T) {
	third := big.NewRat(1, 3)
	cases := []struct {
		name       corev1.ResourceName
		hard, used string
		threshold  *big.Rat
		increment  *big.Rat
	}{
		{"requests.cpu", "1e30", "1e29", big.NewRat(80, 1), third},                        // beyond uint64
		{"requests.cpu", "10", "-1", big.NewRat(0, 1), third},                             // negative used
		{"requests.cpu", "-10", "1", big.NewRat(80, 1), third},                            // negative hard
		{"requests.memory", "8Ei", "1", big.NewRat(80, 1), big.NewRat(1, 5)},              // too large
		{"requests.cpu", "9223372036854775807", "1", big.NewRat(80, 1), big.NewRat(1, 5)}, // too large
		{"requests.cpu", "10", "9", mustRat("1/100000000000000000000000"), mustRat("1/100000000000000000000000")},
		{"requests.memory", "1Ei", "1000Pi", big.NewRat(80, 1), big.NewRat(1, 5)}, // used×100 beyond uint64
	}
	for _, tc := range cases {
		hard, used := resource.MustParse(tc.hard), resource.MustParse(tc.used)
		if _, _, ok := thresholdRaiseFixed(hard, used, tc.increment, tc.name); ok {
			t.Errorf("%s %s/%s: thresholdRaiseFixed did not fall back", tc.name, tc.used, tc.hard)
		}
		checkFastMatchesExact(t, hard, used, tc.threshold, tc.increment, tc.name)
	}
}

func TestFixedOf(t *testing.T) {
	tests := []struct {
		in string
		m  uint64
		s  int
		ok bool
	}{
		{"0", 0, 0, true},
		{"10", 10, 0, true},
		{"9500m", 9500, 3, true},
		{"1.5", 1500, 3, true},
		{"20Gi", 20 << 30, 0, true},
		{"1.5Gi", 3 << 29, 0, true}, // held as an inf.Dec
		{"5n", 5, 9, true},
		{"0.1n", 1, 9, true},
		{"9E", 9e18, 0, true},
		{"18E", 18e18, 0, true},
		{"19E", 0, 0, false},
		{"8Ei", math.MaxInt64, 0, true},
		{"1e30", 0, 0, false},
		{"-1", 0, 0, false},
		{"12345678901234567890", 12345678901234567890, 0, true},
		{"98765432109876543210", 0, 0, false},
	}
	for _, tt := range tests {
		m, s, ok := fixedOf(resource.MustParse(tt.in))
		if ok != tt.ok || ok && (m != tt.m || s != tt.s) {
			t.Errorf("fixedOf(%s) = %d, %d, %v; want %d, %d, %v", tt.in, m, s, ok, tt.m, tt.s, tt.ok)
		}
	}
	if m, s, ok := fixedOf(resource.Quantity{}); !ok || m != 0 || s != 0 {
		t.Errorf("fixedOf(Quantity{}) = %d, %d, %v", m, s, ok)
	}
	if _, _, ok := fixedOf(*resource.NewScaledQuantity(1, -12)); ok {
		t.Errorf("fixedOf(1p): finer than nano must fall back")
	}
}

func TestU128(t *testing.T) {
	top := u128{math.MaxUint64, math.MaxUint64}
	if _, ok := top.inc(); ok {
		t.Error("max+1 did not overflow")
	}
	if _, ok := (u128{1, 0}).mul(math.MaxUint64); !ok {
		t.Error("2^64·(2^64-1) fits")
	}
	if _, ok := (u128{1 << 63, 0}).mul(2); ok {
		t.Error("2^127·2 does not fit")
	}
	if _, ok := (u128{1, 1 << 63}).mul(math.MaxUint64); ok {
		t.Error("(2^64+2^63)·(2^64-1) does not fit")
	}
	q, r := mul64(math.MaxUint64, 7).divMod(7)
	if q != (u128{0, math.MaxUint64}) || r != 0 {
		t.Errorf("divMod = %v, %d", q, r)
	}
	if q, ok := (u128{0, 10}).ceilDiv(3); !ok || q != (u128{0, 4}) {
		t.Errorf("ceilDiv = %v", q)
	}
	if top.cmp(u128{0, 1}) != 1 || (u128{0, 1}).cmp(u128{1, 0}) != -1 || top.cmp(top) != 0 {
		t.Error("cmp")
	}
}
