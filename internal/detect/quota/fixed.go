package quota

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Exact fixed-point fast paths for the quota arithmetic.
//
// The reference arithmetic is math/big (RatOf, roundUpExact, underPressureExact,
// thresholdRaiseExact). Almost every real quota, though, holds values that are a whole number of
// nano-units fitting in a uint64 at some decimal scale ≤ 9 (10, 9500m, 20Gi), and thresholds
// and increments with small numerators and denominators (80, 1/5). For those the same
// computations are done here on integers: uint64 values scaled by a common power of ten, with
// 128-bit products (math/bits) and every multiplication, addition and conversion checked. Each
// function reports ok=false as soon as anything does not fit, or the result would be an error,
// and its caller then takes the math/big path, which also produces every error message. The
// fast paths therefore never change a result, only its cost; FuzzFastPathMatchesExact checks
// that against the math/big path.

// maxFixedScale is the finest decimal scale the fast paths handle: nano, the finest a parsed
// Quantity holds.
const maxFixedScale = 9

// pow10 holds 10^0 … 10^19, every power of ten that fits in a uint64.
var pow10 = [...]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

// mul64 returns a·b, which always fits.
func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

// mul returns a·b; ok is false when it does not fit in 128 bits.
func (a u128) mul(b uint64) (u128, bool) {
	hi1, lo := bits.Mul64(a.lo, b)
	hi2, mid := bits.Mul64(a.hi, b)
	hi, carry := bits.Add64(hi1, mid, 0)
	return u128{hi, lo}, hi2 == 0 && carry == 0
}

// inc returns a+1; ok is false on overflow.
func (a u128) inc() (u128, bool) {
	lo, carry := bits.Add64(a.lo, 1, 0)
	hi, carry := bits.Add64(a.hi, 0, carry)
	return u128{hi, lo}, carry == 0
}

func (a u128) cmp(b u128) int {
	switch {
	case a.hi < b.hi, a.hi == b.hi && a.lo < b.lo:
		return -1
	case a == b:
		return 0
	}
	return 1
}

// divMod returns ⌊a/d⌋ and a mod d, for d > 0.
func (a u128) divMod(d uint64) (u128, uint64) {
	qhi, r := a.hi/d, a.hi%d
	qlo, r := bits.Div64(r, a.lo, d) // r < d: cannot overflow
	return u128{qhi, qlo}, r
}

// ceilDiv returns ⌈a/d⌉, for d > 0.
func (a u128) ceilDiv(d uint64) (u128, bool) {
	q, r := a.divMod(d)
	if r != 0 {
		return q.inc()
	}
	return q, true
}

// scaled returns x·10^k (x at scale s, the result at scale s+k); ok is false when it does not fit.
func scaled(x u128, k int) (u128, bool) {
	if k < 0 || k >= len(pow10) {
		return u128{}, false
	}
	return x.mul(pow10[k])
}

// scaled64 is scaled for a uint64 that must stay a uint64.
func scaled64(x uint64, k int) (uint64, bool) {
	if k < 0 || k >= len(pow10) {
		return 0, false
	}
	hi, lo := bits.Mul64(x, pow10[k])
	return lo, hi == 0
}

// fixedOf returns q as m·10^-s exactly, with 0 ≤ s ≤ maxFixedScale; ok is false when q is
// negative or does not fit. It does not allocate for quantities ParseQuantity holds as int64s.
func fixedOf(q resource.Quantity) (m uint64, s int, ok bool) {
	if q.IsZero() {
		return 0, 0, true
	}
	var buf [24]byte
	digits, exp := q.AsCanonicalBytes(buf[:0]) // q = digits · 10^exp, exactly
	if len(digits) == 0 || len(digits) > 20 {
		return 0, 0, false // also too long: 20 digits are ≥ 10^19
	}
	for _, c := range digits {
		if c < '0' || c > '9' { // a sign
			return 0, 0, false
		}
		hi, lo := bits.Mul64(m, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return 0, 0, false
		}
		m = lo
	}
	if exp >= 0 {
		m, ok = scaled64(m, int(exp))
		return m, 0, ok
	}
	if -exp > maxFixedScale {
		return 0, 0, false
	}
	return m, int(-exp), true
}

// sameScale brings a (at scale as) and b (at scale bs) to the scale max(as, bs).
func sameScale(a uint64, as int, b uint64, bs int) (x, y uint64, s int, ok bool) {
	s = max(as, bs)
	x, okA := scaled64(a, s-as)
	y, okB := scaled64(b, s-bs)
	return x, y, s, okA && okB
}

