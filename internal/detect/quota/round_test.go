package quota

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestRoundUp(t *testing.T) {
	tests := []struct {
		name    corev1.ResourceName
		current string
		exact   string // big.Rat literal
		want    string // exact String() of the result
		wantErr string
	}{
		// The examples of the design.
		{name: "pods", current: "10", exact: "12", want: "12"},
		{name: "requests.cpu", current: "4", exact: "4.8", want: "4800m"},
		{name: "requests.memory", current: "10Gi", exact: "12884901888", want: "12Gi"},
		{name: "requests.memory", current: "1Gi", exact: "1288490188.8", want: "1229Mi"},
		{name: "requests.cpu", current: "500m", exact: "0.6", want: "600m"},
		{name: "requests.cpu", current: "10", exact: "10.0001", want: "11"},
		{name: "count/pods", current: "3", exact: "3.6", want: "4"},
		{name: "requests.storage", current: "100G", exact: "120000000000", want: "120G"},
		{name: "requests.memory", current: "20Gi", exact: "25769803776", want: "24Gi"},
		{name: "requests.cpu", current: "1", exact: "1.2", want: "1200m"},

		// The unit ladder.
		{name: "requests.memory", current: "2Gi", exact: "2684354560", want: "2560Mi"},      // 2.5Gi
		{name: "requests.memory", current: "1Mi", exact: "1258291.2", want: "1229Ki"},       // 1.2Mi
		{name: "requests.memory", current: "1Ki", exact: "1536", want: "1536"},              // Ki → bytes
		{name: "requests.memory", current: "512Mi", exact: "644245094.4", want: "615Mi"},    // 614.4Mi
		{name: "requests.memory", current: "1Ti", exact: "1319413953331.2", want: "1229Gi"}, // 1.2Ti
		{name: "requests.memory", current: "1Ei", exact: "1383505805528216371.2", want: "1229Pi"},
		{name: "requests.storage", current: "1G", exact: "1200000000.5", want: "1201M"},
		{name: "requests.storage", current: "1T", exact: "1.5e12", want: "1500G"},
		{name: "requests.storage", current: "5P", exact: "6e15", want: "6P"},
		{name: "requests.storage", current: "1E", exact: "1.2e18", want: "1200P"},
		{name: "requests.memory", current: "1k", exact: "1200", want: "1200"},
		{name: "requests.memory", current: "1000", exact: "1200", want: "1200"}, // 1000 prints as 1k
		{name: "requests.cpu", current: "5m", exact: "0.0055", want: "5500u"},
		{name: "requests.cpu", current: "5u", exact: "0.0000055", want: "5500n"},
		{name: "requests.cpu", current: "5n", exact: "0.0000000055", want: "6n"}, // n stays n
		{name: "requests.cpu", current: "1e3", exact: "1200", want: "1200"},      // exponent form = base unit
		{name: "requests.cpu", current: "1e3", exact: "5.5", want: "1001"},       // ≤ current: next step above it
		{name: "requests.cpu", current: "1.5", exact: "1.8", want: "1800m"},      // 1.5 prints as 1500m
		{name: "requests.cpu", current: "0", exact: "0.5", want: "500m"},
		{name: "requests.cpu", current: "0", exact: "0", want: "1m"},
		{name: "requests.cpu", current: "100", exact: "100.5", want: "101"},
		{name: "requests.cpu", current: "100", exact: "120", want: "120"},

		// Integer resources never go below whole units.
		{name: "pods", current: "10", exact: "10.5", want: "11"},
		{name: "pods", current: "3", exact: "3.2", want: "4"},
		{name: "pods", current: "0", exact: "0", want: "1"},
		{name: "services.loadbalancers", current: "2", exact: "2.4", want: "3"},
		{name: "count/deployments.apps", current: "1k", exact: "1200", want: "1200"},
		{name: "count/deployments.apps", current: "20k", exact: "24000", want: "24k"},
		{name: "gold.storageclass.storage.k8s.io/persistentvolumeclaims", current: "5", exact: "6.5", want: "7"},
		{name: "requests.nvidia.com/gpu", current: "4", exact: "4.8", want: "5"},
		{name: "nvidia.com/gpu", current: "1", exact: "1.01", want: "2"},
		{name: "pods", current: "500m", exact: "0.6", want: "1"},

		// Never ≤ current.
		{name: "requests.cpu", current: "10", exact: "10", want: "11"},
		{name: "requests.cpu", current: "10", exact: "9", want: "11"},
		{name: "requests.cpu", current: "4", exact: "3", want: "4001m"},
		{name: "requests.memory", current: "1Gi", exact: "1073741824", want: "1025Mi"},
		{name: "requests.cpu", current: "1500m", exact: "1.4", want: "1501m"},
		{name: "requests.cpu", current: "-5", exact: "0", want: "0"},

		// Limits.
		{name: "requests.memory", current: "4Ei", exact: "8646911284551352320", want: "7680Pi"}, // 7.5Ei
		{name: "requests.storage", current: "9E", exact: "9.2e18", want: "9200P"},
		{name: "requests.cpu", current: "9223372036854775806", exact: "9223372036854775807", want: "9223372036854775807"},
		{name: "requests.memory", current: "4Ei", exact: "9223372036854775808", wantErr: "recommended value 9.223e+18 is too large for a Kubernetes quantity"},
		{name: "requests.cpu", current: "9223372036854775807", exact: "9223372036854775807", wantErr: "recommended value above 9.223e+18 is too large"},
		{name: "requests.memory", current: "8Ei", exact: "1", wantErr: "is too large for a Kubernetes quantity"}, // ParseQuantity caps 8Ei at MaxInt64
		{name: "requests.cpu", current: "9E", exact: "9.3e18", wantErr: "recommended value 9.3e+18 is too large"},
		{name: "requests.cpu", current: "1e30", exact: "2e30", wantErr: "is too large"},
		{name: "requests.cpu", current: "1e2000000000", exact: "1", wantErr: "recommended value above 1e+1024 is too large"},
		{name: "requests.cpu", current: "1", exact: "1e400", wantErr: "recommended value 1e+400 is too large"},
		{name: "requests.cpu", current: "9E", exact: "9223372036854775807.5", wantErr: "is too large"},
		{name: "requests.cpu", current: "1", exact: "-1", wantErr: "recommended value -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(string(tt.name)+"/"+tt.current+"/"+tt.exact, func(t *testing.T) {
			exact := mustRat(tt.exact)
			current := resource.MustParse(tt.current)
			got, err := RoundUp(exact, current, tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %s, %v; want error containing %q", got.String(), err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if s := got.String(); s != tt.want {
				t.Fatalf("RoundUp(%s, %s) = %s, want %s", tt.exact, tt.current, s, tt.want)
			}
			checkRounded(t, exact, current, got)
		})
	}
}

