package ephemeral

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/metrics"
)

func cacheCount(cache, event string) float64 {
	var m dto.Metric
	if err := metrics.CELCache.WithLabelValues(cache, event).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// TestProgramShared: two Cleaners whose conditions have the same text and whose evaluated
// targets declare the same variables (whatever their order and references) share one program;
// any other variable set, or another text, compiles its own.
func TestProgramShared(t *testing.T) {
	named := func(name string) v1alpha1.Target {
		return v1alpha1.Target{Name: name, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: name + "-cm"}}
	}
	selector := func(name string) v1alpha1.Target {
		return v1alpha1.Target{Name: name, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", MatchLabels: map[string]string{"app": name}}}
	}
	spec := func(cond string, targets ...v1alpha1.Target) v1alpha1.CleanerSpec {
		return v1alpha1.CleanerSpec{TTL: "1h", Targets: targets, Conditions: []string{cond}}
	}
	const cond = `size(a) > 0 && size(b) > 0`
	for _, tc := range []struct {
		name       string
		one, other v1alpha1.CleanerSpec
		shared     bool
	}{
		{"same text and variables", spec(cond, named("a"), named("b")), spec(cond, named("a"), named("b")), true},
		{"other references, same variables", spec(cond, named("a"), named("b")),
			spec(cond, v1alpha1.Target{Name: "a", Reference: v1alpha1.Reference{Version: "v1", Kind: "Secret", Name: "x", Namespace: "n"}}, named("b")), true},
		{"targets in another order", spec(cond, named("a"), named("b")), spec(cond, named("b"), named("a")), true},
		{"another text", spec(cond, named("a"), named("b")), spec(`size(b) > 0 && size(a) > 0`, named("a"), named("b")), false},
		{"one more variable", spec(cond, named("a"), named("b")), spec(cond, named("a"), named("b"), named("c")), false},
		{"a selector instead of a name", spec(cond, named("a"), named("b")), spec(cond, named("a"), selector("b")), false},
		{"an unevaluated target less", spec(cond, named("a"), named("b")), spec(cond, named("a"), named("b"), v1alpha1.Target{
			Name: "c", Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "c"}, IncludeWhenEvaluating: new(bool)}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetCaches()
			hits, misses := cacheCount("program", "hit"), cacheCount("program", "miss")
			one, other := mustCompile(t, tc.one), mustCompile(t, tc.other)
			if got := one.conditions[0].prg == other.conditions[0].prg; got != tc.shared {
				t.Errorf("shared program: %v, want %v", got, tc.shared)
			}
			wantHits, wantMisses := 0.0, 2.0
			if tc.shared {
				wantHits, wantMisses = 1, 1
			}
			if h, m := cacheCount("program", "hit")-hits, cacheCount("program", "miss")-misses; h != wantHits || m != wantMisses {
				t.Errorf("program cache: %v hits, %v misses; want %v, %v", h, m, wantHits, wantMisses)
			}
		})
	}
}

// TestInvalidConditionCached: an invalid condition is compiled once, and its error, field path
// included, is what a fresh compile gives, whichever Cleaner (and index) it comes from.
func TestInvalidConditionCached(t *testing.T) {
	for _, cond := range []string{
		"time >",                       // syntax
		`revisions.items.size() > "a"`, // types
		`revisions.items.size()`,       // not a bool
		`nginx.spec.replicas > 0`,      // undeclared (nginx is not evaluated)
		`revisions.items.all(a, revisions.items.all(b, revisions.items.all(c, a == b && b == c)))`, // cost
	} {
		t.Run(cond, func(t *testing.T) {
			resetCaches()
			// Fresh: the environment and the compile as Compile did them before the caches.
			env, err := newEnv([]variable{{name: "revisions", selector: true}})
			if err != nil {
				t.Fatal(err)
			}
			_, fresh := compileCondition(env, sizeEstimator{selectors: map[string]bool{"revisions": true}}, []variable{{name: "revisions", selector: true}}, cond)
			if fresh == nil {
				t.Fatalf("%q compiles", cond)
			}
			misses := cacheCount("program", "miss")
			for i, conds := range [][]string{{cond}, {cond}, {"true", cond}} {
				spec := exampleSpec(true)
				spec.Conditions = conds
				s, errs := Compile(spec)
				if s != nil || len(errs) != 1 {
					t.Fatalf("Compile #%d: %v, %v", i, s, errs)
				}
				want := fmt.Sprintf("spec.conditions[%d]: Invalid value: %s", len(conds)-1, fresh)
				if got := errs[0].Error(); got != want {
					t.Errorf("Compile #%d:\n got %s\nwant %s", i, got, want)
				}
			}
			if m := cacheCount("program", "miss") - misses; m != 2 { // cond once, "true" once
				t.Errorf("%v misses, want 2", m)
			}
		})
	}
}

