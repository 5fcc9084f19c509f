package quota

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

const day = 24 * time.Hour

// sizingPolicy is the default policy with the window's defaults: headroom 25 %, tolerance
// 15 %, a 14-day window, a 7-day shrink cooldown and at most 25 % less per step.
func sizingPolicy() Policy {
	p := defaultPolicy()
	p.Namespace.Headroom, p.Namespace.Tolerance = big.NewRat(1, 4), big.NewRat(15, 100)
	p.Window = WindowPolicy{Length: 14 * day, ShrinkCooldown: 7 * day, MaxShrink: big.NewRat(1, 4)}
	return p
}

// win is a window ending at t0 with the peaks given as resource, value pairs.
func win(complete bool, pairs ...string) quotahistory.Window {
	w := quotahistory.Window{Start: t0.Add(-14 * day), End: t0, Complete: complete, Peaks: map[corev1.ResourceName]quotahistory.Peak{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		w.Peaks[corev1.ResourceName(pairs[i])] = quotahistory.Peak{Value: resource.MustParse(pairs[i+1]), At: t0.Add(-3 * day)}
	}
	if !complete {
		w.Incomplete = "history reaches back 3 days"
	}
	return w
}

// shrinkSummary is a compact form of the shrinks: resource=recommended[applied]{blocked}.
func shrinkSummary(shs []Shrink) string {
	var parts []string
	for _, sh := range shs {
		parts = append(parts, fmt.Sprintf("%s=%s[%s]{%s}", sh.Resource, sh.Recommended.String(), joinGates(sh.Applied), joinGates(sh.Blocked)))
	}
	return strings.Join(parts, " ")
}

func TestSizeShrinks(t *testing.T) {
	policy := func(m func(*Policy)) func(*Snapshot) {
		return func(s *Snapshot) { m(&s.Policy) }
	}
	window := func(w quotahistory.Window) func(*Snapshot) { return func(s *Snapshot) { s.Window = w } }
	state := func(st State) func(*Snapshot) { return func(s *Snapshot) { s.State = st } }
	floor := func(alias, v string) func(*Policy) {
		return func(p *Policy) {
			q := resource.MustParse(v)
			p.setResourceOverride(alias, func(s *Settings) { s.Min = &q })
		}
	}
	tests := []struct {
		name       string
		hard, used corev1.ResourceList
		mutate     []func(*Snapshot)
		want       string
		wantTarget string // of the first shrink, when set
	}{
		// The band: target = max(8Gi, 2Gi) × 1.25 = 10Gi, its edge 10Gi × 1.15 = 11.5Gi = 11776Mi.
		{name: "hard on the band's upper edge stays", hard: rl("requests.memory", "11776Mi"), used: rl("requests.memory", "2Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi"))}},
		{name: "hard just above the band shrinks to the target", hard: rl("requests.memory", "11777Mi"), used: rl("requests.memory", "2Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi"))}, want: "requests.memory=10Gi[]{}", wantTarget: "10Gi"},
		{name: "hard below the target is not the window's business", hard: rl("requests.memory", "9Gi"), used: rl("requests.memory", "2Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi"))}},
		{name: "zero tolerance: just above the target shrinks", hard: rl("requests.memory", "10241Mi"), used: rl("requests.memory", "2Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(func(p *Policy) { p.Namespace.Tolerance = new(big.Rat) })},
			want:   "requests.memory=10Gi[]{}"},
		{name: "per-resource headroom and tolerance", hard: rl("requests.memory", "12Gi"), used: rl("requests.memory", "2Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(func(p *Policy) {
				p.setResourceOverride("memory", func(s *Settings) { s.Headroom, s.Tolerance = big.NewRat(1, 2), big.NewRat(1, 10) })
			})}},

		// The target's base is the larger of peak and used; the step cuts at most 25 %.
		{name: "used above the peak is the base, the step cuts", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "8Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "4Gi"))}, want: "requests.memory=15Gi[step]{}", wantTarget: "10Gi"},
		{name: "step: at most 25 % less per proposal", hard: rl("requests.memory", "100Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi"))}, want: "requests.memory=75Gi[step]{}"},
		{name: "max-shrink 100 %: straight to the target", hard: rl("requests.memory", "100Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(func(p *Policy) { p.Window.MaxShrink = big.NewRat(1, 1) })},
			want:   "requests.memory=10Gi[]{}"},

		// Floors.
		{name: "floor: the -min annotation raises the value", hard: rl("requests.memory", "16Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(floor("memory", "12Gi"))}, want: "requests.memory=12Gi[floor]{}"},
		{name: "floor and step: the higher wins, both named", hard: rl("requests.memory", "16Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(floor("memory", "11Gi"))}, want: "requests.memory=12Gi[floor,step]{}"},
		{name: "floor at the hard value holds the shrink back", hard: rl("requests.memory", "16Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(floor("memory", "16Gi"))}, want: "requests.memory=16Gi[floor]{floor}"},
		{name: "floor above the hard value holds the shrink back", hard: rl("requests.memory", "16Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), policy(floor("memory", "20Gi"))}, want: "requests.memory=16Gi[floor]{floor}"},
		{name: "used × (1 + headroom) is a floor: the target never goes below it", hard: rl("requests.memory", "16Gi"), used: rl("requests.memory", "10Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "1Gi"))}, want: "requests.memory=13Gi[]{}", wantTarget: "13Gi"},

		// Rounding: as a grow rounds, in the hard value's unit.
		{name: "rounding up to whole units from 10 of them", hard: rl("requests.cpu", "40"), used: rl("requests.cpu", "1"),
			mutate: []func(*Snapshot){window(win(true, "requests.cpu", "13")), policy(func(p *Policy) { p.Window.MaxShrink = big.NewRat(1, 1) })},
			want:   "requests.cpu=17[]{}"},
		{name: "rounding below 10 units goes to the finer unit", hard: rl("requests.cpu", "4"), used: rl("requests.cpu", "100m"),
			mutate: []func(*Snapshot){window(win(true, "requests.cpu", "1100m")), policy(func(p *Policy) { p.Window.MaxShrink = big.NewRat(1, 1) })},
			want:   "requests.cpu=1375m[]{}"},
		{name: "counts stay whole", hard: rl("pods", "100"), used: rl("pods", "1"),
			mutate: []func(*Snapshot){window(win(true, "pods", "7")), policy(func(p *Policy) { p.Window.MaxShrink = big.NewRat(1, 1) })},
			want:   "pods=9[]{}"},
		{name: "the step rounds up too", hard: rl("requests.cpu", "3"), used: rl("requests.cpu", "0"),
			mutate: []func(*Snapshot){window(win(true, "requests.cpu", "100m"))}, want: "requests.cpu=2250m[step]{}"},

		// Gates that hold a shrink back.
		{name: "window: incomplete history", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(false, "requests.memory", "8Gi"))}, want: "requests.memory=15Gi[step]{window}"},
		{name: "window: a resource the history does not know", hard: rl("requests.memory", "20Gi", "requests.cpu", "10"), used: rl("requests.memory", "1Gi", "requests.cpu", "1"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi"))}, want: "requests.cpu=7500m[step]{window} requests.memory=15Gi[step]{}"},
		{name: "window: no history at all", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			want: "requests.memory=15Gi[step]{window}"},
		{name: "recent-grow: a grow inside the window", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-13 * day), LastGrow: t0.Add(-13 * day)})},
			want:   "requests.memory=15Gi[step]{recent-grow}"},
		{name: "recent-grow: a grow before the window does not hold", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-15 * day), LastGrow: t0.Add(-15 * day)})},
			want:   "requests.memory=15Gi[step]{}"},
		{name: "recent-grow: a Lease from before shrinking existed counts its last decision as a grow", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-1 * day)})},
			want:   "requests.memory=15Gi[step]{recent-grow}"},
		{name: "cooldown: shrunk less than the shrink cooldown ago", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-6 * day), LastShrink: t0.Add(-6 * day)})},
			want:   "requests.memory=15Gi[step]{cooldown}"},
		{name: "cooldown: the shrink on record at this look's own time is the one being decided", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-20 * day), LastShrink: t0})},
			want:   "requests.memory=15Gi[step]{}"},
		{name: "cooldown: over on the dot", hard: rl("requests.memory", "20Gi"), used: rl("requests.memory", "1Gi"),
			mutate: []func(*Snapshot){window(win(true, "requests.memory", "8Gi")), state(State{LastModified: t0.Add(-7 * day), LastShrink: t0.Add(-7 * day)})},
			want:   "requests.memory=15Gi[step]{}"},
		{name: "failed-create: pods fail for want of this quota", hard: rl("requests.cpu", "10"), used: rl("requests.cpu", "1"),
			mutate: []func(*Snapshot){window(win(true, "requests.cpu", "1")), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, Owner{}, t0.Add(-time.Minute))}
			}},
			want: "requests.cpu=7500m[step]{failed-create}"},
		{name: "failed-create: an owner that has its pods now does not hold", hard: rl("requests.cpu", "10"), used: rl("requests.cpu", "1"),
			mutate: []func(*Snapshot){window(win(true, "requests.cpu", "1")), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, Owner{Kind: "ReplicaSet", Name: "web", Known: true}, t0.Add(-time.Minute))}
			}},
			want: "requests.cpu=7500m[step]{}"},
		{name: "every gate at once, in order", hard: rl("requests.cpu", "10"), used: rl("requests.cpu", "1"),
			mutate: []func(*Snapshot){window(win(false, "requests.cpu", "1")), state(State{LastModified: t0.Add(-day), LastGrow: t0.Add(-2 * day), LastShrink: t0.Add(-day)}),
				func(s *Snapshot) { s.Failures = []Failure{exceeded("compute", msgCPU, Owner{}, t0.Add(-time.Minute))} }},
			want: "requests.cpu=7500m[step]{failed-create,window,recent-grow,cooldown}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snap(tt.hard, tt.used, append([]func(*Snapshot){func(s *Snapshot) { s.Policy = sizingPolicy() }}, tt.mutate...)...)
			got, problems := SizeShrinks(s)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			if sum := shrinkSummary(got); sum != tt.want {
				t.Fatalf("got  %s\nwant %s", sum, tt.want)
			}
			if tt.wantTarget != "" && got[0].Target.String() != tt.wantTarget {
				t.Fatalf("target %s, want %s", got[0].Target.String(), tt.wantTarget)
			}
			for _, sh := range got {
				if sh.Recommended.Cmp(sh.Current) > 0 {
					t.Fatalf("%s: a shrink to %s above %s", sh.Resource, sh.Recommended.String(), sh.Current.String())
				}
				if !strings.HasPrefix(sh.Message, string(sh.Resource)+" ") {
					t.Fatalf("message %q", sh.Message)
				}
				if len(sh.Blocked) > 0 && !strings.HasSuffix(sh.Message, "held back by "+strings.ReplaceAll(joinGates(sh.Blocked), ",", ", ")) {
					t.Fatalf("message %q does not name the gates %v", sh.Message, sh.Blocked)
				}
			}
		})
	}
}

