package ephemeral

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// exampleCondition is the condition of a Knative preview's Cleaner (a longer form of the one in
// docs/detectors/cleaners.md): the preview is done when no revision serves a route other than a
// preview one, and none is active or was within 360h.
const exampleCondition = `!revisions.items.exists(r,
  r.metadata.annotations["serving.knative.dev/routes"]
    .split(",")
    .exists(route, !route.startsWith("sfj-") && !route.startsWith("preview-"))
  ||
  r.status.conditions
    .filter(c, c.type == "Active")
    .exists(c, c.status == "True" || time - timestamp(c.lastTransitionTime) < duration("360h"))
)`

func revision(name, routes, active string, lastTransition time.Time) map[string]any {
	return map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Revision",
		"metadata": map[string]any{"name": name, "namespace": "faststore-proxy",
			"labels":      map[string]any{"vtex.io/proxy": "p1"},
			"annotations": map[string]any{"serving.knative.dev/routes": routes}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "Active", "status": active, "lastTransitionTime": lastTransition.UTC().Format(time.RFC3339)},
		}},
	}
}

func exampleSpec(monotonic bool) v1alpha1.CleanerSpec {
	f := false
	return v1alpha1.CleanerSpec{
		TTL:   "360h",
		Retry: v1alpha1.Retry{Period: "5h", Monotonic: monotonic},
		Targets: []v1alpha1.Target{
			{Name: "nginx", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "service", Name: "sfj-commit--account"}, IncludeWhenEvaluating: &f},
			{Name: "revisions", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "revision", MatchLabels: map[string]string{"vtex.io/proxy": "p1"}}},
		},
		Conditions: []string{exampleCondition},
	}
}

func mustCompile(t testing.TB, spec v1alpha1.CleanerSpec) *Spec {
	t.Helper()
	s, errs := Compile(spec)
	if len(errs) > 0 {
		t.Fatalf("Compile: %v", errs.ToAggregate())
	}
	return s
}

var (
	created = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	expires = created.Add(360 * time.Hour)
)

