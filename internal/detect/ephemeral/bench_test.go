package ephemeral

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// revisions builds n inactive preview revisions, as the seed's Knative use case has them.
func revisions(n int, lastActive time.Time) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = revision(fmt.Sprintf("sfj-commit--account-%05d", i), "sfj-commit,preview-commit", "False", lastActive)
	}
	return out
}

// BenchmarkSeedCondition: one evaluation of the seed's condition over 100 revisions, the
// figure docs/performance.md quotes (µs per evaluation).
func BenchmarkSeedCondition(b *testing.B) {
	s := mustCompile(b, seedSpec(false))
	now := expires.Add(time.Hour)
	vars, err := s.variables(map[string][]map[string]any{"revisions": revisions(100, now.Add(-400*time.Hour))})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if rs := s.evaluate(ctx, vars, nil, now); !rs[0].Value {
			b.Fatal("the condition should hold")
		}
	}
}

// BenchmarkMonotonicSearch: a decision that searches the 30-day horizon (23 evaluations) over
// 100 revisions that turn inactive-long-enough 10 days from now.
func BenchmarkMonotonicSearch(b *testing.B) {
	s := mustCompile(b, seedSpec(true))
	now := expires.Add(time.Hour)
	snap := Snapshot{Created: created, Now: now, Objects: map[string][]map[string]any{"revisions": revisions(100, now.Add(-350*time.Hour))}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := s.Decide(ctx, snap); !d.Searched {
			b.Fatalf("no time found: %+v", d)
		}
	}
}

// BenchmarkCompile: compiling a Cleaner's spec, done once per generation.
func BenchmarkCompile(b *testing.B) {
	spec := seedSpec(true)
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := Compile(spec); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
