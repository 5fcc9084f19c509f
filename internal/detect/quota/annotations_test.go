package quota

import (
	"errors"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

func mustRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad rat " + s)
	}
	return r
}

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		in      string
		want    string // big.Rat literal; "" when an error is expected
		wantErr string
	}{
		{in: "90", want: "90"},
		{in: "90%", want: "90"},
		{in: " 90 % ", want: "90"},
		{in: "87.5", want: "175/2"},
		{in: "87.50%", want: "175/2"},
		{in: "0", want: "0"},
		{in: "-0", want: "0"},
		{in: "0.0", want: "0"},
		{in: "100", want: "100"},
		{in: "100.000", want: "100"},
		{in: "0100", want: "100"},
		{in: ".5", want: "1/2"},
		{in: "5.", want: "5"},
		{in: "+90", want: "90"},
		{in: "\t75\n", want: "75"},
		{in: "50." + strings.Repeat("0", 1000), want: "50"},
		{in: strings.Repeat("0", 100000) + "42", want: "42"},
		{in: "0.00000000000000000000000000000001", want: "1/100000000000000000000000000000000"},
		{in: "", wantErr: "not a number"},
		{in: "   ", wantErr: "not a number"},
		{in: "%", wantErr: "not a number"},
		{in: "abc", wantErr: "not a number"},
		{in: "90%%", wantErr: "not a number"},
		{in: "9 0", wantErr: "not a number"},
		{in: ".", wantErr: "not a number"},
		{in: "1.2.3", wantErr: "not a number"},
		{in: "+-5", wantErr: "not a number"},
		{in: "1e2", wantErr: "not a number"},
		{in: "0x10", wantErr: "not a number"},
		{in: "3/4", wantErr: "not a number"},
		{in: "1_0", wantErr: "not a number"},
		{in: "٩٠", wantErr: "not a number"}, // Arabic-Indic digits
		{in: "100.0001", wantErr: "must be between 0 and 100"},
		{in: "101%", wantErr: "must be between 0 and 100"},
		{in: "-5", wantErr: "must be between 0 and 100"},
		{in: "-0.001", wantErr: "must be between 0 and 100"},
		{in: "99999999999999999999999", wantErr: "must be between 0 and 100"},
		{in: "-" + strings.Repeat("9", 100000), wantErr: "must be between 0 and 100"},
		{in: "0.000000000000000000000000000000001", wantErr: "has more than 32 decimal places"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(clipValue(tt.in, 20)), func(t *testing.T) {
			got, err := ParseThreshold(tt.in)
			checkRatResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseIncrement(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "10%", want: "1/10"},
		{in: "0.1", want: "1/10"},
		{in: "1.5", want: "3/2"},
		{in: "150%", want: "3/2"},
		{in: "20%", want: "1/5"},
		{in: " 12.5 % ", want: "1/8"},
		{in: "0.2", want: "1/5"},
		{in: "1", want: "1"},
		{in: "10", want: "10"},
		{in: "1000%", want: "10"},
		{in: "0.001%", want: "1/100000"},
		{in: "0", wantErr: "must be greater than 0"},
		{in: "0%", wantErr: "must be greater than 0"},
		{in: "-10%", wantErr: "must be greater than 0"},
		{in: "-" + strings.Repeat("9", 10), wantErr: "must be greater than 0"},
		{in: "10.01", wantErr: "must be at most 1000% (a value without % is a fraction: 0.2 means 20%)"},
		{in: "1000.1%", wantErr: "must be at most 1000%"},
		{in: "20", wantErr: "a value without % is a fraction"}, // the typical mistake for 20%
		{in: "99999999%", wantErr: "must be at most 1000%"},
		{in: "abc", wantErr: "not a number"},
		{in: "", wantErr: "not a number"},
		{in: "20 percent", wantErr: "not a number"},
		{in: "0." + strings.Repeat("1", 33), wantErr: "has more than 32 decimal places"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(clipValue(tt.in, 20)), func(t *testing.T) {
			got, err := ParseIncrement(tt.in)
			checkRatResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkRatResult(t *testing.T, got *big.Rat, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("got %v, want error containing %q", got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q, want it to contain %q", err, wantErr)
		}
		if got != nil {
			t.Errorf("got %v with the error, want nil", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error %v", err)
	}
	if got.Cmp(mustRat(want)) != 0 {
		t.Fatalf("got %v, want %v", got.RatString(), want)
	}
}

func TestParseCooldownMinutes(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "60", want: time.Hour},
		{in: " 15 ", want: 15 * time.Minute},
		{in: "0090", want: 90 * time.Minute},
		{in: "525600", want: 525600 * time.Minute},
		{in: "525601", wantErr: "must be between 0 and 525600 minutes (365d)"},
		{in: "-1", wantErr: "must be between 0 and 525600 minutes (365d)"},
		{in: "99999999999999999999999", wantErr: "must be between 0 and 525600 minutes (365d)"},
		{in: "1.5", wantErr: "not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d)"},
		{in: "60m", want: time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1d", want: 24 * time.Hour},
		{in: "365d", want: 525600 * time.Minute},
		{in: "366d", wantErr: "must be between 0 and 525600 minutes (365d)"},
		{in: "never", wantErr: "not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d) (never is not accepted: a cooldown needs an end)"},
		{in: "", wantErr: "not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d)"},
		{in: "0x10", wantErr: "not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d)"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, err := ParseCooldownMinutes(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestAlias(t *testing.T) {
	tests := map[corev1.ResourceName]string{
		"requests.cpu":            "cpu",
		"limits.cpu":              "cpu",
		"limits.memory":           "memory",
		"cpu":                     "cpu",
		"memory":                  "memory",
		"pods":                    "pods",
		"count/pods":              "count-pods",
		"count/deployments.apps":  "count-deployments.apps",
		"requests.nvidia.com/gpu": "nvidia.com-gpu",
		"requests.storage":        "storage",
		"requests.hugepages-2Mi":  "hugepages-2Mi",
		"services.loadbalancers":  "services.loadbalancers",
		"limits.requests.cpu":     "requests.cpu", // only one prefix is a quota prefix
		"gold.storageclass.storage.k8s.io/requests.storage": "gold.storageclass.storage.k8s.io-requests.storage",
		"": "",
	}
	for in, want := range tests {
		t.Run(string(in), func(t *testing.T) {
			if got := Alias(in); got != want {
				t.Fatalf("Alias(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

func annTestDefaults() Settings {
	return Settings{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)}
}

// policyEffective describes a Policy's Settings for one resource in percent, for compact tables.
type policyEffective struct{ threshold, increment string }

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		name         string
		annotations  map[string]string
		wantEnabled  bool
		wantCooldown time.Duration
		wantSettings map[corev1.ResourceName]policyEffective // resource → threshold %, increment %
		wantPerRes   int                                     // len(PerResource)
		wantProblems []string                                // AnnotationProblem.Error(), in order
	}{
		{
			name:         "nil annotations use the defaults",
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"80", "20"}},
		},
		{
			name:         "foreign annotations are ignored",
			annotations:  map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "resizer.io": "x", "other.io/threshold": "5"},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"80", "20"}},
		},
		{
			name:         "opt out",
			annotations:  map[string]string{AnnotationEnabled: "false"},
			wantEnabled:  false,
			wantCooldown: time.Hour,
		},
		{
			name:         "opt out is case-insensitive and trimmed",
			annotations:  map[string]string{AnnotationEnabled: " FALSE "},
			wantEnabled:  false,
			wantCooldown: time.Hour,
		},
		{
			name:         "explicit true",
			annotations:  map[string]string{AnnotationEnabled: "True"},
			wantEnabled:  true,
			wantCooldown: time.Hour,
		},
		{
			name:         "unparseable enabled stays enabled",
			annotations:  map[string]string{AnnotationEnabled: "no"},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantProblems: []string{`annotation resizer.io/enabled="no": must be "true" or "false"; using true`},
		},
		{
			name: "namespace-wide settings",
			annotations: map[string]string{
				AnnotationThreshold: "90%", AnnotationIncrement: "50%", AnnotationCooldownMinutes: "30",
			},
			wantEnabled:  true,
			wantCooldown: 30 * time.Minute,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"90", "50"}, "pods": {"90", "50"}},
		},
		{
			name: "per-resource settings override namespace-wide ones",
			annotations: map[string]string{
				AnnotationThreshold:                   "90",
				"resizer.io/cpu-threshold":            "70",
				"resizer.io/memory-increment":         "0.5",
				"resizer.io/count-pods-threshold":     "95.5%",
				"resizer.io/nvidia.com-gpu-increment": "100%",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantPerRes:   4,
			wantSettings: map[corev1.ResourceName]policyEffective{
				"requests.cpu":            {"70", "20"},
				"limits.cpu":              {"70", "20"},
				"cpu":                     {"70", "20"},
				"requests.memory":         {"90", "50"},
				"limits.memory":           {"90", "50"},
				"count/pods":              {"95.5", "20"},
				"pods":                    {"90", "20"},
				"requests.nvidia.com/gpu": {"90", "100"},
				"requests.storage":        {"90", "20"},
			},
		},
		{
			name: "invalid per-resource value falls back to the namespace annotation",
			annotations: map[string]string{
				AnnotationThreshold:           "85",
				AnnotationIncrement:           "25%",
				"resizer.io/cpu-threshold":    "abc",
				"resizer.io/memory-increment": "0",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"85", "25"}, "requests.memory": {"85", "25"}},
			wantProblems: []string{
				`annotation resizer.io/cpu-threshold="abc": not a number; using 85%`,
				`annotation resizer.io/memory-increment="0": must be greater than 0; using 25%`,
			},
		},
		{
			name: "invalid namespace values fall back to the flags, and so do per-resource ones",
			annotations: map[string]string{
				AnnotationThreshold:         "150",
				AnnotationIncrement:         "20",
				AnnotationCooldownMinutes:   "1 h",
				"resizer.io/cpu-threshold":  "",
				"resizer.io/pods-increment": "5%",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantPerRes:   1,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"80", "20"}, "pods": {"80", "5"}},
			wantProblems: []string{
				`annotation resizer.io/cooldown-minutes="1 h": not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d); using 1h`,
				`annotation resizer.io/cpu-threshold="": not a number; using 80%`,
				`annotation resizer.io/increment="20": must be at most 1000% (a value without % is a fraction: 0.2 means 20%); using 20%`,
				`annotation resizer.io/threshold="150": must be between 0 and 100; using 80%`,
			},
		},
		{
			name: "unknown keys are typos",
			annotations: map[string]string{
				"resizer.io/cpu-treshold":         "90",
				"resizer.io/-threshold":           "90",
				"resizer.io/":                     "",
				"resizer.io/cpu-cooldown-minutes": "5",
				"resizer.io/Enabled":              "false",
				"resizer.io/thresholds":           "90",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantSettings: map[corev1.ResourceName]policyEffective{"requests.cpu": {"80", "20"}},
			wantProblems: []string{
				`annotation resizer.io/="": unknown annotation (typo?); ignored`,
				`annotation resizer.io/-threshold="90": unknown annotation (typo?); ignored`,
				`annotation resizer.io/Enabled="false": unknown annotation (typo?); ignored`,
				`annotation resizer.io/cpu-cooldown-minutes="5": unknown annotation (typo?); ignored`,
				`annotation resizer.io/cpu-treshold="90": unknown annotation (typo?); ignored`,
				`annotation resizer.io/thresholds="90": unknown annotation (typo?); ignored`,
			},
		},
		{
			name: "annotations of other features are known",
			annotations: map[string]string{
				AnnotationLastModified: "2026-01-02T03:04:05Z",
				AnnotationAutoMerge:    "TRUE",
				AnnotationGitPath:      "clusters/prod/quotas.yaml",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
		},
		{
			name: "annotations of other features are validated",
			annotations: map[string]string{
				AnnotationAutoMerge: "yes",
				AnnotationGitPath:   "  ",
			},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantProblems: []string{
				`annotation resizer.io/auto-merge="yes": must be "true" or "false"; ignored`,
				`annotation resizer.io/git-path="  ": must not be empty; ignored`,
			},
		},
		{
			name:         "hostile values are truncated",
			annotations:  map[string]string{"resizer.io/cpu-threshold": strings.Repeat("x", 100000)},
			wantEnabled:  true,
			wantCooldown: time.Hour,
			wantProblems: []string{`annotation resizer.io/cpu-threshold="` + strings.Repeat("x", 64) + `…": not a number; using 80%`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, problems := ParsePolicy(tt.annotations, annTestDefaults(), time.Hour)
			if p.Enabled != tt.wantEnabled {
				t.Errorf("Enabled = %v, want %v", p.Enabled, tt.wantEnabled)
			}
			if p.Cooldown != tt.wantCooldown {
				t.Errorf("Cooldown = %v, want %v", p.Cooldown, tt.wantCooldown)
			}
			if len(p.PerResource) != tt.wantPerRes {
				t.Errorf("PerResource = %v, want %d entries", p.PerResource, tt.wantPerRes)
			}
			if tt.wantPerRes == 0 && p.PerResource != nil {
				t.Errorf("PerResource allocated without overrides")
			}
			for res, want := range tt.wantSettings {
				s := p.Settings(res)
				got := policyEffective{FormatRat(s.Threshold), FormatRat(new(big.Rat).Mul(s.Increment, big.NewRat(100, 1)))}
				if got != want {
					t.Errorf("Settings(%s) = %+v, want %+v", res, got, want)
				}
			}
			var got []string
			for _, pr := range problems {
				got = append(got, pr.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.wantProblems, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantProblems, "\n"))
			}
		})
	}
}

func TestParsePolicyProblemFields(t *testing.T) {
	_, problems := ParsePolicy(map[string]string{"resizer.io/cpu-threshold": "abc"}, annTestDefaults(), time.Hour)
	want := AnnotationProblem{Key: "resizer.io/cpu-threshold", Value: "abc", Problem: "not a number", Fallback: "80%"}
	if len(problems) != 1 || problems[0] != want {
		t.Fatalf("problems = %+v, want [%+v]", problems, want)
	}
	if got := problems[0].Error(); got != `annotation resizer.io/cpu-threshold="abc": not a number; using 80%` {
		t.Fatalf("Error() = %s", got)
	}
}

func TestParsePolicyCooldownFallbackFormat(t *testing.T) {
	_, problems := ParsePolicy(map[string]string{AnnotationCooldownMinutes: "x"}, annTestDefaults(), 90*time.Second)
	if len(problems) != 1 || problems[0].Fallback != "1m30s" {
		t.Fatalf("problems = %+v, want fallback 1m30s", problems)
	}
}

func TestParsePolicyDoesNotShareDefaults(t *testing.T) {
	defaults := annTestDefaults()
	p, _ := ParsePolicy(nil, defaults, time.Hour)
	p.Namespace.Threshold.SetInt64(1)
	p.Namespace.Increment.SetInt64(1)
	if defaults.Threshold.Cmp(big.NewRat(80, 1)) != 0 || defaults.Increment.Cmp(big.NewRat(1, 5)) != 0 {
		t.Fatalf("mutating the policy changed the defaults to %v, %v", defaults.Threshold, defaults.Increment)
	}
	p, _ = ParsePolicy(nil, defaults, time.Hour)
	defaults.Threshold.SetInt64(2)
	if p.Namespace.Threshold.Cmp(big.NewRat(80, 1)) != 0 {
		t.Fatalf("mutating the defaults changed the policy to %v", p.Namespace.Threshold)
	}
}

func TestParsePolicyNilDefaults(t *testing.T) {
	// Defaults come from validated flags; nil ones must still not crash the parser.
	p, problems := ParsePolicy(map[string]string{AnnotationThreshold: "x", AnnotationIncrement: "y"}, Settings{}, 0)
	if p.Namespace.Threshold != nil || p.Namespace.Increment != nil || len(problems) != 2 {
		t.Fatalf("got %+v, %+v", p, problems)
	}
}

func TestParsePolicyAllocs(t *testing.T) {
	annotations := typicalNamespaceAnnotations()
	defaults := annTestDefaults()
	allocs := testing.AllocsPerRun(100, func() { ParsePolicy(annotations, defaults, time.Hour) })
	// Two copied big.Rats (struct + numerator + denominator words) and nothing else.
	if allocs > 6 {
		t.Fatalf("ParsePolicy allocates %v times for a namespace without resizer.io annotations", allocs)
	}
}

func typicalNamespaceAnnotations() map[string]string {
	return map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Namespace"}`,
		"openshift.io/sa.scc.mcs":                          "s0:c26,c5",
		"scheduler.alpha.kubernetes.io/node-selector":      "pool=general",
		"team": "payments",
	}
}

func BenchmarkParsePolicy(b *testing.B) {
	defaults := annTestDefaults()
	b.Run("no resizer annotations", func(b *testing.B) {
		annotations := typicalNamespaceAnnotations()
		b.ReportAllocs()
		for b.Loop() {
			ParsePolicy(annotations, defaults, time.Hour)
		}
	})
	b.Run("with overrides", func(b *testing.B) {
		annotations := typicalNamespaceAnnotations()
		annotations[AnnotationThreshold] = "90"
		annotations["resizer.io/cpu-threshold"] = "75%"
		annotations["resizer.io/memory-increment"] = "30%"
		b.ReportAllocs()
		for b.Loop() {
			ParsePolicy(annotations, defaults, time.Hour)
		}
	})
}

func TestAnnotationProblemError(t *testing.T) {
	tests := []struct {
		p    AnnotationProblem
		want string
	}{
		{AnnotationProblem{Key: "resizer.io/cpu-threshold", Value: "abc", Problem: "not a number", Fallback: "80%"},
			`annotation resizer.io/cpu-threshold="abc": not a number; using 80%`},
		{AnnotationProblem{Key: "resizer.io/cpu-treshold", Value: "90", Problem: "unknown annotation (typo?)", Fallback: FallbackIgnored},
			`annotation resizer.io/cpu-treshold="90": unknown annotation (typo?); ignored`},
		{AnnotationProblem{Key: "resizer.io/threshold", Value: "a\"b\n", Problem: "not a number", Fallback: "80%"},
			`annotation resizer.io/threshold="a\"b\n": not a number; using 80%`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			var err error = tt.p // AnnotationProblem is an error
			if got := err.Error(); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFormatRat(t *testing.T) {
	tests := []struct {
		in   *big.Rat
		want string
	}{
		{big.NewRat(80, 1), "80"},
		{big.NewRat(175, 2), "87.5"},
		{big.NewRat(1, 5), "0.2"},
		{big.NewRat(0, 1), "0"},
		{big.NewRat(-1, 2), "-0.5"},
		{big.NewRat(1000, 1), "1000"},
		{big.NewRat(1, 1024), "0.0009765625"},
		{mustRat("1/100000000000000000000000000000000"), "0.00000000000000000000000000000001"},
		{big.NewRat(1, 3), "0.333333333333"},
		{big.NewRat(2, 3), "0.666666666667"},
		{mustRat("-1/30000000000000"), "0"}, // rounds to -0
		{new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 70)), "0"},
		{nil, "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatRat(tt.in); got != tt.want {
				t.Fatalf("FormatRat(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestClipValue(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 64, "abc"},
		{strings.Repeat("a", 64), 64, strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), 64, strings.Repeat("a", 64) + "…"},
		{strings.Repeat("é", 64), 64, strings.Repeat("é", 64)}, // 128 bytes, 64 characters
		{strings.Repeat("é", 65), 64, strings.Repeat("é", 64) + "…"},
		{strings.Repeat("\xff", 70), 64, strings.Repeat("\xff", 64) + "…"},
		{"", 64, ""},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(clipValue(tt.in, 8)), func(t *testing.T) {
			if got := clipValue(tt.in, tt.n); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzParseValue checks the three value parsers: no panics, results within their bounds, and
// the human form used in messages parses back to the same value.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"90", "90%", " 90 % ", "87.5", "0.1", "1.5", "10%", "1000%", "60", "-5", "abc", "", "0.000000000000000000000000000000001", "525600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if th, err := ParseThreshold(s); err == nil {
			if th.Sign() < 0 || th.Cmp(big.NewRat(100, 1)) > 0 {
				t.Fatalf("ParseThreshold(%q) = %v, out of [0, 100]", s, th)
			}
			for _, form := range []string{FormatRat(th), FormatRat(th) + "%"} {
				back, err := ParseThreshold(form)
				if err != nil || back.Cmp(th) != 0 {
					t.Fatalf("ParseThreshold(%q) = %v, but %q parses to %v, %v", s, th, form, back, err)
				}
			}
		} else if th != nil {
			t.Fatalf("ParseThreshold(%q) returned a value with error %v", s, err)
		}

		if inc, err := ParseIncrement(s); err == nil {
			if inc.Sign() <= 0 || inc.Cmp(big.NewRat(10, 1)) > 0 {
				t.Fatalf("ParseIncrement(%q) = %v, out of (0, 10]", s, inc)
			}
			pct := formatIncrementPct(inc)
			if back, err := ParseIncrement(pct); err != nil || back.Cmp(inc) != 0 {
				t.Fatalf("ParseIncrement(%q) = %v, but %q parses to %v, %v", s, inc, pct, back, err)
			}
			// The fraction form can need two more decimal places than the parser takes.
			frac := FormatRat(inc)
			if back, err := ParseIncrement(frac); err != nil && !errors.Is(err, errAnnTooManyDecimals) || err == nil && back.Cmp(inc) != 0 {
				t.Fatalf("ParseIncrement(%q) = %v, but %q parses to %v, %v", s, inc, frac, back, err)
			}
		} else if inc != nil {
			t.Fatalf("ParseIncrement(%q) returned a value with error %v", s, err)
		}

		if d, err := ParseCooldownMinutes(s); err == nil {
			if d < 0 || d > MaxCooldownMinutes*time.Minute {
				t.Fatalf("ParseCooldownMinutes(%q) = %v, out of bounds", s, d)
			}
			if back, err := ParseCooldownMinutes(formatCooldown(d)); err != nil || back != d {
				t.Fatalf("ParseCooldownMinutes(%q) = %v does not round-trip: %v, %v", s, d, back, err)
			}
		}
	})
}

// FuzzParsePolicy feeds arbitrary keys and values through ParsePolicy: no panics, policyEffective
// settings within bounds, problems sorted and truncated, defaults untouched.
func FuzzParsePolicy(f *testing.F) {
	f.Add("resizer.io/cpu-threshold", "90", "85%", "0.3")
	f.Add("resizer.io/cpu-treshold", "90", "x", "")
	f.Add("resizer.io/memory-increment", "150%", "100", "10")
	f.Add("resizer.io/enabled", "false", "", "-1")
	f.Add("resizer.io/cooldown-minutes", "525601", "0", "1000%")
	f.Add("resizer.io/-increment", strings.Repeat("é", 70), "abc", "abc")
	f.Fuzz(func(t *testing.T, key, value, nsThreshold, nsIncrement string) {
		annotations := map[string]string{
			key:                 value,
			AnnotationThreshold: nsThreshold,
			AnnotationIncrement: nsIncrement,
			"unrelated":         "x",
		}
		defaults := annTestDefaults()
		p, problems := ParsePolicy(annotations, defaults, time.Hour)
		if defaults.Threshold.Cmp(big.NewRat(80, 1)) != 0 || defaults.Increment.Cmp(big.NewRat(1, 5)) != 0 {
			t.Fatalf("defaults changed")
		}
		if p.Namespace.Threshold == defaults.Threshold || p.Namespace.Increment == defaults.Increment {
			t.Fatalf("policy shares the defaults' numbers")
		}
		if !sort.SliceIsSorted(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key }) {
			t.Fatalf("problems not sorted: %+v", problems)
		}
		if len(problems) > len(annotations) {
			t.Fatalf("%d problems for %d annotations", len(problems), len(annotations))
		}
		for _, pr := range problems {
			if utf8.RuneCountInString(strings.TrimSuffix(pr.Value, "…")) > annMaxProblemValue {
				t.Fatalf("problem value not truncated: %d characters", utf8.RuneCountInString(pr.Value))
			}
			if pr.Problem == "" || pr.Fallback == "" || !strings.HasPrefix(pr.Key, AnnotationPrefix) {
				t.Fatalf("incomplete problem %+v", pr)
			}
		}
		check := func(res corev1.ResourceName) {
			s := p.Settings(res)
			if s.Threshold == nil || s.Threshold.Sign() < 0 || s.Threshold.Cmp(big.NewRat(100, 1)) > 0 {
				t.Fatalf("Settings(%s).Threshold = %v", res, s.Threshold)
			}
			if s.Increment == nil || s.Increment.Sign() <= 0 || s.Increment.Cmp(big.NewRat(10, 1)) > 0 {
				t.Fatalf("Settings(%s).Increment = %v", res, s.Increment)
			}
		}
		check("requests.cpu")
		for alias := range p.PerResource {
			check(corev1.ResourceName(alias))
			if _, ok := annotations[AnnotationPrefix+alias+annThresholdSuffix]; !ok {
				if _, ok := annotations[AnnotationPrefix+alias+annIncrementSuffix]; !ok {
					t.Fatalf("override for %q without an annotation", alias)
				}
			}
		}
		if p.Cooldown < 0 || p.Cooldown > MaxCooldownMinutes*time.Minute {
			t.Fatalf("Cooldown = %v", p.Cooldown)
		}
	})
}