// checkRounded checks the properties every RoundUp result has.
func checkRounded(t *testing.T, exact *big.Rat, current, got resource.Quantity) {
	t.Helper()
	if got.Cmp(current) <= 0 {
		t.Fatalf("result %s is not above current %s", got.String(), current.String())
	}
	if RatOf(got).Cmp(exact) < 0 {
		t.Fatalf("result %s is below exact %s", got.String(), exact.RatString())
	}
	back, err := resource.ParseQuantity(got.String())
	if err != nil || back.Cmp(got) != 0 || RatOf(back).Cmp(RatOf(got)) != 0 {
		t.Fatalf("result %s does not re-parse: %s, %v", got.String(), back.String(), err)
	}
}

func TestRoundUpNil(t *testing.T) {
	if _, err := RoundUp(nil, resource.MustParse("1"), "cpu"); err == nil {
		t.Fatal("want an error for a nil exact value")
	}
}

func TestRoundUpDoesNotModifyArguments(t *testing.T) {
	exact := big.NewRat(48, 10)
	current := resource.MustParse("4")
	if _, err := RoundUp(exact, current, "cpu"); err != nil {
		t.Fatal(err)
	}
	if exact.Cmp(big.NewRat(24, 5)) != 0 || current.String() != "4" {
		t.Fatalf("arguments changed: %v, %s", exact, current.String())
	}
}

