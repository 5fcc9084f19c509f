package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// Limits of a condition's cost, as Kubernetes sets them for CEL in CRD validation rules
// (k8s.io/apiserver/pkg/apis/cel: PerCallLimit and StaticEstimatedCostLimit).
const (
	// RuntimeCostLimit is the cost one evaluation of one condition may spend; beyond it the
	// evaluation stops with an error (the condition counts as false).
	RuntimeCostLimit = 1_000_000
	// EstimatedCostLimit is the largest worst-case cost a condition may have at admission.
	EstimatedCostLimit = 10_000_000
	// MaxSelectedItems is the most objects a selector target gives the conditions; more is an
	// evaluation error. It is also the list size the cost estimate assumes for `<target>.items`.
	MaxSelectedItems = 1000
	// nominalSize is the size the cost estimate assumes for strings, lists and maps inside the
	// objects, whose real sizes are unknown at admission (objects are schemaless here, unlike
	// in a CRD rule). It only has to tell a condition that walks an object from one that
	// nests comprehensions without bound; RuntimeCostLimit bounds what really runs.
	nominalSize = 64
	// EvalTimeout bounds the wall time of one condition's evaluation.
	EvalTimeout = 100 * time.Millisecond
)

// TimeVariable is the name of the variable holding the evaluation time.
const TimeVariable = "time"

// reserved are CEL's reserved words and the names of its built-in constants, which a target
// name cannot be (the CEL specification's "Syntax" section).
var reserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "for": true, "function": true,
	"if": true, "import": true, "let": true, "loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true, "in": true, "true": true, "false": true, "null": true,
	TimeVariable: true,
}

// variable is one CEL variable of a Cleaner's conditions.
type variable struct {
	name     string
	selector bool
}

// baseEnv is the environment every Cleaner's conditions share: `time`, the standard macros and
// the extension libraries the API documents. Built once: setting up the libraries is most of
// what building an environment costs.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(TimeVariable, cel.TimestampType),
		ext.Strings(), ext.Lists(), ext.Sets(), ext.Math(), ext.Encoders(),
		cel.DefaultUTCTimeZone(true),
	)
})

// newEnv extends the base environment with one variable per evaluated target of a Cleaner.
func newEnv(vars []variable) (*cel.Env, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	opts := make([]cel.EnvOption, 0, len(vars))
	for _, v := range vars {
		t := cel.DynType // an object, or null when it does not exist
		if v.selector {
			t = cel.MapType(cel.StringType, cel.ListType(cel.DynType))
		}
		opts = append(opts, cel.Variable(v.name, t))
	}
	return base.Extend(opts...)
}

// sizeEstimator gives the cost estimate the sizes it cannot know: selector targets' item lists
// are at most MaxSelectedItems long (enforced when the objects are gathered), anything else
// in an object nominalSize.
type sizeEstimator struct{ selectors map[string]bool }

func (e sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if p := n.Path(); len(p) == 2 && e.selectors[p[0]] && p[1] == "items" {
		return &checker.SizeEstimate{Min: 0, Max: MaxSelectedItems}
	}
	return &checker.SizeEstimate{Min: 0, Max: nominalSize}
}

//nolint:gocritic // the signature is checker.CostEstimator's
func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// program is one compiled condition.
type program struct {
	source string
	prg    cel.Program
	// reads are, per target, the fields the condition reads of its objects beyond apiVersion,
	// kind and metadata (fieldReads); the targets it does not name are read as metadata.
	reads map[string]Fields
}

// compileCondition compiles one condition over vars in env: a syntax or type error, a result
// that cannot be a bool, or an estimated worst-case cost above EstimatedCostLimit is an error.
func compileCondition(env *cel.Env, est sizeEstimator, vars []variable, src string) (program, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return program{}, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return program{}, fmt.Errorf("must evaluate to a bool, not %s", t)
	}
	cost, err := env.EstimateCost(ast, est)
	if err != nil {
		return program{}, fmt.Errorf("estimating its cost: %w", err)
	}
	if cost.Max > EstimatedCostLimit {
		return program{}, fmt.Errorf("estimated worst-case cost %d exceeds the limit %d (nested comprehensions over the targets' items?)", cost.Max, EstimatedCostLimit)
	}
	prg, err := env.Program(ast, cel.CostLimit(RuntimeCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return program{}, err
	}
	return program{source: src, prg: prg, reads: fieldReads(ast.NativeRep().Expr(), vars)}, nil
}

// ErrNotBool is wrapped by the error of a condition whose value is not a bool.
var ErrNotBool = errors.New("condition did not evaluate to a bool")

// eval evaluates p with vars, within EvalTimeout and RuntimeCostLimit. Any failure is an
// error, never a panic: a condition that cannot be evaluated counts as false.
func (p program) eval(ctx context.Context, vars map[string]any, timeout time.Duration) (v bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = false, fmt.Errorf("evaluation panicked: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		return false, err
	}
	return asBool(out)
}

func asBool(v ref.Val) (bool, error) {
	if b, ok := v.(types.Bool); ok {
		return bool(b), nil
	}
	return false, fmt.Errorf("%w: got %s", ErrNotBool, v.Type().TypeName())
}
