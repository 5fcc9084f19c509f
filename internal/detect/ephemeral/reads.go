package ephemeral

import (
	"maps"
	"slices"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// What a condition reads of its targets' objects, from its checked AST: a target whose objects
// the conditions read only as apiVersion, kind and metadata (labels, annotations, name,
// creationTimestamp, …) is cached and read as metadata, not as whole objects (a Deployment's
// metadata is a small part of it). A target read beyond metadata is read from the whole
// objects' informer, whose cached copies keep only the field paths some Cleaner's conditions
// read of that kind (FieldRegistry): the analysis says which, a path read as a value (compared,
// passed to a function, iterated, indexed dynamically) keeping its whole subtree. It is
// conservative: any use of an object itself, a selector target or its items that it does not
// know to stay within metadata or a path (passing one to a function, comparing two objects,
// building a list of them, iterating over an object's keys) counts as reading all of it.

// Fields is what the conditions read of one target's objects beyond apiVersion, kind and
// metadata: nothing (the zero value: metadata only), the subtrees at Paths, or All of it.
type Fields struct {
	All bool
	// Paths are field paths from the object's root ([spec replicas]), sorted, none a prefix of
	// another; each keeps the subtree under it.
	Paths [][]string
}

// Beyond reports whether anything beyond apiVersion, kind and metadata is read.
func (f Fields) Beyond() bool { return f.All || len(f.Paths) > 0 }

// fieldSet accumulates one target's reads.
type fieldSet struct {
	all   bool
	paths map[string][]string // by pathKey
}

func (s *fieldSet) add(p []string) {
	if s.paths == nil {
		s.paths = map[string][]string{}
	}
	s.paths[pathKey(p)] = p
}

// fields is s as sorted, minimal Fields: a path under another one is dropped.
func (s *fieldSet) fields() Fields {
	if s == nil {
		return Fields{}
	}
	if s.all {
		return Fields{All: true}
	}
	var out [][]string
	for _, p := range s.paths {
		out = append(out, p)
	}
	slices.SortFunc(out, slices.Compare)
	minimal := out[:0]
	for _, p := range out {
		// Sorted: a prefix of p, if any, is the last path kept.
		if n := len(minimal); n > 0 && hasPrefix(p, minimal[n-1]) {
			continue
		}
		minimal = append(minimal, p)
	}
	return Fields{Paths: minimal}
}

func hasPrefix(p, prefix []string) bool {
	return len(prefix) <= len(p) && slices.Equal(p[:len(prefix)], prefix)
}

// pathKey joins a path with a byte no field name of a Kubernetes object holds.
func pathKey(p []string) string { return strings.Join(p, "\x00") }

// shape is what an expression's value is, as far as the analysis follows it.
type shape int

const (
	// The zero shape: not an object of a target, or nothing the analysis needs to follow (a
	// scalar).
	_ shape = iota
	// object: a target's object (or null when a named target does not exist).
	object
	// selection: a selector target's value, {items: [...]}.
	selection
	// items: a selector target's list of objects.
	items
	// metadata: an object's metadata or something in it: any read of it is a metadata read.
	metadata
	// sub: the value at a field path of an object, outside metadata (path).
	sub
)

// value is an expression's shape, the target variable it comes from and, for sub, its path.
type value struct {
	target string
	shape  shape
	path   []string
}

// fieldReads returns, per target variable of vars, what the checked expression e reads of its
// objects beyond apiVersion, kind and metadata; a variable read as metadata only is absent.
func fieldReads(e celast.Expr, vars []variable) map[string]Fields {
	scope := make(map[string]value, len(vars))
	for _, v := range vars {
		s := object
		if v.selector {
			s = selection
		}
		scope[v.name] = value{target: v.name, shape: s}
	}
	w := reads{sets: map[string]*fieldSet{}}
	w.use(w.visit(e, scope))
	out := make(map[string]Fields, len(w.sets))
	for name, s := range w.sets {
		out[name] = s.fields()
	}
	return out
}

type reads struct{ sets map[string]*fieldSet }

func (w *reads) set(target string) *fieldSet {
	s := w.sets[target]
	if s == nil {
		s = &fieldSet{}
		w.sets[target] = s
	}
	return s
}

// all records that target's objects are read beyond any path.
func (w *reads) all(target string) { w.set(target).all = true }

// use records that v is used in a way the analysis does not follow: an object, a selection or
// its items is read whole, a sub-object its whole subtree.
func (w *reads) use(v value) {
	switch v.shape {
	case object, selection, items:
		w.all(v.target)
	case sub:
		w.set(v.target).add(v.path)
	}
}

// visit returns e's value, recording every target read beyond metadata inside it.
func (w *reads) visit(e celast.Expr, scope map[string]value) value {
	switch e.Kind() {
	case celast.IdentKind:
		return scope[e.AsIdent()]
	case celast.SelectKind:
		s := e.AsSelect()
		v := w.field(w.visit(s.Operand(), scope), s.FieldName())
		if s.IsTestOnly() {
			// has(x.f): whether f is there, which the path's trimmed copy keeps (the maps
			// along it stay, even when f is absent).
			w.use(v)
			return value{}
		}
		return v
	case celast.CallKind:
		return w.call(e.AsCall(), scope)
	case celast.ComprehensionKind:
		w.comprehension(e.AsComprehension(), scope)
		return value{}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.use(w.visit(el, scope))
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			w.use(w.visit(m.Key(), scope))
			w.use(w.visit(m.Value(), scope))
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.use(w.visit(f.AsStructField().Value(), scope))
		}
	}
	return value{}
}

