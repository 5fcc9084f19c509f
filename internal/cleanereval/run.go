package cleanereval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = manifest.ExitOK
	ExitError = manifest.ExitError
	ExitUsage = manifest.ExitUsage
)

const longText = `Evaluates Cleaners (kustos.io/v1alpha1) offline against the objects in the input, with the
controller's code, and prints one JSON object per Cleaner per line, sorted by namespace and name:

  {"cleaner":"ns/name","expired":bool,"expiresAt":T,"targets":{"<name>":count},
   "conditions":[{"index":0,"value":true}|{"index":0,"error":"…"}],"due":bool,
   "nextEvaluation":T|null,"evaluations":N}

T is an RFC 3339 time in UTC; nextEvaluation is null when due; evaluations counts evaluations
of the whole condition set, including a monotonic search. Input is YAML (one or more documents)
or JSON, also kind: List, e.g. the Cleaner's file and

  kubectl get -n NS revisions.serving.knative.dev,services.serving.knative.dev -o yaml

Kinds are matched as the cluster's RESTMapper would (kind or resource name, any case; resource
names guessed as lower-case plurals).

Exit status: 0 on success; 2 for bad flags, unreadable input or an invalid Cleaner (FILE:LINE
and the field path say what is wrong).
`

// Line is one output line.
type Line struct {
	Cleaner        string         `json:"cleaner"`
	Expired        bool           `json:"expired"`
	ExpiresAt      time.Time      `json:"expiresAt"`
	Targets        map[string]int `json:"targets"`
	Conditions     []Condition    `json:"conditions"`
	Due            bool           `json:"due"`
	NextEvaluation *time.Time     `json:"nextEvaluation"`
	Evaluations    int            `json:"evaluations"`
}

// Condition is one condition's value or error.
type Condition struct {
	Index int    `json:"index"`
	Value *bool  `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// name is the command's path.
const name = "kustos cleaner eval"

// Run executes `kustos cleaner eval` with args (after "eval"). It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.ExecuteAlone(NewCommand(stdin, stdout, stderr), name, args, stdout, stderr)
}

// NewCommand is `kustos cleaner eval`.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := manifest.NewCommand(name, "-f FILE [-f FILE]... [--now RFC3339]",
		"evaluate Cleaners offline against objects in YAML or JSON files", longText, stderr)
	cmd.Run = func(now time.Time) int { return eval(cmd, now, stdin, stdout, stderr) }
	return cmd.Cobra
}

func eval(cmd *manifest.Command, now time.Time, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := cmd.Fail
	objs, err := cmd.Load(stdin, decode)
	if err != nil {
		return fail("%v", err)
	}
	lines, err := Evaluate(context.Background(), objs, now)
	if err != nil {
		return fail("%v", err)
	}
	enc := json.NewEncoder(stdout)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			fmt.Fprintf(stderr, "kustos cleaner eval: writing the output: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}

// decode reads Cleaners as the typed API (strictly, like the API server would) and every other
// object as unstructured.
func decode(apiVersion, kind string) runtime.Object {
	if apiVersion == v1alpha1.GroupVersion.String() && kind == "Cleaner" {
		return &v1alpha1.Cleaner{}
	}
	return manifest.Unstructured(apiVersion, kind)
}

// Evaluate decides every Cleaner among objs as of now. An invalid Cleaner is an error naming
// its file, line and the field path.
func Evaluate(ctx context.Context, objs []manifest.Object, now time.Time) ([]Line, error) {
	type cleaner struct {
		obj  *v1alpha1.Cleaner
		spec *ephemeral.Spec
	}
	var cleaners []cleaner
	var others []*unstructured.Unstructured
	for _, o := range objs {
		switch obj := o.Object.(type) {
		case *v1alpha1.Cleaner:
			if obj.Namespace == "" {
				obj.Namespace = "default"
			}
			spec, errs := ephemeral.Compile(obj.Spec)
			if spec != nil {
				errs = append(errs, spec.CheckNamespace(obj.Namespace)...)
			}
			if len(errs) > 0 {
				return nil, &manifest.InputError{File: o.File, Line: o.Line, Msg: fmt.Sprintf("Cleaner %s/%s: %v", obj.Namespace, obj.Name, errs.ToAggregate())}
			}
			if obj.CreationTimestamp.IsZero() {
				return nil, &manifest.InputError{File: o.File, Line: o.Line, Msg: fmt.Sprintf("Cleaner %s/%s: metadata.creationTimestamp is missing (the TTL counts from it)", obj.Namespace, obj.Name)}
			}
			cleaners = append(cleaners, cleaner{obj: obj, spec: spec})
		case *unstructured.Unstructured:
			if obj.GetNamespace() == "" {
				obj.SetNamespace("default")
			}
			others = append(others, obj)
		}
	}
	sort.SliceStable(cleaners, func(i, j int) bool {
		a, b := cleaners[i].obj, cleaners[j].obj
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	lines := make([]Line, 0, len(cleaners))
	for _, c := range cleaners {
		gathered := c.spec.Gather(c.obj.Namespace, others)
		d := c.spec.Decide(ctx, ephemeral.Snapshot{Created: c.obj.CreationTimestamp.Time, Now: now, Objects: gathered})
		l := Line{
			Cleaner: c.obj.Namespace + "/" + c.obj.Name, Expired: d.Expired, ExpiresAt: d.ExpiresAt.UTC(),
			Targets: map[string]int{}, Conditions: []Condition{}, Due: d.Due, Evaluations: d.Evaluations,
		}
		for name, list := range gathered {
			l.Targets[name] = len(list)
		}
		for _, r := range d.Results {
			cond := Condition{Index: r.Index}
			if r.Err != nil {
				cond.Error = r.Err.Error()
			} else {
				v := r.Value
				cond.Value = &v
			}
			l.Conditions = append(l.Conditions, cond)
		}
		if !d.Due {
			next := d.Next.UTC()
			l.NextEvaluation = &next
		}
		lines = append(lines, l)
	}
	return lines, nil
}
