package quota

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// roundUnit is one step of the ladder RoundUp rounds on: 10^exp (decimal SI) or 2^exp
// (binary SI), printed with suffix.
type roundUnit struct {
	suffix string
	binary bool
	exp    int
}

// value is the unit as a number, e.g. 1/1000 for "m", 1048576 for "Mi".
func (u roundUnit) value() *big.Rat {
	if u.binary {
		return new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(u.exp)))
	}
	if u.exp < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-u.exp)), nil))
	}
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(u.exp)), nil))
}

// smaller is the next finer unit: Gi→Mi, Ki→bytes, G→M, k→base, base→m, m→u, u→n; n is the
// finest a Quantity can hold, so it stays n.
func (u roundUnit) smaller() roundUnit {
	switch {
	case u.binary && u.exp > 10:
		return roundBinaryUnits[u.exp/10-2]
	case u.binary: // Ki
		return roundBaseUnit
	case u.exp > -9:
		return roundDecimalUnits[(u.exp+9)/3-1]
	}
	return u
}

var (
	roundDecimalUnits = []roundUnit{{"n", false, -9}, {"u", false, -6}, {"m", false, -3}, {"", false, 0},
		{"k", false, 3}, {"M", false, 6}, {"G", false, 9}, {"T", false, 12}, {"P", false, 15}, {"E", false, 18}}
	roundBinaryUnits = []roundUnit{{"Ki", true, 10}, {"Mi", true, 20}, {"Gi", true, 30},
		{"Ti", true, 40}, {"Pi", true, 50}, {"Ei", true, 60}}
	roundBaseUnit = roundDecimalUnits[3]
)

// roundUnitOf returns the unit current is written in (the suffix of current.String(), which is the
// value as written when it came from the API). Exponent forms (1e3, 5E-2) count as the base
// unit: there is no human-friendly finer step for them.
func roundUnitOf(current resource.Quantity) roundUnit {
	s := current.String()
	suffix := strings.TrimLeft(s, "+-0123456789.")
	for _, u := range roundDecimalUnits {
		if u.suffix == suffix {
			return u
		}
	}
	for _, u := range roundBinaryUnits {
		if u.suffix == suffix {
			return u
		}
	}
	return roundBaseUnit
}

// maxRoundedValue is the largest value RoundUp returns: int64 in base units. ParseQuantity
// silently caps binary-SI quantities there, Quantity.Value() is exact only below it, and a
// quota beyond 9.2 EB (or 9.2·10^18 cores or objects) is a typo, not a plan.
var maxRoundedValue = new(big.Rat).SetInt64(math.MaxInt64)

// errRoundTooLarge is wrapped by RoundUp's error for results beyond maxRoundedValue.
var errRoundTooLarge = errors.New("is too large for a Kubernetes quantity")

// RoundUp turns an exact recommended value into a quantity that reads like a human wrote it.
//
// The value is expressed in the unit of current's suffix (10Gi → Gi, 500m → m, 4 → cores;
// exponent forms such as 1e3 count as the base unit).
// If it is at least 10 of that unit it is rounded up to a whole number of the unit (12Gi),
// otherwise to a whole number of the next finer unit (1.2Gi → 1229Mi, 4.8 → 4800m), so that
// rounding adds less than 10% and the result is written the way the quota already is. It is
// always ≥ exact and less than one step above it. Object counts and other integer resources
// (see isIntegerResource) never go below whole units. The result is always strictly greater
// than current: a recommendation that does not raise the quota is useless, so a rounded value
// ≤ current is replaced by the next step above current.
//
// It fails for a negative or nil exact and when the result would exceed math.MaxInt64 base
// units.
func RoundUp(exact *big.Rat, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, error) {
	if q, _, ok := roundUpRat(exact, current, name); ok {
		return q, nil
	}
	q, _, err := roundUpExact(exact, current, name)
	return q, err
}

// roundUp is RoundUp that also returns the step it rounded to (for tests).
func roundUp(exact *big.Rat, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, *big.Rat, error) {
	if q, step, ok := roundUpRat(exact, current, name); ok {
		return q, step.value(), nil
	}
	return roundUpExact(exact, current, name)
}

// roundUpExact is RoundUp in math/big arithmetic, the reference for the integer fast path
// (roundUpFixed). It also returns the step it rounded to.
func roundUpExact(exact *big.Rat, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, *big.Rat, error) {
	if exact == nil {
		return resource.Quantity{}, nil, errors.New("recommended value is missing")
	}
	if exact.Sign() < 0 {
		return resource.Quantity{}, nil, fmt.Errorf("recommended value %s is negative", roundApprox(exact))
	}
	cur := RatOf(current)
	// Checked before any arithmetic so that huge inputs cost nothing. The result must be
	// ≥ exact and > cur, so cur = max leaves no room either.
	if exact.Cmp(maxRoundedValue) > 0 {
		return resource.Quantity{}, nil, roundTooLarge(roundApprox(exact))
	}
	if cur.Cmp(maxRoundedValue) >= 0 {
		return resource.Quantity{}, nil, roundTooLarge("above " + roundApprox(cur))
	}

	// The precision follows from the value being rounded: exact, or current when exact does
	// not exceed it (a degenerate call; the result is then the next step above current, and
	// 10 → 11 reads better than 10 → 10001m).
	unit := roundUnitOf(current)
	target := exact
	if cur.Cmp(exact) > 0 {
		target = cur
	}
	step := unit
	if new(big.Rat).Quo(target, unit.value()).Cmp(big.NewRat(10, 1)) < 0 {
		step = unit.smaller()
	}
	if step.exp < 0 && isIntegerResource(name) {
		step = roundBaseUnit
	}
	stepV := step.value()

	n := ratCeil(exact, stepV)
	if new(big.Rat).Mul(new(big.Rat).SetInt(n), stepV).Cmp(cur) <= 0 {
		n = ratFloor(cur, stepV)
		n.Add(n, big.NewInt(1))
	}
	want := new(big.Rat).Mul(new(big.Rat).SetInt(n), stepV)
	if want.Cmp(maxRoundedValue) > 0 {
		return resource.Quantity{}, nil, roundTooLarge(roundApprox(want))
	}

	// Parse rather than construct: ParseQuantity keeps the string as written ("1229Mi",
	// "4800m") when it is canonical, and the value is then exactly what the API will store.
	out, err := resource.ParseQuantity(n.String() + step.suffix)
	if err != nil {
		return resource.Quantity{}, nil, fmt.Errorf("recommended value %s%s: %w", n, step.suffix, err)
	}
	if RatOf(out).Cmp(want) != 0 { // defensive: ParseQuantity rounds and caps silently
		return resource.Quantity{}, nil, fmt.Errorf("recommended value %s%s does not survive parsing (got %s)", n, step.suffix, out.String())
	}
	return out, stepV, nil
}