func TestRoundUpTooLargeIsFast(t *testing.T) {
	start := time.Now()
	for _, c := range []string{"1e2000000000", "9" + strings.Repeat("9", 60)} {
		if _, err := RoundUp(big.NewRat(1, 1), resource.MustParse(c), "cpu"); !errors.Is(err, errRoundTooLarge) {
			t.Fatalf("current %s: err = %v, want too large", c, err)
		}
	}
	huge := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 1<<20))
	if _, err := RoundUp(huge, resource.MustParse("1"), "cpu"); !errors.Is(err, errRoundTooLarge) {
		t.Fatalf("err = %v, want too large", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestRatOf(t *testing.T) {
	maxExp := new(big.Int).Exp(big.NewInt(10), big.NewInt(ratOfMaxExponent), nil)
	tests := []struct {
		in   string
		want *big.Rat
	}{
		{"0", big.NewRat(0, 1)},
		{"1", big.NewRat(1, 1)},
		{"-2", big.NewRat(-2, 1)},
		{"1.5", big.NewRat(3, 2)},
		{"4800m", big.NewRat(24, 5)},
		{"1n", big.NewRat(1, 1000000000)},
		{"0.1n", big.NewRat(1, 1000000000)}, // ParseQuantity rounds up to 1n
		{"1229Mi", big.NewRat(1229<<20, 1)},
		{"1.5Gi", big.NewRat(3<<29, 1)},
		{"8Ei", big.NewRat(math.MaxInt64, 1)}, // ParseQuantity caps binary SI there
		{"9E", new(big.Rat).SetInt(new(big.Int).Mul(big.NewInt(9), big.NewInt(1e18)))},
		{"1e3", big.NewRat(1000, 1)},
		{"12e-1", big.NewRat(6, 5)},
		{"123456789012345678901234567890", mustRat("123456789012345678901234567890")},
		{"1e1024", new(big.Rat).SetInt(maxExp)},
		{"1e2000000000", new(big.Rat).SetInt(maxExp)},
		{"-1e2000000000", new(big.Rat).Neg(new(big.Rat).SetInt(maxExp))},
		{"0e2000000000", big.NewRat(0, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := RatOf(resource.MustParse(tt.in)); got.Cmp(tt.want) != 0 {
				t.Fatalf("RatOf(%s) = %v, want %v", tt.in, got.RatString(), tt.want.RatString())
			}
		})
	}
	t.Run("zero value", func(t *testing.T) {
		if got := RatOf(resource.Quantity{}); got.Sign() != 0 {
			t.Fatalf("RatOf(Quantity{}) = %v", got)
		}
	})
	t.Run("does not modify the quantity", func(t *testing.T) {
		q := resource.MustParse("1500m")
		_ = RatOf(q)
		if q.String() != "1500m" {
			t.Fatalf("quantity changed to %s", q.String())
		}
	})
}

func TestIsCountResource(t *testing.T) {
	tests := map[corev1.ResourceName]bool{
		"pods":                      true,
		"services":                  true,
		"services.loadbalancers":    true,
		"services.nodeports":        true,
		"secrets":                   true,
		"configmaps":                true,
		"persistentvolumeclaims":    true,
		"replicationcontrollers":    true,
		"resourcequotas":            true,
		"count/pods":                true,
		"count/deployments.apps":    true,
		"count/widgets.example.com": true,
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims": true,
		"gold.storageclass.storage.k8s.io/requests.storage":       false,
		"requests.cpu":            false,
		"cpu":                     false,
		"limits.memory":           false,
		"requests.storage":        false,
		"ephemeral-storage":       false,
		"requests.nvidia.com/gpu": false, // whole units too, but not a count (see isIntegerResource)
		"hugepages-2Mi":           false,
		"podsx":                   false,
		"":                        false,
	}
	for name, want := range tests {
		t.Run(string(name), func(t *testing.T) {
			if got := IsCountResource(name); got != want {
				t.Fatalf("IsCountResource(%q) = %v, want %v", name, got, want)
			}
		})
	}
}

func TestIsIntegerResource(t *testing.T) {
	tests := map[corev1.ResourceName]bool{
		"pods":                             true,
		"count/pods":                       true,
		"requests.nvidia.com/gpu":          true,
		"nvidia.com/gpu":                   true,
		"limits.example.com/foo":           true,
		"requests.cpu":                     false,
		"requests.memory":                  false,
		"requests.hugepages-2Mi":           false,
		"requests.kubernetes.io/something": false,
		"gold.storageclass.storage.k8s.io/requests.storage": false,
	}
	for name, want := range tests {
		t.Run(string(name), func(t *testing.T) {
			if got := isIntegerResource(name); got != want {
				t.Fatalf("isIntegerResource(%q) = %v, want %v", name, got, want)
			}
		})
	}
}

// FuzzRoundUp checks RoundUp's contract for arbitrary exact values and current quantities:
// no panic; on success the result is above current, at least exact, less than one step above
// max(exact, current), integral for integer resources, and re-parses to itself; the only
// error for valid input is "too large", and only near math.MaxInt64.
func FuzzRoundUp(f *testing.F) {
	f.Add(uint64(48), uint64(10), uint8(0), "4", "requests.cpu")
	f.Add(uint64(12), uint64(10), uint8(30), "1Gi", "requests.memory")
	f.Add(uint64(36), uint64(10), uint8(0), "3", "count/pods")
	f.Add(uint64(100001), uint64(10000), uint8(0), "10", "requests.cpu")
	f.Add(uint64(math.MaxUint64), uint64(1), uint8(63), "9223372036854775807", "pods")
	f.Add(uint64(1), uint64(1), uint8(0), "8Ei", "requests.memory")
	f.Add(uint64(15), uint64(2), uint8(60), "4Ei", "requests.memory")
	f.Add(uint64(0), uint64(1), uint8(0), "0", "requests.nvidia.com/gpu")
	f.Add(uint64(55), uint64(10), uint8(0), "5n", "cpu")
	f.Add(uint64(12), uint64(1), uint8(0), "1e1", "cpu")
	f.Fuzz(func(t *testing.T, num, den uint64, shift uint8, cur, name string) {
		if den == 0 {
			return
		}
		// ParseQuantity itself takes minutes for "1e-2000000000"; that is not RoundUp's input.
		if len(cur) > evMaxQuantity || !evExponentOK(cur) {
			return
		}
		current, err := resource.ParseQuantity(cur)
		if err != nil {
			return
		}
		exact := new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))
		exact.Mul(exact, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(shift%80))))
		rn := corev1.ResourceName(name)

		got, step, err := roundUp(exact, current, rn)
		curR := RatOf(current)
		limit := new(big.Rat).SetInt64(math.MaxInt64)
		if err != nil {
			if !errors.Is(err, errRoundTooLarge) {
				t.Fatalf("RoundUp(%s, %s): unexpected error %v", exact.RatString(), cur, err)
			}
			// Too large only if even the smallest candidate, one nano above max(exact, current), is.
			floor := new(big.Rat).Set(exact)
			if curR.Cmp(floor) >= 0 {
				floor.Add(curR, big.NewRat(1, 1e9))
			}
			if floor.Cmp(new(big.Rat).Sub(limit, big.NewRat(1<<61, 1))) < 0 {
				t.Fatalf("RoundUp(%s, %s): %v, but the value is far from the limit", exact.RatString(), cur, err)
			}
			return
		}
		gotR := RatOf(got)
		if got.Cmp(current) <= 0 || gotR.Cmp(curR) <= 0 {
			t.Fatalf("RoundUp(%s, %s) = %s, not above current", exact.RatString(), cur, got.String())
		}
		if gotR.Cmp(exact) < 0 {
			t.Fatalf("RoundUp(%s, %s) = %s, below exact", exact.RatString(), cur, got.String())
		}
		if gotR.Cmp(limit) > 0 {
			t.Fatalf("RoundUp(%s, %s) = %s, beyond MaxInt64", exact.RatString(), cur, got.String())
		}
		// Less than one step above exact when rounding exact; at most one step above current when
		// stepping over it.
		over := new(big.Rat).Sub(gotR, exact)
		if exact.Cmp(curR) > 0 {
			if over.Cmp(step) >= 0 {
				t.Fatalf("RoundUp(%s, %s) = %s, %s above exact with step %s", exact.RatString(), cur, got.String(), over.RatString(), step.RatString())
			}
		} else if new(big.Rat).Sub(gotR, curR).Cmp(step) > 0 {
			t.Fatalf("RoundUp(%s, %s) = %s, more than step %s above current", exact.RatString(), cur, got.String(), step.RatString())
		}
		if q := new(big.Rat).Quo(gotR, step); !q.IsInt() {
			t.Fatalf("RoundUp(%s, %s) = %s, not a multiple of step %s", exact.RatString(), cur, got.String(), step.RatString())
		}
		if isIntegerResource(rn) && !gotR.IsInt() {
			t.Fatalf("RoundUp(%s, %s, %s) = %s, not whole", exact.RatString(), cur, name, got.String())
		}
		back, err := resource.ParseQuantity(got.String())
		if err != nil || RatOf(back).Cmp(gotR) != 0 {
			t.Fatalf("RoundUp(%s, %s) = %s, which re-parses to %s, %v", exact.RatString(), cur, got.String(), back.String(), err)
		}
	})
}