// ratUint64s returns r as n/d; ok is false when r is nil, negative, or n or d does not fit in a
// uint64. It does not allocate.
func ratUint64s(r *big.Rat) (n, d uint64, ok bool) {
	if r == nil || r.Sign() < 0 || !r.Num().IsUint64() {
		return 0, 0, false
	}
	if r.IsInt() { // Denom allocates for an integer Rat whose denominator was never set
		return r.Num().Uint64(), 1, true
	}
	if !r.Denom().IsUint64() {
		return 0, 0, false
	}
	return r.Num().Uint64(), r.Denom().Uint64(), true
}

// maxExactFloat is the largest power of two up to which every integer is a float64.
const maxExactFloat = 1 << 53

// quoFloat returns the float64 nearest to n/d (d > 0), ties to even, as big.Rat.Float64 does;
// ok is false only when an operand is above 2^53 and n/d above 2^55.
func quoFloat(n, d uint64) (float64, bool) {
	if n <= maxExactFloat && d <= maxExactFloat {
		// Both operands are exact, and IEEE division rounds the exact quotient to nearest even.
		return float64(n) / float64(d), true
	}
	// n/d = (q + r/d)·2^-k with q = ⌊n·2^k/d⌋ in [2^55, 2^57): 56 or 57 bits, 3 or 4 more than
	// a float64 mantissa holds. Setting q's lowest bit when r ≠ 0 (a sticky bit) keeps every
	// rounding decision the exact value would get: that bit lies below the rounding bit, it
	// only makes the discarded part non-zero, and an exact half stays impossible. The
	// conversion then rounds once, to nearest even (Go spec), and Ldexp scales exactly: the
	// result is far from the float64 limits.
	k := 56 + bits.Len64(d) - bits.Len64(n) // n = 0 gives q = r = 0
	if k < 0 {
		return 0, false
	}
	var hi, lo uint64 // n·2^k
	if k < 64 {
		hi, lo = n>>(64-k), n<<k
	} else {
		hi = n << (k - 64)
	}
	q, r := bits.Div64(hi, lo, d) // hi < d: the quotient is below 2^57
	if r != 0 {
		q |= 1
	}
	return math.Ldexp(float64(q), -k), true
}

// underPressureFixed is underPressureExact on integers.
func underPressureFixed(used, hard resource.Quantity, threshold *big.Rat) (pressure, ok bool) {
	tn, td, ok := ratUint64s(threshold)
	if !ok {
		return false, false
	}
	u, su, okU := fixedOf(used)
	h, sh, okH := fixedOf(hard)
	if !okU || !okH {
		return false, false
	}
	u, h, _, ok = sameScale(u, su, h, sh)
	if !ok {
		return false, false
	}
	// used×100 ≥ threshold×hard ⇔ used·100·td ≥ tn·hard.
	lhs, ok := mul64(u, 100).mul(td)
	if !ok {
		return false, false
	}
	return lhs.cmp(mul64(tn, h)) >= 0, true
}

// percentFixed is percent on integers, for used = u·10^-su and hard = h·10^-sh.
func percentFixed(u uint64, su int, h uint64, sh int) (float64, bool) {
	u, h, _, ok := sameScale(u, su, h, sh)
	if !ok {
		return 0, false
	}
	if h == 0 {
		return 0, true
	}
	u100, ok := scaled64(u, 2)
	if !ok {
		return 0, false
	}
	return quoFloat(u100, h)
}

// thresholdRaiseFixed is thresholdRaiseExact on integers.
func thresholdRaiseFixed(hard, used resource.Quantity, increment *big.Rat, name corev1.ResourceName) (resource.Quantity, float64, bool) {
	h, sh, ok := fixedOf(hard)
	if !ok {
		return resource.Quantity{}, 0, false
	}
	in, id, ok := ratUint64s(increment)
	if !ok {
		return resource.Quantity{}, 0, false
	}
	sum, carry := bits.Add64(id, in, 0)
	if carry != 0 {
		return resource.Quantity{}, 0, false
	}
	// exact = hard·(1+in/id) = h·(id+in) / (id·10^sh).
	rec, _, ok := roundUpFixed(mul64(h, sum), id, sh, h, sh, hard, name)
	if !ok {
		return resource.Quantity{}, 0, false
	}
	u, su, ok := fixedOf(used)
	if !ok {
		return resource.Quantity{}, 0, false
	}
	pct, ok := percentFixed(u, su, h, sh)
	if !ok {
		return resource.Quantity{}, 0, false
	}
	return rec, pct, true
}

