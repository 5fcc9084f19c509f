package ephemeral

import (
	"fmt"
	"net/url"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// DefaultPeriod and DefaultHorizon apply when a Cleaner leaves retry.period or retry.horizon
// empty (the CRD defaults them too; a Cleaner read from a file has no defaulting).
const (
	DefaultPeriod  = time.Hour
	DefaultHorizon = 720 * time.Hour
	// MinPeriod keeps a Cleaner from asking to be evaluated in a busy loop.
	MinPeriod = 10 * time.Second
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Spec is a Cleaner's spec checked and compiled: durations parsed, selectors built, conditions
// compiled. It is built once per generation and is safe for concurrent use.
type Spec struct {
	TTL, Period, Horizon time.Duration
	Monotonic            bool
	Targets              []Target
	Releases             []v1alpha1.HelmRelease
	Sink                 string
	conditions           []program
	// timeout bounds one condition's evaluation (EvalTimeout; tests change it).
	timeout time.Duration
}

// Target is one spec.targets entry, checked.
type Target struct {
	Name string
	// Group, Version and Kind are as written; Kind may be a kind or a resource name in any case
	// (the controller resolves it through the RESTMapper).
	Group, Version, Kind string
	// Namespace is the reference's namespace as written (empty: the Cleaner's).
	Namespace string
	// ObjectName is set for a named target, Selector for a selector target.
	ObjectName string
	Selector   labels.Selector
	Delete     bool
	Evaluated  bool
	// Whole: a condition reads the target's objects beyond apiVersion, kind and metadata, so
	// they are read from the whole objects' informer; an evaluated target that is not Whole is
	// read as metadata. Fields are the union of what the conditions read of them.
	Whole  bool
	Fields Fields
}

// Conditions is the number of conditions.
func (s *Spec) Conditions() int { return len(s.conditions) }

// Compile checks spec and compiles its conditions. Every problem is reported with its field
// path (spec.conditions[1]: …), as the admission webhook returns them and as the controller
// writes them into the InvalidSpec condition when the webhook is off.
func Compile(spec v1alpha1.CleanerSpec) (*Spec, field.ErrorList) {
	root := field.NewPath("spec")
	var errs field.ErrorList
	s := &Spec{Monotonic: spec.Retry.Monotonic, Sink: spec.CloudEventSink, timeout: EvalTimeout}

	duration := func(p *field.Path, v string, def time.Duration) time.Duration {
		if v == "" && def > 0 {
			return def
		}
		d, err := lifecycle.ParseDuration(v)
		if err != nil {
			errs = append(errs, field.Invalid(p, v, err.Error()))
		}
		return d
	}
	s.TTL = duration(root.Child("ttl"), spec.TTL, 0)
	s.Period = duration(root.Child("retry", "period"), spec.Retry.Period, DefaultPeriod)
	if s.Period > 0 && s.Period < MinPeriod {
		errs = append(errs, field.Invalid(root.Child("retry", "period"), spec.Retry.Period, fmt.Sprintf("must be at least %s", MinPeriod)))
	}
	s.Horizon = duration(root.Child("retry", "horizon"), spec.Retry.Horizon, DefaultHorizon)
	if spec.Retry.Horizon != "" && s.Horizon < time.Second {
		errs = append(errs, field.Invalid(root.Child("retry", "horizon"), spec.Retry.Horizon, "must be at least 1s"))
	}
	if spec.CloudEventSink != "" {
		if u, err := url.Parse(spec.CloudEventSink); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(root.Child("cloudEventSink"), spec.CloudEventSink, "must be an absolute http or https URL"))
		}
	}

	var vars []variable
	seen := map[string]bool{}
	for i, t := range spec.Targets {
		p := root.Child("targets").Index(i)
		ct := Target{Name: t.Name, Group: t.Reference.APIGroup, Version: t.Reference.Version, Kind: t.Reference.Kind, Namespace: t.Reference.Namespace,
			ObjectName: t.Reference.Name, Delete: t.Delete, Evaluated: t.Evaluated()}
		switch {
		case !identifier.MatchString(t.Name):
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "must be a CEL identifier: a letter or _ followed by letters, digits or _"))
		case reserved[t.Name]:
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "is a reserved word in CEL or the time variable"))
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), t.Name))
		}
		seen[t.Name] = true
		if t.Reference.Version == "" {
			errs = append(errs, field.Required(p.Child("reference", "version"), ""))
		}
		if t.Reference.Kind == "" {
			errs = append(errs, field.Required(p.Child("reference", "kind"), ""))
		}
		hasSelector := len(t.Reference.MatchLabels) > 0 || len(t.Reference.MatchExpressions) > 0
		switch {
		case t.Reference.Name != "" && hasSelector:
			errs = append(errs, field.Invalid(p.Child("reference"), t.Reference.Name, "set either name or matchLabels/matchExpressions, not both"))
		case t.Reference.Name == "" && !hasSelector:
			errs = append(errs, field.Required(p.Child("reference"), "one of name or matchLabels/matchExpressions"))
		case hasSelector:
			sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: t.Reference.MatchLabels, MatchExpressions: t.Reference.MatchExpressions})
			if err != nil {
				errs = append(errs, field.Invalid(p.Child("reference"), "", err.Error()))
			}
			ct.Selector = sel
		}
		s.Targets = append(s.Targets, ct)
		if ct.Evaluated && identifier.MatchString(t.Name) && !reserved[t.Name] {
			vars = append(vars, variable{name: t.Name, selector: hasSelector})
		}
	}
	if spec.Helm != nil {
		rseen := map[string]bool{}
		for i, r := range spec.Helm.Releases {
			p := root.Child("helm", "releases").Index(i).Child("name")
			if r.Name == "" {
				errs = append(errs, field.Required(p, ""))
			} else if rseen[r.Name] {
				errs = append(errs, field.Duplicate(p, r.Name))
			}
			rseen[r.Name] = true
			s.Releases = append(s.Releases, r)
		}
	}

	cc, err := newCompiler(vars)
	if err != nil {
		return nil, append(errs, field.InternalError(root.Child("targets"), err))
	}
	for i, src := range spec.Conditions {
		prg, err := cc.compile(src)
		if err != nil {
			// The CEL error quotes the source where it matters; the whole expression again would bury it.
			errs = append(errs, field.Invalid(root.Child("conditions").Index(i), field.OmitValueType{}, err.Error()))
			continue
		}
		s.conditions = append(s.conditions, prg)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for i := range s.Targets {
		t := &s.Targets[i]
		if !t.Evaluated {
			continue
		}
		for _, c := range s.conditions {
			t.Fields = t.Fields.union(c.reads[t.Name])
		}
		t.Whole = t.Fields.Beyond()
	}
	return s, nil
}

// CheckNamespace refuses targets in a namespace other than the Cleaner's (namespace): a Cleaner
// acts only in its own. The errors are field.Forbidden, which the controller reports with
// reason Forbidden and the webhook as a denial.
func (s *Spec) CheckNamespace(namespace string) field.ErrorList {
	var errs field.ErrorList
	for i, t := range s.Targets {
		if t.Namespace != "" && t.Namespace != namespace {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "targets").Index(i).Child("reference", "namespace"),
				fmt.Sprintf("a Cleaner acts only in its own namespace %q, not in %q", namespace, t.Namespace)))
		}
	}
	return errs
}
