package ephemeral

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// revisions builds n inactive preview revisions, as a Knative preview setup has them.
func revisions(n int, lastActive time.Time) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = revision(fmt.Sprintf("sfj-commit--account-%05d", i), "sfj-commit,preview-commit", "False", lastActive)
	}
	return out
}

// BenchmarkExampleCondition: one evaluation of exampleCondition over 100 revisions, the figure
// docs/performance.md quotes (µs per evaluation).
func BenchmarkExampleCondition(b *testing.B) {
	s := mustCompile(b, exampleSpec(false))
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
	s := mustCompile(b, exampleSpec(true))
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
	spec := exampleSpec(true)
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := Compile(spec); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// sharedSpecs are n CI-generated Cleaners' specs: each its own preview's names, every one the
// same targets' variables and the same condition text.
func sharedSpecs(n int) []v1alpha1.CleanerSpec {
	specs := make([]v1alpha1.CleanerSpec, n)
	for i := range specs {
		s := exampleSpec(true)
		s.Targets[0].Reference.Name = fmt.Sprintf("sfj-commit%05d--account", i)
		s.Targets[1].Reference.MatchLabels = map[string]string{"vtex.io/proxy": fmt.Sprintf("p%05d", i)}
		specs[i] = s
	}
	return specs
}

// BenchmarkCompileSpecShared: compiling 10,000 specs that share one condition text (one op is
// all 10,000), as at the controller's start with 10,000 CI-generated Cleaners. retained-MiB is
// the heap the 10,000 compiled specs hold after a GC. "cached" starts each op with empty caches
// (one miss, then hits); "per-spec" empties them before every spec, so each compiles its own
// environment and program, as before the caches.
func BenchmarkCompileSpecShared(b *testing.B) {
	const n = 10_000
	specs := sharedSpecs(n)
	for _, bc := range []struct {
		name    string
		perSpec bool
	}{{"cached", false}, {"per-spec", true}} {
		b.Run(bc.name, func(b *testing.B) {
			out := make([]*Spec, n)
			b.ReportAllocs()
			var retained float64
			for b.Loop() {
				clear(out)
				resetCaches()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				for i, spec := range specs {
					if bc.perSpec {
						resetCaches()
					}
					out[i] = mustCompile(b, spec)
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				retained = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
			}
			runtime.KeepAlive(out)
			b.ReportMetric(retained, "retained-MiB")
		})
	}
}

func resetCaches() {
	envCache.reset()
	programCache.reset()
}