func roundTooLarge(value string) error {
	return fmt.Errorf("recommended value %s %w (at most %d)", value, errRoundTooLarge, int64(math.MaxInt64))
}

// roundApprox prints r with 4 significant digits, so that an error never carries a huge number.
func roundApprox(r *big.Rat) string {
	return new(big.Float).SetRat(r).Text('g', 4)
}

// ratCeil returns ⌈a/b⌉ for b > 0.
func ratCeil(a, b *big.Rat) *big.Int {
	f := ratFloor(new(big.Rat).Neg(a), b)
	return f.Neg(f)
}

// ratFloor returns ⌊a/b⌋ for b > 0.
func ratFloor(a, b *big.Rat) *big.Int {
	q := new(big.Rat).Quo(a, b)
	// big.Int.Div is Euclidean division: it rounds toward -∞ for a positive divisor.
	return new(big.Int).Div(q.Num(), q.Denom())
}

// countResourceNames are the object-count quota resources that have no "count/" prefix.
var countResourceNames = map[corev1.ResourceName]bool{
	corev1.ResourcePods:                   true,
	corev1.ResourceServices:               true,
	corev1.ResourceServicesLoadBalancers:  true,
	corev1.ResourceServicesNodePorts:      true,
	corev1.ResourceSecrets:                true,
	corev1.ResourceConfigMaps:             true,
	corev1.ResourcePersistentVolumeClaims: true,
	corev1.ResourceReplicationControllers: true,
	corev1.ResourceQuotas:                 true,
}

// storageClassResourceInfix marks per-storage-class quota resources,
// e.g. gold.storageclass.storage.k8s.io/requests.storage.
const storageClassResourceInfix = ".storageclass.storage.k8s.io/"

// IsCountResource reports whether a quota resource counts objects (pods, count/deployments.apps,
// gold.storageclass.storage.k8s.io/persistentvolumeclaims, …); counts are whole numbers.
func IsCountResource(name corev1.ResourceName) bool {
	s := string(name)
	if countResourceNames[name] || strings.HasPrefix(s, "count/") {
		return true
	}
	// Per-storage-class PVC counts are counts too.
	_, after, ok := strings.Cut(s, storageClassResourceInfix)
	return ok && after == string(corev1.ResourcePersistentVolumeClaims)
}

// isIntegerResource reports whether RoundUp must stay at whole units: object counts and
// extended resources (requests.nvidia.com/gpu), which pods can only request in whole units, so
// a quota of 4800m GPUs would be meaningless.
func isIntegerResource(name corev1.ResourceName) bool {
	if IsCountResource(name) {
		return true
	}
	s := strings.TrimPrefix(strings.TrimPrefix(string(name), "requests."), "limits.")
	// Native resources have no domain or a kubernetes.io one; storage-class resources carry
	// a domain but measure bytes.
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.Contains(s, storageClassResourceInfix)
}

// ratOfMaxExponent bounds the power of ten RatOf computes. ParseQuantity accepts "1e2000000000",
// whose exact value would need ~800 MB; such values are clamped (see RatOf).
const ratOfMaxExponent = 1024

// RatOf returns the exact value of a quantity. The one exception is a value ≥ 10^1024, which
// only an absurd exponent suffix (1e5000) can produce: it is clamped to ±10^1024 so that a
// hostile quota cannot make the controller compute a giant number. Every clamped value is far
// beyond what RoundUp accepts, so the result of a comparison with a sane value is unchanged.
func RatOf(q resource.Quantity) *big.Rat {
	d := q.AsDec()                                       // q is a copy; AsDec may convert it in place
	unscaled, scale := d.UnscaledBig(), int64(d.Scale()) // value = unscaled · 10^-scale
	if unscaled.Sign() == 0 {
		return new(big.Rat)
	}
	ten := big.NewInt(10)
	if scale >= 0 {
		// Dividing by 10^scale: cost is bounded by the size the quantity already has for all
		// values ParseQuantity produces (scale ≤ 9 for non-zero values).
		return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(ten, big.NewInt(scale), nil))
	}
	if -scale > ratOfMaxExponent {
		r := new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(ratOfMaxExponent), nil))
		if unscaled.Sign() < 0 {
			r.Neg(r)
		}
		return r
	}
	return new(big.Rat).SetInt(new(big.Int).Mul(unscaled, new(big.Int).Exp(ten, big.NewInt(-scale), nil)))
}