func TestShrinkMessageAndEvidence(t *testing.T) {
	s := snap(rl("requests.memory", "20Gi"), rl("requests.memory", "1Gi"), func(s *Snapshot) {
		s.Policy = sizingPolicy()
		s.Window = win(true, "requests.memory", "8Gi")
		s.State = State{LastModified: t0.Add(-day), LastShrink: t0.Add(-day)}
	})
	got, _ := SizeShrinks(s)
	if len(got) != 1 {
		t.Fatalf("got %v", got)
	}
	want := "requests.memory could shrink from 20Gi to 15Gi (peak 8Gi at 2026-11-18T12:00:00Z over 14d, used 1Gi, target 10Gi; cut to at most 25% less per step); held back by cooldown"
	if got[0].Message != want {
		t.Fatalf("message\n%s\nwant\n%s", got[0].Message, want)
	}
	e := got[0].Evidence()
	for k, v := range map[string]string{"recommended": "15Gi", "peak": "8Gi", "peakAt": "2026-11-18T12:00:00Z", "windowComplete": "true",
		"blocked": "cooldown", "gates": "step", "target": "10Gi", "trigger": "shrink"} {
		if e[k] != v {
			t.Errorf("evidence[%s] = %q, want %q", k, e[k], v)
		}
	}
	if (Verdict{Shrinks: got}).ShrinkChange() != nil {
		t.Fatalf("a held-back shrink became a Change")
	}
	got[0].Blocked = nil
	c := (Verdict{Shrinks: got}).ShrinkChange()
	if c == nil || c.Reason != ReasonQuotaShrinkRecommended || len(c.Edit.Fields) != 1 || c.Edit.Fields[0].To != "15Gi" || c.Edit.Fields[0].From != "20Gi" ||
		c.Key != lifecycle.NewKey(DetectorName, "team-a", "compute") || c.Blocking {
		t.Fatalf("change %+v", c)
	}
}

