package quota

import (
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func defaultPolicy() Policy {
	return Policy{
		Enabled:   true,
		Namespace: Settings{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)},
		Cooldown:  time.Hour,
	}
}

func snap(hard, used corev1.ResourceList, mutate ...func(*Snapshot)) Snapshot {
	s := Snapshot{Now: t0, Namespace: "team-a", Quota: "compute", Hard: hard, Used: used, Policy: defaultPolicy()}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

func exceeded(quota, msg string, owner Owner, seen time.Time) Failure {
	p, err := ParseEventMessage(msg)
	if err != nil {
		panic(err)
	}
	return Failure{EventName: "ev", LastSeen: seen, Message: msg, Owner: owner, Parsed: p}
}

const msgCPU = `Error creating: pods "web-1" is forbidden: exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=8, limited: requests.cpu=10`

// want is a compact expectation: resource=recommended/trigger.
func summarize(d Verdict) string {
	var parts []string
	for _, r := range d.Recommendations {
		parts = append(parts, string(r.Resource)+"="+r.Recommended.String()+"/"+string(r.Trigger))
	}
	return strings.Join(parts, " ")
}

func TestDecide(t *testing.T) {
	rs := func(missing int64) Owner {
		return Owner{Kind: "ReplicaSet", Name: "web-1", Missing: missing, Known: true}
	}
	cases := []struct {
		name        string
		s           Snapshot
		want        string
		wantRequeue time.Duration
		wantMsg     string
	}{
		{name: "below threshold", s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "7999m"))},
		{
			name: "exactly at threshold", s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8")),
			want: "requests.cpu=12/threshold", wantRequeue: time.Hour,
			wantMsg: "requests.cpu should be increased from 10 to 12 (used 8 of 10 = 80% ≥ 80%)",
		},
		{
			name: "8.5 of 10 at 80%", s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8500m")),
			want: "requests.cpu=12/threshold", wantRequeue: time.Hour,
			wantMsg: "requests.cpu should be increased from 10 to 12 (used 8500m of 10 = 85% ≥ 80%)",
		},
		{name: "small cpu goes to millicores", s: snap(rl("requests.cpu", "4"), rl("requests.cpu", "4")), want: "requests.cpu=4800m/threshold", wantRequeue: time.Hour},
		{name: "memory Gi to Mi", s: snap(rl("requests.memory", "1Gi"), rl("requests.memory", "900Mi")), want: "requests.memory=1229Mi/threshold", wantRequeue: time.Hour},
		{name: "object count", s: snap(rl("pods", "10"), rl("pods", "9")), want: "pods=12/threshold", wantRequeue: time.Hour},
		{name: "used above hard", s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "15")), want: "requests.cpu=12/threshold", wantRequeue: time.Hour},
		{name: "hard zero is skipped", s: snap(rl("requests.cpu", "0"), rl("requests.cpu", "0"))},
		{name: "no used entry counts as zero", s: snap(rl("requests.cpu", "10"), nil)},
		{name: "no status yet", s: snap(nil, nil)},
		{
			name: "opted out", s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "10"), func(s *Snapshot) { s.Policy.Enabled = false }),
		},
		{
			name: "two resources sorted", s: snap(rl("requests.memory", "10Gi", "requests.cpu", "10"), rl("requests.memory", "9Gi", "requests.cpu", "9")),
			want: "requests.cpu=12/threshold requests.memory=12Gi/threshold", wantRequeue: time.Hour,
		},
		{
			name: "per-resource threshold",
			s: snap(rl("requests.cpu", "10", "requests.memory", "10Gi"), rl("requests.cpu", "8500m", "requests.memory", "8704Mi"), func(s *Snapshot) {
				s.Policy.PerResource = map[string]Settings{"cpu": {Threshold: big.NewRat(90, 1)}}
			}),
			want: "requests.memory=12Gi/threshold", wantRequeue: time.Hour,
		},
		{
			name: "inside cooldown under pressure: look again when it ends",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "9"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-20 * time.Minute)
			}),
			wantRequeue: 40 * time.Minute,
		},
		{
			name: "inside cooldown without pressure: nothing to look at",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "1"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-20 * time.Minute)
			}),
		},
		{
			name: "cooldown over",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "9"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-61 * time.Minute)
			}),
			want: "requests.cpu=12/threshold", wantRequeue: time.Hour,
		},
		{
			name: "deficit: need beats the standard step",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(3), t0.Add(-time.Minute))}
			}),
			// 8 + 4×3 = 20; threshold also hits (80%) with 12: one entry, deficit, the larger.
			want: "requests.cpu=20/deficit", wantRequeue: time.Hour,
			wantMsg: "requests.cpu should be increased from 10 to 20 (ReplicaSet web-1 cannot create 3 more pods requesting 4 each; used 8 of 10)",
		},
		{
			name: "deficit: never less than the standard step",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "7"), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", `exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=7, limited: requests.cpu=10`, rs(1), t0.Add(-time.Minute))}
			}),
			want: "requests.cpu=12/deficit", wantRequeue: time.Hour,
		},
		{
			name: "deficit with unknown owner counts one pod",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Policy.Namespace.Threshold = big.NewRat(99, 1)
				s.Failures = []Failure{exceeded("compute", msgCPU, Owner{}, t0.Add(-time.Minute))}
			}),
			want: "requests.cpu=12/deficit", wantRequeue: time.Hour,
			wantMsg: "requests.cpu should be increased from 10 to 12 (a workload cannot create 1 more pod requesting 4 each; used 8 of 10)",
		},
		{
			name: "deficit resolved: owner has all its pods",
			s: snap(rl("requests.cpu", "20"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(0), t0.Add(-time.Minute))}
			}),
		},
		{
			name: "deficit resolved: quota raised since",
			s: snap(rl("requests.cpu", "20"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(1), t0.Add(-time.Minute))}
			}),
		},
		{
			name: "event of another quota",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "1"), func(s *Snapshot) {
				s.Quota = "other"
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(1), t0.Add(-time.Minute))}
			}),
		},
		{
			name: "event older than last-modified is ignored after the cooldown",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "7"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-2 * time.Hour)
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(1), t0.Add(-3*time.Hour))}
			}),
		},
		{
			name: "event newer than last-modified counts after the cooldown",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "7"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-2 * time.Hour)
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(1), t0.Add(-time.Hour))}
			}),
			want: "requests.cpu=12/deficit", wantRequeue: time.Hour,
		},
		{
			name: "multi-resource message: only the exceeded resource",
			s: snap(rl("limits.memory", "1Gi", "requests.cpu", "1"), rl("limits.memory", "256Mi", "requests.cpu", "800m"), func(s *Snapshot) {
				s.Policy.Namespace.Threshold = big.NewRat(100, 1)
				s.Failures = []Failure{exceeded("compute", `(combined from similar events): Error creating: pods "api-fc77f4f65-b5bxq" is forbidden: exceeded quota: compute, requested: limits.memory=256Mi,requests.cpu=800m, used: limits.memory=256Mi,requests.cpu=800m, limited: limits.memory=1Gi,requests.cpu=1`, rs(2), t0.Add(-time.Minute))}
			}),
			// 800m + 2×800m = 2400m.
			want: "requests.cpu=2400m/deficit", wantRequeue: time.Hour,
		},
		{
			name: "a failure that just happened settles first, then everything is decided at once",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "8"), func(s *Snapshot) {
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(3), t0.Add(-time.Second))}
			}),
			wantRequeue: DeficitSettleTime - time.Second,
		},
		{
			name: "deficit inside the cooldown waits for its end",
			s: snap(rl("requests.cpu", "10"), rl("requests.cpu", "1"), func(s *Snapshot) {
				s.State.LastModified = t0.Add(-50 * time.Minute)
				s.Failures = []Failure{exceeded("compute", msgCPU, rs(1), t0.Add(-time.Minute))}
			}),
			wantRequeue: 10 * time.Minute,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.s)
			if got := summarize(d); got != tc.want {
				t.Errorf("recommendations = %q, want %q", got, tc.want)
			}
			if d.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", d.RequeueAfter, tc.wantRequeue)
			}
			if tc.wantMsg != "" && (len(d.Recommendations) == 0 || d.Recommendations[0].Message != tc.wantMsg) {
				t.Errorf("message:\n got: %v\nwant: %s", d.Recommendations, tc.wantMsg)
			}
			for _, r := range d.Recommendations {
				if r.Recommended.Cmp(r.Current) <= 0 {
					t.Errorf("%s: recommended %s is not above current %s", r.Resource, r.Recommended.String(), r.Current.String())
				}
			}
		})
	}
}

