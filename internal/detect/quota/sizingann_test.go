package quota

import (
	"math/big"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// sizingEffective describes the window settings of one resource, for compact tables.
type sizingEffective struct{ headroom, tolerance, min string }

func effectiveSizing(p Policy, res corev1.ResourceName) sizingEffective {
	s := p.Settings(res)
	e := sizingEffective{
		headroom:  FormatRat(new(big.Rat).Mul(s.Headroom, big.NewRat(100, 1))),
		tolerance: FormatRat(new(big.Rat).Mul(s.Tolerance, big.NewRat(100, 1))),
	}
	if s.Min != nil {
		e.min = s.Min.String()
	}
	return e
}

func TestParsePolicyWindow(t *testing.T) {
	tests := []struct {
		name         string
		annotations  map[string]string
		defaults     WindowPolicy
		headroom     *big.Rat // the flags; nil: none given
		tolerance    *big.Rat
		wantWindow   WindowPolicy // MaxShrink compared by value
		wantSettings map[corev1.ResourceName]sizingEffective
		wantProblems []string
	}{
		{
			name:         "no annotations: the built-in defaults",
			defaults:     DefaultWindowPolicy(),
			wantWindow:   WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantSettings: map[corev1.ResourceName]sizingEffective{"requests.cpu": {"25", "15", ""}},
		},
		{
			name:     "flags are the defaults",
			defaults: WindowPolicy{Length: 7 * 24 * time.Hour, Shrink: true, ShrinkCooldown: 24 * time.Hour, MaxShrink: big.NewRat(1, 2)},
			headroom: big.NewRat(1, 10), tolerance: big.NewRat(1, 20),
			wantWindow:   WindowPolicy{Length: 7 * 24 * time.Hour, Shrink: true, ShrinkCooldown: 24 * time.Hour, MaxShrink: big.NewRat(1, 2)},
			wantSettings: map[corev1.ResourceName]sizingEffective{"requests.cpu": {"10", "5", ""}},
		},
		{
			name: "namespace and per-resource annotations",
			annotations: map[string]string{
				AnnotationHeadroom: "30%", AnnotationTolerance: "0.1", AnnotationWindow: "21d", AnnotationShrink: " TRUE ",
				AnnotationShrinkCooldown: "3d", AnnotationMaxShrink: "50%",
				"resizer.io/memory-headroom": "0.5", "resizer.io/cpu-tolerance": "0%", "resizer.io/memory-min": "4Gi",
				"resizer.io/count-pods-min": "10",
			},
			defaults:   DefaultWindowPolicy(),
			wantWindow: WindowPolicy{Length: 21 * 24 * time.Hour, Shrink: true, ShrinkCooldown: 3 * 24 * time.Hour, MaxShrink: big.NewRat(1, 2)},
			wantSettings: map[corev1.ResourceName]sizingEffective{
				"requests.cpu":    {"30", "0", ""},
				"limits.memory":   {"50", "10", "4Gi"},
				"requests.memory": {"50", "10", "4Gi"},
				"count/pods":      {"30", "10", "10"},
				"pods":            {"30", "10", ""},
			},
		},
		{
			name:        "the namespace opts out of shrinking the flag allows",
			annotations: map[string]string{AnnotationShrink: "false"},
			defaults: func() WindowPolicy {
				w := DefaultWindowPolicy()
				w.Shrink = true
				return w
			}(),
			wantWindow:   WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantSettings: map[corev1.ResourceName]sizingEffective{"requests.cpu": {"25", "15", ""}},
		},
		{
			name: "bad values fall back, each named precisely",
			annotations: map[string]string{
				AnnotationHeadroom:               "-5%",
				AnnotationTolerance:              "150%",
				AnnotationWindow:                 "12h",
				AnnotationShrink:                 "yes",
				AnnotationShrinkCooldown:         "never",
				AnnotationMaxShrink:              "0",
				"resizer.io/cpu-headroom":        "20000%",
				"resizer.io/memory-tolerance":    "abc",
				"resizer.io/memory-min":          "-1Gi",
				"resizer.io/cpu-min":             "lots",
				"resizer.io/pods-min":            "1e999999",
				"resizer.io/storage-min":         "",
				"resizer.io/ephemeral-storage-x": "1",
			},
			defaults:   DefaultWindowPolicy(),
			wantWindow: WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantSettings: map[corev1.ResourceName]sizingEffective{
				"requests.cpu": {"25", "15", ""}, "requests.memory": {"25", "15", ""}, "pods": {"25", "15", ""},
			},
			wantProblems: []string{
				`annotation resizer.io/cpu-headroom="20000%": must be between 0 and 1000% (a value without % is a fraction: 0.25 means 25%); using 25%`,
				`annotation resizer.io/cpu-min="lots": not a quantity (4Gi, 500m, 10); ignored`,
				`annotation resizer.io/ephemeral-storage-x="1": unknown annotation (typo?); ignored`,
				`annotation resizer.io/headroom="-5%": must be between 0 and 1000% (a value without % is a fraction: 0.25 means 25%); using 25%`,
				`annotation resizer.io/max-shrink="0": must be greater than 0 and at most 100% (a value without % is a fraction: 0.25 means 25%); using 25%`,
				`annotation resizer.io/memory-min="-1Gi": must not be negative; ignored`,
				`annotation resizer.io/memory-tolerance="abc": not a number; using 15%`,
				`annotation resizer.io/pods-min="1e999999": not a quantity (4Gi, 500m, 10); ignored`,
				`annotation resizer.io/shrink="yes": must be "true" or "false"; using false`,
				`annotation resizer.io/shrink-cooldown="never": not a cooldown: want a length with a unit (12h, 7d) (never is not accepted: a cooldown needs an end); using 7d`,
				`annotation resizer.io/storage-min="": not a quantity (4Gi, 500m, 10); ignored`,
				`annotation resizer.io/tolerance="150%": must be between 0 and 100% (a value without % is a fraction: 0.15 means 15%); using 15%`,
				`annotation resizer.io/window="12h": must be between 1d and 31d; using 14d`,
			},
		},
		{
			name:         "an invalid per-resource value falls back to the namespace annotation",
			annotations:  map[string]string{AnnotationHeadroom: "40%", "resizer.io/cpu-headroom": "x"},
			defaults:     DefaultWindowPolicy(),
			wantWindow:   WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantSettings: map[corev1.ResourceName]sizingEffective{"requests.cpu": {"40", "15", ""}},
			wantProblems: []string{`annotation resizer.io/cpu-headroom="x": not a number; using 40%`},
		},
		{
			name:         "a window that is not whole days, and one too long",
			annotations:  map[string]string{AnnotationWindow: "100d"},
			defaults:     DefaultWindowPolicy(),
			wantWindow:   WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantProblems: []string{`annotation resizer.io/window="100d": must be between 1d and 31d; using 14d`},
		},
		{
			name:         "a window of days and hours",
			annotations:  map[string]string{AnnotationWindow: "1d12h"},
			defaults:     DefaultWindowPolicy(),
			wantWindow:   WindowPolicy{Length: 14 * 24 * time.Hour, ShrinkCooldown: 7 * 24 * time.Hour, MaxShrink: big.NewRat(1, 4)},
			wantProblems: []string{`annotation resizer.io/window="1d12h": must be whole days (7d, 2w); using 14d`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settings := annTestDefaults()
			settings.Headroom, settings.Tolerance = tt.headroom, tt.tolerance
			p, problems := ParsePolicyWith(tt.annotations, settings, time.Hour, tt.defaults)
			w := p.Window
			if w.Length != tt.wantWindow.Length || w.Shrink != tt.wantWindow.Shrink || w.ShrinkCooldown != tt.wantWindow.ShrinkCooldown ||
				w.MaxShrink == nil || w.MaxShrink.Cmp(tt.wantWindow.MaxShrink) != 0 {
				t.Errorf("Window = %+v (max-shrink %v), want %+v", w, w.MaxShrink, tt.wantWindow)
			}
			for res, want := range tt.wantSettings {
				if got := effectiveSizing(p, res); got != want {
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

// The threshold and increment settings are what they were: the window annotations add to them.
func TestParsePolicyKeepsGrowSettings(t *testing.T) {
	p, problems := ParsePolicy(map[string]string{"resizer.io/cpu-threshold": "70", "resizer.io/cpu-min": "2"}, annTestDefaults(), time.Hour)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	s := p.Settings("requests.cpu")
	if FormatRat(s.Threshold) != "70" || FormatRat(s.Increment) != "0.2" || s.Min == nil || s.Min.String() != "2" {
		t.Fatalf("Settings = threshold %v increment %v min %v", s.Threshold, s.Increment, s.Min)
	}
}

// FuzzParseSizing feeds arbitrary values to the window annotations: no panics, every value in
// effect within its bounds, every problem complete and clipped.
func FuzzParseSizing(f *testing.F) {
	for _, s := range []string{"25%", "0.25", "0", "1000%", "14d", "2w", "1d12h", "never", "true", "4Gi", "-1", "1e999999", "500m", "", "abc"} {
		f.Add("resizer.io/cpu-min", s, s)
	}
	f.Add("resizer.io/memory-headroom", "0.5", "31d")
	f.Add("resizer.io/count-pods-tolerance", "100%", "32d")
	f.Fuzz(func(t *testing.T, key, value, nsValue string) {
		annotations := map[string]string{
			key: value, AnnotationHeadroom: nsValue, AnnotationTolerance: nsValue, AnnotationWindow: nsValue,
			AnnotationShrink: nsValue, AnnotationShrinkCooldown: nsValue, AnnotationMaxShrink: nsValue,
		}
		defaults := DefaultWindowPolicy()
		p, problems := ParsePolicyWith(annotations, annTestDefaults(), time.Hour, defaults)
		if defaults.MaxShrink.Cmp(big.NewRat(1, 4)) != 0 || p.Window.MaxShrink == defaults.MaxShrink {
			t.Fatalf("defaults changed")
		}
		if !sort.SliceIsSorted(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key }) {
			t.Fatalf("problems not sorted: %+v", problems)
		}
		for _, pr := range problems {
			if utf8.RuneCountInString(strings.TrimSuffix(pr.Value, "…")) > annMaxProblemValue || pr.Problem == "" || pr.Fallback == "" {
				t.Fatalf("problem %+v", pr)
			}
		}
		w := p.Window
		if w.Length < 24*time.Hour || w.Length > MaxWindowDays*24*time.Hour || w.Length%(24*time.Hour) != 0 {
			t.Fatalf("Length = %v", w.Length)
		}
		if w.ShrinkCooldown < 0 || w.ShrinkCooldown > MaxCooldownMinutes*time.Minute {
			t.Fatalf("ShrinkCooldown = %v", w.ShrinkCooldown)
		}
		if w.MaxShrink.Sign() <= 0 || w.MaxShrink.Cmp(big.NewRat(1, 1)) > 0 {
			t.Fatalf("MaxShrink = %v", w.MaxShrink)
		}
		for _, res := range []corev1.ResourceName{"requests.cpu", "limits.memory", "count/pods", corev1.ResourceName(strings.TrimPrefix(key, AnnotationPrefix))} {
			s := p.Settings(res)
			if s.Headroom == nil || s.Headroom.Sign() < 0 || s.Headroom.Cmp(big.NewRat(10, 1)) > 0 {
				t.Fatalf("Settings(%s).Headroom = %v", res, s.Headroom)
			}
			if s.Tolerance == nil || s.Tolerance.Sign() < 0 || s.Tolerance.Cmp(big.NewRat(1, 1)) > 0 {
				t.Fatalf("Settings(%s).Tolerance = %v", res, s.Tolerance)
			}
			if s.Min != nil && s.Min.Sign() < 0 {
				t.Fatalf("Settings(%s).Min = %v", res, s.Min)
			}
		}
		// The values in effect read back the same through their parsers.
		if back, err := ParseWindow(lifecycleFormat(w.Length)); err != nil || back != w.Length {
			t.Fatalf("window %v does not round-trip: %v, %v", w.Length, back, err)
		}
		if s := p.Settings("requests.cpu"); s.Min != nil {
			if back, err := ParseMin(s.Min.String()); err != nil || back.Cmp(*s.Min) != 0 {
				t.Fatalf("min %v does not round-trip: %v, %v", s.Min, back, err)
			}
		}
	})
}

func lifecycleFormat(d time.Duration) string { return formatCooldown(d) }