// Decide with a window: a grow goes first and never proposes less than the window's target; a
// shrink never holds a grow back.
func TestDecideWithWindow(t *testing.T) {
	tests := []struct {
		name        string
		s           Snapshot
		wantGrow    string
		wantShrinks string
	}{
		{name: "a grow is raised to the window's target",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy, s.Window = sizingPolicy(), win(true, "requests.memory", "11Gi")
			}),
			wantGrow: "requests.memory=14Gi/threshold"},
		{name: "a grow above the window's target stays the threshold's",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy, s.Window = sizingPolicy(), win(true, "requests.memory", "9Gi")
			}),
			wantGrow: "requests.memory=12Gi/threshold"},
		{name: "without history a grow is exactly the threshold's",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy = sizingPolicy()
			}),
			wantGrow: "requests.memory=12Gi/threshold"},
		{name: "a deficit is raised to the window's target too",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Policy, s.Window = sizingPolicy(), win(true, "requests.cpu", "14")
				s.Failures = []Failure{exceeded("compute", msgCPU, Owner{}, t0.Add(-time.Minute))}
			}),
			wantGrow: "requests.cpu=18/deficit"},
		{name: "a grow goes first: no shrink beside it",
			s: snap(rl("requests.memory", "10Gi", "requests.cpu", "100"), rl("requests.memory", "9Gi", "requests.cpu", "1"), func(s *Snapshot) {
				s.Policy, s.Window = sizingPolicy(), win(true, "requests.memory", "9Gi", "requests.cpu", "1")
			}),
			wantGrow: "requests.memory=12Gi/threshold"},
		{name: "without a grow, the shrinks",
			s: snap(rl("requests.cpu", "100"), rl("requests.cpu", "1"), func(s *Snapshot) {
				s.Policy, s.Window = sizingPolicy(), win(true, "requests.cpu", "1")
			}),
			wantShrinks: "requests.cpu=75[step]{}"},
		{name: "after a shrink the grow cooldown does not hold a grow back",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy = sizingPolicy()
				s.State = State{LastModified: t0.Add(-10 * time.Minute), LastShrink: t0.Add(-10 * time.Minute), LastGrow: t0.Add(-20 * day)}
			}),
			wantGrow: "requests.memory=12Gi/threshold"},
		{name: "the grow on record at this look's own time is the one being decided",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy = sizingPolicy()
				s.State = State{LastModified: t0.Add(-10 * time.Minute), LastShrink: t0.Add(-10 * time.Minute), LastGrow: t0}
			}),
			wantGrow: "requests.memory=12Gi/threshold"},
		{name: "after a grow the grow cooldown holds",
			s: snap(rl("requests.memory", "10Gi"), rl("requests.memory", "9Gi"), func(s *Snapshot) {
				s.Policy = sizingPolicy()
				s.State = State{LastModified: t0.Add(-10 * time.Minute), LastShrink: t0.Add(-20 * day), LastGrow: t0.Add(-10 * time.Minute)}
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.s)
			if got := summarize(d); got != tt.wantGrow {
				t.Fatalf("grow %q, want %q", got, tt.wantGrow)
			}
			if got := shrinkSummary(d.Shrinks); got != tt.wantShrinks {
				t.Fatalf("shrinks %q, want %q", got, tt.wantShrinks)
			}
		})
	}
}