func TestDecide(t *testing.T) {
	inactiveSince := expires.Add(-100 * time.Hour) // conditions turn true at inactiveSince+360h
	turnsTrue := inactiveSince.Add(360 * time.Hour)
	for _, tc := range []struct {
		name      string
		monotonic bool
		now       time.Time
		revisions []map[string]any
		want      Verdict
	}{
		{
			name: "before the TTL: look again exactly at the deadline, evaluate nothing",
			now:  expires.Add(-time.Second),
			want: Verdict{ExpiresAt: expires, Next: expires},
		},
		{
			name:      "TTL reached, a revision still active: periodic retry",
			now:       expires,
			revisions: []map[string]any{revision("r1", "preview-a", "True", inactiveSince)},
			want:      Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0}}, Next: expires.Add(5 * time.Hour), Evaluations: 1},
		},
		{
			name:      "inactive for less than 360h, not monotonic: period",
			now:       expires,
			revisions: []map[string]any{revision("r1", "preview-a", "False", inactiveSince)},
			want:      Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0}}, Next: expires.Add(5 * time.Hour), Evaluations: 1},
		},
		{
			name:      "inactive for less than 360h, monotonic: the exact second it turns true",
			monotonic: true,
			now:       expires,
			revisions: []map[string]any{revision("r1", "preview-a", "False", inactiveSince)},
			want:      Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0}}, Next: turnsTrue, Searched: true, Evaluations: 1 + 1 + 21},
		},
		{
			name:      "a route other than a preview serves a revision: never within the horizon, monotonic falls back to period",
			monotonic: true,
			now:       expires,
			revisions: []map[string]any{revision("r1", "preview-a,www", "False", inactiveSince)},
			want:      Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0}}, Next: expires.Add(5 * time.Hour), Evaluations: 2},
		},
		{
			name:      "inactive for 360h: due",
			now:       turnsTrue,
			revisions: []map[string]any{revision("r1", "sfj-a,preview-b", "False", inactiveSince)},
			want:      Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0, Value: true}}, Due: true, Evaluations: 1},
		},
		{
			name: "no revisions at all: due",
			now:  expires,
			want: Verdict{ExpiresAt: expires, Expired: true, Results: []Result{{Index: 0, Value: true}}, Due: true, Evaluations: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, exampleSpec(tc.monotonic))
			got := s.Decide(context.Background(), Snapshot{Created: created, Now: tc.now, Objects: map[string][]map[string]any{"revisions": tc.revisions}})
			if !equalVerdict(got, tc.want) {
				t.Fatalf("Decide:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func equalVerdict(a, b Verdict) bool {
	if !a.ExpiresAt.Equal(b.ExpiresAt) || a.Expired != b.Expired || a.Due != b.Due || !a.Next.Equal(b.Next) ||
		a.Searched != b.Searched || a.Evaluations != b.Evaluations || len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		if a.Results[i].Index != b.Results[i].Index || a.Results[i].Value != b.Results[i].Value || (a.Results[i].Err == nil) != (b.Results[i].Err == nil) {
			return false
		}
	}
	return true
}

// TestSearchIsExact: whatever second the conditions turn true at, within the horizon, the search
// finds exactly it — with at most 23 evaluations for the default 30-day horizon, and never a
// second at which they are false.
func TestSearchIsExact(t *testing.T) {
	spec := v1alpha1.CleanerSpec{TTL: "0s", Retry: v1alpha1.Retry{Monotonic: true},
		Conditions: []string{`time >= timestamp("` + "PLACEHOLDER" + `")`}}
	now := time.Date(2026, 5, 1, 12, 0, 0, 250_000_000, time.UTC) // fractional seconds on purpose
	for _, offset := range []time.Duration{time.Second - 250*time.Millisecond, 2 * time.Second, time.Hour + 17*time.Second, 29*24*time.Hour + 3*time.Second, 720*time.Hour - 250*time.Millisecond} {
		at := now.Add(offset).Truncate(time.Second)
		if at.Before(now) {
			at = at.Add(time.Second)
		}
		spec.Conditions[0] = `time >= timestamp("` + at.Format(time.RFC3339) + `")`
		s := mustCompile(t, spec)
		d := s.Decide(context.Background(), Snapshot{Created: now.Add(-time.Hour), Now: now})
		if !d.Searched || !d.Next.Equal(at) {
			t.Errorf("offset %v: Next = %v (searched %v), want %v", offset, d.Next, d.Searched, at)
		}
		if d.Evaluations > 1+23 {
			t.Errorf("offset %v: %d evaluations, want at most 24", offset, d.Evaluations)
		}
	}
}

func TestCompileErrorsNameTheField(t *testing.T) {
	f := false
	named := func(name string) v1alpha1.Target {
		return v1alpha1.Target{Name: name, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "x"}}
	}
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.CleanerSpec)
		want string
	}{
		{"syntax error", func(s *v1alpha1.CleanerSpec) { s.Conditions = []string{"true", "time >"} }, "spec.conditions[1]: Invalid value"},
		{"not a bool", func(s *v1alpha1.CleanerSpec) { s.Conditions = []string{`"yes"`} }, "spec.conditions[0]: Invalid value: must evaluate to a bool, not string"},
		{"undeclared variable", func(s *v1alpha1.CleanerSpec) { s.Conditions = []string{"revision == null"} }, "undeclared reference to 'revision'"},
		{"target not evaluated is not a variable", func(s *v1alpha1.CleanerSpec) {
			t := named("cm")
			t.IncludeWhenEvaluating = &f
			s.Targets = []v1alpha1.Target{t}
			s.Conditions = []string{"cm == null"}
		}, "spec.conditions[0]: Invalid value: ERROR: <input>:1:1: undeclared reference to 'cm'"},
		{"invalid identifier", func(s *v1alpha1.CleanerSpec) { s.Targets = []v1alpha1.Target{named("my-target")} }, "spec.targets[0].name: Invalid value: \"my-target\": must be a CEL identifier"},
		{"reserved word", func(s *v1alpha1.CleanerSpec) { s.Targets = []v1alpha1.Target{named("time")} }, "spec.targets[0].name: Invalid value: \"time\": is a reserved word"},
		{"duplicate", func(s *v1alpha1.CleanerSpec) { s.Targets = []v1alpha1.Target{named("a"), named("a")} }, "spec.targets[1].name: Duplicate value: \"a\""},
		{"name and selector", func(s *v1alpha1.CleanerSpec) {
			t := named("a")
			t.Reference.MatchLabels = map[string]string{"app": "x"}
			s.Targets = []v1alpha1.Target{t}
		}, "spec.targets[0].reference: Invalid value: \"x\": set either name or matchLabels/matchExpressions, not both"},
		{"neither name nor selector", func(s *v1alpha1.CleanerSpec) {
			t := named("a")
			t.Reference.Name = ""
			s.Targets = []v1alpha1.Target{t}
		}, "spec.targets[0].reference: Required value"},
		{"bad selector", func(s *v1alpha1.CleanerSpec) {
			t := named("a")
			t.Reference.Name = ""
			t.Reference.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}
			s.Targets = []v1alpha1.Target{t}
		}, "spec.targets[0].reference: Invalid value"},
		{"ttl", func(s *v1alpha1.CleanerSpec) { s.TTL = "five days" }, "spec.ttl: Invalid value: \"five days\""},
		{"period too short", func(s *v1alpha1.CleanerSpec) { s.Retry.Period = "1s" }, "spec.retry.period: Invalid value: \"1s\": must be at least 10s"},
		{"sink", func(s *v1alpha1.CleanerSpec) { s.CloudEventSink = "ftp://x" }, "spec.cloudEventSink: Invalid value"},
		{"duplicate release", func(s *v1alpha1.CleanerSpec) {
			s.Helm = &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "a"}, {Name: "a"}}}
		}, "spec.helm.releases[1].name: Duplicate value"},
		{"cost bomb", func(s *v1alpha1.CleanerSpec) {
			s.Conditions = []string{"revisions.items.all(a, revisions.items.all(b, revisions.items.all(c, a == b && b == c)))"}
		}, "spec.conditions[0]: Invalid value: estimated worst-case cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := exampleSpec(false)
			tc.edit(&spec)
			_, errs := Compile(spec)
			if len(errs) == 0 {
				t.Fatalf("Compile accepted the spec; want an error containing %q", tc.want)
			}
			if got := errs.ToAggregate().Error(); !strings.Contains(got, tc.want) {
				t.Fatalf("Compile error:\n%s\nwant it to contain %q", got, tc.want)
			}
		})
	}
}