func TestDecideMissingSpec(t *testing.T) {
	p, err := ParseEventMessage(`Error creating: pods "x" is forbidden: failed quota: compute: must specify limits.cpu for: c`)
	if err != nil {
		t.Fatal(err)
	}
	s := snap(rl("limits.cpu", "4"), rl("limits.cpu", "0"), func(s *Snapshot) {
		s.Failures = []Failure{{EventName: "e1", LastSeen: t0, Parsed: p, Owner: Owner{Kind: "ReplicaSet", Name: "web-1"}}}
	})
	d := Decide(s)
	if len(d.Recommendations) != 0 {
		t.Errorf("a missing spec must not raise the quota: %v", d.Recommendations)
	}
	if len(d.MissingSpecs) != 1 {
		t.Fatalf("want 1 missing spec, got %v", d.MissingSpecs)
	}
	if want := "ReplicaSet web-1 cannot create pods: quota compute requires it to specify limits.cpu for: c"; d.MissingSpecs[0].Message != want {
		t.Errorf("message\n got: %s\nwant: %s", d.MissingSpecs[0].Message, want)
	}
}

func TestVerdictChange(t *testing.T) {
	d := Decide(snap(rl("requests.memory", "10Gi", "requests.cpu", "10"), rl("requests.memory", "9Gi", "requests.cpu", "9")))
	c := d.Change()
	if c == nil {
		t.Fatal("no change")
	}
	if c.Key != lifecycle.Key("quota/team-a/compute") || c.Target.Kind != "ResourceQuota" || c.Target.Name != "compute" {
		t.Errorf("change identity: %+v", c)
	}
	if len(c.Edit.Fields) != 2 || strings.Join(c.Edit.Fields[1].Path, ".") != "spec.hard.requests.memory" || c.Edit.Fields[1].To != "12Gi" {
		t.Errorf("fields: %+v", c.Edit.Fields)
	}
	if c.Evidence[0]["trigger"] != "threshold" || c.Evidence[0]["recommended"] != "12" {
		t.Errorf("evidence: %v", c.Evidence[0])
	}
	if (Verdict{}).Change() != nil {
		t.Error("an empty decision must give no change")
	}
}

// BenchmarkDecide measures the pure decision for one typical quota (cpu and memory, one of them
// under pressure): the work done per quota on every status update.
func BenchmarkDecide(b *testing.B) {
	cases := map[string]Snapshot{
		"quiet":    snap(rl("requests.cpu", "10", "requests.memory", "20Gi"), rl("requests.cpu", "2", "requests.memory", "4Gi")),
		"pressure": snap(rl("requests.cpu", "10", "requests.memory", "20Gi"), rl("requests.cpu", "9500m", "requests.memory", "4Gi")),
	}
	for name, s := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Decide(s)
			}
		})
	}
}
