package ephemeral

import (
	"container/list"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"

	"github.com/kustos-dev/kustos/internal/metrics"
)

// Bounds of the process-wide caches of CEL environments and compiled conditions. CI-generated
// Cleaners (one per preview) share a few condition texts and target names: compiling each
// text once for every Cleaner that uses it saves the compile (most of a spec's) and the memory
// of one program per Cleaner.
const (
	// maxPrograms bounds the compiled conditions held. One program of the Knative preview example's
	// condition (and its checked AST) is about 16 KiB (BenchmarkCompileSpecShared's retained-MiB
	// before the cache, per Cleaner), so the cache holds at most some 64 MiB for conditions like
	// it; a longer condition costs more, which the API's bound on a condition's length limits.
	maxPrograms = 4096
	// maxEnvs bounds the environments held, one per distinct set of declared variables; an
	// environment is a few KiB over the shared base one.
	maxEnvs = 1024
)

// lru is a bounded, concurrency-safe cache from a key to a value computed once: callers that
// miss the same key at once wait for one computation. The least recently used entry goes when
// the bound is passed.
type lru[V any] struct {
	name string // the metric's cache label
	max  int

	mu    sync.Mutex
	order *list.List // of *lruEntry[V], most recently used first
	byKey map[string]*list.Element
}

type lruEntry[V any] struct {
	key  string
	once sync.Once
	done bool // set when the computation returned (not when it panicked)
	val  V
}

func newLRU[V any](name string, maxEntries int) *lru[V] {
	return &lru[V]{name: name, max: maxEntries, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns key's value, computing it with compute if the cache does not hold it.
func (c *lru[V]) get(key string, compute func() V) V {
	c.mu.Lock()
	el, ok := c.byKey[key]
	if ok {
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&lruEntry[V]{key: key})
		c.byKey[key] = el
		for c.order.Len() > c.max {
			last := c.order.Back()
			c.order.Remove(last)
			delete(c.byKey, last.Value.(*lruEntry[V]).key)
			metrics.CELCache.WithLabelValues(c.name, "eviction").Inc()
		}
	}
	c.mu.Unlock()
	if ok {
		metrics.CELCache.WithLabelValues(c.name, "hit").Inc()
	} else {
		metrics.CELCache.WithLabelValues(c.name, "miss").Inc()
	}
	e := el.Value.(*lruEntry[V])
	e.once.Do(func() {
		defer func() {
			if !e.done { // compute panicked: forget the entry, let the panic go on
				c.remove(el)
			}
		}()
		e.val = compute()
		e.done = true
	})
	if !e.done { // a waiter of a computation that panicked
		return compute()
	}
	return e.val
}

func (c *lru[V]) remove(el *list.Element) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := el.Value.(*lruEntry[V]).key
	if c.byKey[key] == el {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

// len is the number of entries held.
func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// reset empties the cache (tests).
func (c *lru[V]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.byKey)
}

type envResult struct {
	env *cel.Env
	err error
}

type programResult struct {
	prg program
	err error
}

var (
	envCache     = newLRU[envResult]("env", maxEnvs)
	programCache = newLRU[programResult]("program", maxPrograms)
)

// canonical is vars sorted by name then kind, as the caches' keys and the environments built
// for them have them: the order in which a Cleaner lists its targets changes neither.
func canonical(vars []variable) []variable {
	vs := slices.Clone(vars)
	slices.SortFunc(vs, func(a, b variable) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		switch {
		case a.selector == b.selector:
			return 0
		case b.selector:
			return -1
		default:
			return 1
		}
	})
	return vs
}

// varsKey is the key of canonical variables: names are CEL identifiers, so neither ':' nor ','
// is in one.
func varsKey(vs []variable) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(v.name)
		if v.selector {
			b.WriteString(":s")
		} else {
			b.WriteString(":o")
		}
	}
	return b.String()
}

// compiler compiles the conditions of one set of variables through the caches.
type compiler struct {
	vars []variable // canonical
	key  string
	env  *cel.Env
}

// newCompiler returns the compiler of vars, with the environment that declares them (shared by
// every Cleaner with the same variables), or the error building it.
func newCompiler(vars []variable) (*compiler, error) {
	vs := canonical(vars)
	key := varsKey(vs)
	r := envCache.get(key, func() envResult {
		env, err := newEnv(vs)
		return envResult{env, err}
	})
	if r.err != nil {
		return nil, r.err
	}
	return &compiler{vars: vs, key: key, env: r.env}, nil
}

// compile returns src compiled, or its compile error, both shared by every Cleaner that declares
// the same variables and has the same condition: the program is safe for concurrent
// evaluation, and the error the same as a fresh compile's.
func (c *compiler) compile(src string) (program, error) {
	r := programCache.get(c.key+"\x00"+src, func() programResult {
		est := sizeEstimator{selectors: make(map[string]bool, len(c.vars))}
		for _, v := range c.vars {
			est.selectors[v.name] = v.selector
		}
		prg, err := compileCondition(c.env, est, c.vars, src)
		return programResult{prg, err}
	})
	return r.prg, r.err
}