func TestSupersedesShrinks(t *testing.T) {
	shrink := func(cpu string) lifecycle.Change {
		c := cpuMem(cpu, "")
		c.Edit.Fields = c.Edit.Fields[:1]
		c.Reason = ReasonQuotaShrinkRecommended
		return c
	}
	grow := func(cpu string) lifecycle.Change {
		c := cpuMem(cpu, "")
		c.Edit.Fields = c.Edit.Fields[:1]
		c.Reason = ReasonQuotaResizeRecommended
		return c
	}
	tests := []struct {
		name       string
		newer, old lifecycle.Change
		want       bool
		wantTo     string
	}{
		{name: "a grow replaces an open shrink whole", newer: grow("12"), old: shrink("8"), want: true, wantTo: "12"},
		{name: "a grow replaces a shrink even at a value below the shrink's", newer: grow("6"), old: shrink("8"), want: true, wantTo: "6"},
		{name: "a shrink never supersedes a grow", newer: shrink("6"), old: grow("12"), want: false, wantTo: "12"},
		{name: "a moved window's shrink replaces the older one", newer: shrink("7"), old: shrink("8"), want: true, wantTo: "7"},
		{name: "the same shrink again does not", newer: shrink("8"), old: shrink("8"), want: false, wantTo: "8"},
		{name: "grows as before: a larger one supersedes", newer: grow("14"), old: grow("12"), want: true, wantTo: "14"},
		{name: "grows as before: a smaller one does not", newer: grow("11"), old: grow("12"), want: false, wantTo: "12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Supersedes(tt.newer, tt.old)
			if ok != tt.want || got.Edit.Fields[0].To != tt.wantTo {
				t.Fatalf("Supersedes = %v, %s; want %v, %s", ok, got.Edit.Fields[0].To, tt.want, tt.wantTo)
			}
		})
	}
}