// roundUpRat is RoundUp on integers, for an exact value n/d with uint64 n and d.
func roundUpRat(exact *big.Rat, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, roundUnit, bool) {
	n, d, ok := ratUint64s(exact)
	if !ok {
		return resource.Quantity{}, roundUnit{}, false
	}
	c, cs, ok := fixedOf(current)
	if !ok {
		return resource.Quantity{}, roundUnit{}, false
	}
	return roundUpFixed(u128{0, n}, d, 0, c, cs, current, name)
}

// decimalScale is the scale a value needs to hold whole multiples of u.
func decimalScale(u roundUnit) int {
	if !u.binary && u.exp < 0 {
		return -u.exp
	}
	return 0
}

// unitFixed returns u's value at scale s: u·10^s.
func unitFixed(u roundUnit, s int) (uint64, bool) {
	if u.binary {
		hi, lo := bits.Mul64(1<<uint(u.exp), pow10[s])
		return lo, hi == 0
	}
	return scaled64(1, u.exp+s)
}

// roundUpFixed is roundUpExact on integers, step for step. The exact value is xn/(xd·10^xs),
// current is c·10^-cs and must be the value of current. It reports ok=false whenever the
// exact path could fail, so it never returns an error of its own.
func roundUpFixed(xn u128, xd uint64, xs int, c uint64, cs int, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, roundUnit, bool) {
	var fail resource.Quantity
	if xd == 0 || xs > maxFixedScale || cs > maxFixedScale {
		return fail, roundUnit{}, false
	}
	unit := roundUnitOf(current)
	finer := unit.smaller()
	// One scale for everything: exact, current, and both candidate steps are whole numbers at s.
	s := max(xs, cs, decimalScale(finer))
	x, okX := scaled(xn, s-xs)           // exact = x/xd
	cur, okC := scaled(u128{0, c}, s-cs) // current = cur
	unitV, okU := unitFixed(unit, s)
	if !okX || !okC || !okU {
		return fail, roundUnit{}, false
	}

	// The target is max(exact, current); below 10 units the step is the finer unit.
	curXd, ok := cur.mul(xd)
	if !ok {
		return fail, roundUnit{}, false
	}
	tenUnits := mul64(unitV, 10)
	var small bool
	if curXd.cmp(x) > 0 {
		small = cur.cmp(tenUnits) < 0
	} else {
		tenUnitsXd, ok := tenUnits.mul(xd)
		if !ok {
			return fail, roundUnit{}, false
		}
		small = x.cmp(tenUnitsXd) < 0
	}
	step := unit
	if small {
		step = finer
	}
	if step.exp < 0 && isIntegerResource(name) {
		step = roundBaseUnit
	}
	stepV, ok := unitFixed(step, s)
	if !ok {
		return fail, roundUnit{}, false
	}

	// n = ⌈exact/step⌉ = ⌈⌈x/xd⌉/stepV⌉.
	q, ok := x.ceilDiv(xd)
	if !ok {
		return fail, roundUnit{}, false
	}
	n, ok := q.ceilDiv(stepV)
	if !ok {
		return fail, roundUnit{}, false
	}
	want, ok := n.mul(stepV)
	if !ok {
		return fail, roundUnit{}, false
	}
	if want.cmp(cur) <= 0 {
		n, _ = cur.divMod(stepV)
		if n, ok = n.inc(); !ok {
			return fail, roundUnit{}, false
		}
		if want, ok = n.mul(stepV); !ok {
			return fail, roundUnit{}, false
		}
	}
	// Too large (which also covers exact or current too large): the exact path has the error.
	if want.cmp(mul64(math.MaxInt64, pow10[s])) > 0 || n.hi != 0 {
		return fail, roundUnit{}, false
	}

	out, err := resource.ParseQuantity(strconv.FormatUint(n.lo, 10) + step.suffix)
	if err != nil {
		return fail, roundUnit{}, false
	}
	// Defensive, as in the exact path: ParseQuantity rounds and caps silently.
	o, os, ok := fixedOf(out)
	if !ok || os > s {
		return fail, roundUnit{}, false
	}
	if o128, ok := scaled(u128{0, o}, s-os); !ok || o128 != want {
		return fail, roundUnit{}, false
	}
	return out, step, true
}