// TestCompileConcurrent: Cleaners compiled and evaluated at once share their programs without
// a race (go test -race).
func TestCompileConcurrent(t *testing.T) {
	resetCaches()
	specs := sharedSpecs(8)
	other := exampleSpec(true)
	other.Conditions = []string{"revisions.items.size() > 1"}
	specs = append(specs, other, other)
	out := make([]*Spec, len(specs)*4)
	now := expires.Add(time.Hour)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			s, errs := Compile(specs[i%len(specs)])
			if len(errs) > 0 {
				t.Error(errs)
				return
			}
			out[i] = s
			vars, err := s.variables(map[string][]map[string]any{"revisions": revisions(3, now.Add(-400*time.Hour))})
			if err != nil {
				t.Error(err)
				return
			}
			if rs := s.evaluate(context.Background(), vars, nil, now); rs[0].Err != nil {
				t.Error(rs[0].Err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, s := range out {
		first := out[i%len(specs)]
		if s.conditions[0].prg != first.conditions[0].prg {
			t.Errorf("spec %d: its own program", i)
		}
		if i%len(specs) < 8 && s.conditions[0].prg != out[0].conditions[0].prg {
			t.Errorf("spec %d: not the shared program", i)
		}
	}
	if n := programCache.len(); n != 2 {
		t.Errorf("%d programs cached, want 2", n)
	}
}

// TestLRUEviction: past its bound the cache drops the least recently used entry, counts the
// eviction, and computes a dropped key again.
func TestLRUEviction(t *testing.T) {
	c := newLRU[int]("test", 2)
	computed := 0
	get := func(k string) int {
		return c.get(k, func() int { computed++; return len(k) })
	}
	evictions := cacheCount("test", "eviction")
	get("a")
	get("bb")
	get("a") // a is now the most recently used
	get("ccc")
	if e := cacheCount("test", "eviction") - evictions; e != 1 {
		t.Errorf("%v evictions, want 1", e)
	}
	if c.len() != 2 {
		t.Errorf("%d entries, want 2", c.len())
	}
	get("a")
	if computed != 3 {
		t.Errorf("a computed again (%d computations): it was used last", computed)
	}
	get("bb")
	if computed != 4 {
		t.Errorf("bb not computed again (%d computations): it was the least recently used", computed)
	}
}

// TestProgramCacheBound: the program cache holds at most maxPrograms conditions.
func TestProgramCacheBound(t *testing.T) {
	resetCaches()
	cc, err := newCompiler(nil)
	if err != nil {
		t.Fatal(err)
	}
	evictions := cacheCount("program", "eviction")
	for i := range maxPrograms + 3 {
		if _, err := cc.compile(fmt.Sprintf("%d > 0", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := programCache.len(); n != maxPrograms {
		t.Errorf("%d programs cached, want %d", n, maxPrograms)
	}
	if e := cacheCount("program", "eviction") - evictions; e != 3 {
		t.Errorf("%v evictions, want 3", e)
	}
}

// TestLRUPanic: a computation that panics is not cached.
func TestLRUPanic(t *testing.T) {
	c := newLRU[int]("test", 2)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		c.get("a", func() int { panic("boom") })
	}()
	if v := c.get("a", func() int { return 1 }); v != 1 || c.len() != 1 {
		t.Errorf("after a panic: %d, %d entries", v, c.len())
	}
}
