package ephemeral

import (
	"context"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// FuzzCompileAndDecide: whatever a team writes as a condition or a duration, Compile returns a
// spec or field errors — never a panic — and a compiled spec decides without panicking and is
// never due on an error.
func FuzzCompileAndDecide(f *testing.F) {
	for _, c := range []string{exampleCondition, "true", "time >", `nginx.spec.replicas > 0`, `revisions.items.map(r, r.metadata.name).size() > 1`,
		`base64.decode("aGk=") == b"hi"`, `math.greatest([1, 2]) == 2`, `"a,b".split(",").size() == 2`, `sets.contains([1], [1])`,
		`duration("1h") > duration("30m")`, `time - timestamp("2026-01-01T00:00:00Z") > duration("1h")`, "1/0 == 1", "[1,2][5] == 1"} {
		f.Add(c, "15d", "5h")
	}
	f.Fuzz(func(t *testing.T, cond, ttl, period string) {
		spec := exampleSpec(true)
		spec.TTL, spec.Retry.Period = ttl, period
		spec.Conditions = []string{cond}
		spec.Targets = append(spec.Targets, v1alpha1.Target{Name: "nginx", Reference: v1alpha1.Reference{Version: "v1", Kind: "Service", Name: "nginx"}})
		spec.Targets[0].Name = "svc"
		s, errs := Compile(spec)
		if s == nil {
			if len(errs) == 0 {
				t.Fatal("no spec and no error")
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := s.Decide(ctx, Snapshot{Created: created, Now: created.Add(s.TTL), Objects: map[string][]map[string]any{
			"revisions": revisions(3, created), "nginx": {{"spec": map[string]any{"replicas": int64(1)}}}}})
		if d.Due && d.Failed() {
			t.Fatalf("due although a condition failed: %+v", d)
		}
	})
}