// field is the value of v's field name (v.name, v["name"], has(v.name)).
func (w *reads) field(v value, name string) value {
	switch v.shape {
	case object:
		switch name {
		case "metadata":
			return value{target: v.target, shape: metadata}
		case "apiVersion", "kind":
			return value{}
		}
		return value{target: v.target, shape: sub, path: []string{name}}
	case selection:
		if name == "items" {
			return value{target: v.target, shape: items}
		}
		w.all(v.target)
	case metadata:
		return v
	case sub:
		return value{target: v.target, shape: sub, path: append(slices.Clip(v.path), name)}
	}
	return value{}
}

// call is the value of a function call: an index into an object or the items, size() of the
// items and a comparison with null are followed; any other use of an object is a whole read,
// of a sub-object a read of its subtree.
func (w *reads) call(c celast.CallExpr, scope map[string]value) value {
	var recv value
	if c.IsMemberFunction() {
		recv = w.visit(c.Target(), scope)
	}
	args := make([]value, len(c.Args()))
	for i, a := range c.Args() {
		args[i] = w.visit(a, scope)
	}
	switch fn := c.FunctionName(); {
	case fn == operators.Index && len(args) == 2:
		switch args[0].shape {
		case items:
			w.use(args[1])
			return value{target: args[0].target, shape: object}
		case object, selection, sub:
			if name, ok := stringLiteral(c.Args()[1]); ok {
				return w.field(args[0], name)
			}
		case metadata:
			w.use(args[1]) // the key may itself read a target: web.metadata.labels[cm.data.k]
			return args[0]
		}
	case fn == overloads.Size && !c.IsMemberFunction() && len(args) == 1 && args[0].shape == items,
		fn == overloads.Size && c.IsMemberFunction() && len(args) == 0 && recv.shape == items:
		return value{}
	case (fn == operators.Equals || fn == operators.NotEquals) && len(args) == 2:
		if isNull(c.Args()[0]) || isNull(c.Args()[1]) {
			// Whether a named target exists; a sub-object's value is read (absent is an
			// error, not null).
			for _, a := range args {
				if a.shape == sub {
					w.use(a)
				}
			}
			return value{}
		}
	}
	w.use(recv)
	for _, a := range args {
		w.use(a)
	}
	return value{}
}

// comprehension follows a macro over a selector's items (exists, all, filter…): its iteration
// variable is an object there. Iterating over an object's or a selection's keys is a whole read,
// over a sub-object's a read of its subtree.
func (w *reads) comprehension(c celast.ComprehensionExpr, scope map[string]value) {
	rng := w.visit(c.IterRange(), scope)
	if rng.shape != items {
		w.use(rng)
	}
	w.use(w.visit(c.AccuInit(), scope))
	outer := maps.Clone(scope)
	delete(outer, c.AccuVar())
	inner := maps.Clone(outer)
	delete(inner, c.IterVar())
	delete(inner, c.IterVar2())
	if rng.shape == items {
		elem := c.IterVar()
		if c.HasIterVar2() {
			elem = c.IterVar2() // the first is the index
		}
		inner[elem] = value{target: rng.target, shape: object}
	}
	w.use(w.visit(c.LoopCondition(), inner))
	w.use(w.visit(c.LoopStep(), inner))
	w.use(w.visit(c.Result(), outer))
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func isNull(e celast.Expr) bool {
	return e.Kind() == celast.LiteralKind && e.AsLiteral() == types.NullValue
}