// TestRuntimeErrorsAreFalse: a condition that fails at run time — a missing field, a value that
// is not a bool, a cost limit hit — is false with the error, never a panic and never due.
func TestRuntimeErrorsAreFalse(t *testing.T) {
	for _, tc := range []struct {
		name, cond, want string
		objs             map[string][]map[string]any
		timeout          time.Duration
	}{
		{"missing key", `nginx.spec.replicas > 0`, "no such key", map[string][]map[string]any{"nginx": {{"spec": map[string]any{}}}}, 0},
		{"null target", `nginx.spec.replicas > 0`, "", nil, 0},
		{"not a bool", `nginx.metadata.name`, "did not evaluate to a bool", map[string][]map[string]any{"nginx": {{"metadata": map[string]any{"name": "x"}}}}, 0},
		{"runtime cost", `revisions.items.all(a, revisions.items.all(b, a.metadata.name.size() >= 0))`, "cost limit exceeded", map[string][]map[string]any{"revisions": manyObjects(MaxSelectedItems)}, time.Minute},
		{"deadline", `revisions.items.all(a, revisions.items.all(b, a.metadata.name.size() >= 0))`, "deadline exceeded", map[string][]map[string]any{"revisions": manyObjects(MaxSelectedItems)}, time.Microsecond},
		{"too many objects", `revisions.items.size() >= 0`, "more than 1000", map[string][]map[string]any{"revisions": manyObjects(MaxSelectedItems + 1)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.CleanerSpec{TTL: "1h", Retry: v1alpha1.Retry{Monotonic: true}, Conditions: []string{tc.cond},
				Targets: []v1alpha1.Target{
					{Name: "nginx", Reference: v1alpha1.Reference{Version: "v1", Kind: "Service", Name: "nginx"}},
					{Name: "revisions", Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", MatchLabels: map[string]string{"a": "b"}}},
				}}
			s, errs := Compile(spec)
			if len(errs) > 0 {
				t.Fatalf("Compile: %v", errs.ToAggregate())
			}
			if tc.timeout > 0 {
				s.timeout = tc.timeout
			}
			d := s.Decide(context.Background(), Snapshot{Created: created, Now: created.Add(2 * time.Hour), Objects: tc.objs})
			if d.Due || len(d.Results) != 1 || d.Results[0].Value {
				t.Fatalf("Decide = %+v; want not due, the condition false", d)
			}
			if d.Searched || d.Evaluations != 1 {
				t.Errorf("Decide searched after a failed evaluation: %+v", d)
			}
			if !d.Next.Equal(created.Add(2*time.Hour + DefaultPeriod)) {
				t.Errorf("Next = %v; want now + the default period", d.Next)
			}
			if err := d.Results[0].Err; err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func manyObjects(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"metadata": map[string]any{"name": strings.Repeat("x", 10)}}
	}
	return out
}
