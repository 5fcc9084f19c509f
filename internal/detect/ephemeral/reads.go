package ephemeral

import (
	"maps"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// What a condition reads of its targets' objects, from its checked AST: a target whose objects
// the conditions read only as apiVersion, kind and metadata (labels, annotations, name,
// creationTimestamp, …) is cached and read as metadata, not as whole objects (a Deployment's
// metadata is a small part of it). The analysis is conservative: any use of an object, a
// selector target or its items that it does not know to stay within metadata (passing one to
// a function, comparing two objects, building a list of them, iterating over an object's keys)
// counts as reading the whole object.

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
)

// value is an expression's shape and the target variable it comes from.
type value struct {
	target string
	shape  shape
}

// followed says whether v is an object, a selection or items (a use of it other than the ones
// the analysis knows reads the whole object).
func (v value) followed() bool { return v.shape == object || v.shape == selection || v.shape == items }

// wholeReads returns the names of vars whose objects the checked expression e reads beyond
// apiVersion, kind and metadata.
func wholeReads(e celast.Expr, vars []variable) map[string]bool {
	scope := make(map[string]value, len(vars))
	for _, v := range vars {
		s := object
		if v.selector {
			s = selection
		}
		scope[v.name] = value{target: v.name, shape: s}
	}
	w := reads{whole: map[string]bool{}}
	w.use(w.visit(e, scope))
	return w.whole
}

type reads struct{ whole map[string]bool }

// use records that v is used in a way the analysis does not follow.
func (w *reads) use(v value) {
	if v.followed() {
		w.whole[v.target] = true
	}
}

// visit returns e's value, recording every target read beyond metadata inside it.
func (w *reads) visit(e celast.Expr, scope map[string]value) value {
	switch e.Kind() {
	case celast.IdentKind:
		return scope[e.AsIdent()]
	case celast.SelectKind:
		s := e.AsSelect()
		return w.field(w.visit(s.Operand(), scope), s.FieldName())
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
		w.whole[v.target] = true
	case selection:
		if name == "items" {
			return value{target: v.target, shape: items}
		}
		w.whole[v.target] = true
	case metadata:
		return v
	}
	return value{}
}

// call is the value of a function call: an index into an object or the items, size() of the
// items and a comparison with null are followed; any other use of an object is a whole read.
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
		case object, selection:
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
			return value{} // whether a named target exists
		}
	}
	w.use(recv)
	for _, a := range args {
		w.use(a)
	}
	return value{}
}

// comprehension follows a macro over a selector's items (exists, all, filter…): its iteration
// variable is an object there. Iterating over an object's or a selection's keys is a whole read.
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
