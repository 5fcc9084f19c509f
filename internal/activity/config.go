package activity

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Source is one entry of the sources file (--inactivity-config, the chart's
// inactivity.sources): how to tell that a source is collecting, and when each target was last
// active according to it.
type Source struct {
	// Name names the source in Events, logs, metrics and `kustos inactivity plan`: nginx, bastion.
	Name string `json:"name"`
	// Available is an instant PromQL query (a template, like Data): the source is collecting when
	// it returns at least one sample whose value is not 0. Nothing, or only zeros: the source is
	// unavailable, and no target is declared inactive (missing data is never inactivity).
	Available string `json:"available"`
	// Data is a PromQL template run once per check for every target. In "instant" mode (the
	// default) it returns, per target, the Unix time of its last activity within {{.Window}}
	// (e.g. max_over_time of a timestamp() subquery at {{.Step}}). In "range" mode it is run as
	// a range query over the window at the step and returns a value > 0 at the steps a target
	// was active (CrownLabs' queryNginxData style); the last such step is the last activity.
	Data string `json:"data"`
	// Mode is "instant" (default: one number per target, cheap) or "range".
	Mode string `json:"mode,omitempty"`
	// Labels name the result labels that identify a target (defaults namespace and name).
	Labels ResultLabels `json:"labels,omitempty"`
	// Target says which result series is a target's: templates over the target's namespace,
	// name, kind, labels and annotations whose values must equal the result labels (defaults
	// {{.Namespace}} and {{.Name}}). E.g. {{index .Labels "app.kubernetes.io/instance"}}.
	Target TargetTemplates `json:"target,omitempty"`
	// MinRange is {{.Range}} less the step (the range of rate/increase inside the query is
	// minRange + step; default 5m): at least two scrapes, so that with the step added no
	// activity between two steps is missed.
	MinRange string `json:"minRange,omitempty"`
}

// ResultLabels name the labels of a data query's result that identify a target.
type ResultLabels struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// TargetTemplates map a target to the values of its result labels.
type TargetTemplates struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Modes of a data query.
const (
	ModeInstant = "instant"
	ModeRange   = "range"
)

// DefaultMinRange is a source's minRange when it names none.
const DefaultMinRange = 5 * time.Minute

// DefaultSources are the sources when no file is given: ingress-nginx's request counter (by the
// namespace and service of the Ingress backend) and the CrownLabs bastion tracker's
// bastion_ssh_connections gauge. A cluster without one of them must say so in a sources file:
// an unavailable source keeps every target from being declared inactive.
func DefaultSources() []Source {
	return []Source{
		{
			Name:      "nginx",
			Available: `count(nginx_ingress_controller_config_last_reload_successful)`,
			Data:      `max by (namespace, service) (max_over_time((timestamp(sum by (namespace, service) (increase(nginx_ingress_controller_requests[{{.Range}}])) > 0))[{{.Window}}:{{.Step}}]))`,
			Labels:    ResultLabels{Namespace: "namespace", Name: "service"},
		},
		{
			Name:      "bastion",
			Available: `count(bastion_ssh_connections)`,
			Data:      `max by (namespace, name) (max_over_time((timestamp(max by (namespace, name) (max_over_time(bastion_ssh_connections[{{.Range}}])) > 0))[{{.Window}}:{{.Step}}]))`,
			Labels:    ResultLabels{Namespace: "namespace", Name: "name"},
		},
	}
}

// QueryVars are what a query template sees, as Prometheus durations (1w, 2d, 5m).
type QueryVars struct {
	Window, Step, Range string
}

// TargetVars are what a target template sees.
type TargetVars struct {
	Namespace, Name, Kind string
	Labels, Annotations   map[string]string
}

// Compiled is a Source whose templates parsed and whose fields are complete.
type Compiled struct {
	Source
	minRange             time.Duration
	available, data      *template.Template
	targetNS, targetName *template.Template
}

// ErrNoRef: a source's target templates give an empty namespace or name for a target (a label
// they read is missing on it).
var ErrNoRef = errors.New("the target templates give no namespace or no name for this target")

// ErrConfig marks a sources file Kustos cannot use.
var ErrConfig = errors.New("invalid inactivity sources")

// labelName is a classic Prometheus label name: the labels are used in `by (…)` clauses.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

var sourceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$`)

// maxSources bounds the file: every source is one query per check.
const maxSources = 16

// LoadConfig parses the sources file: a YAML (or JSON) list of sources. Every problem is named by
// its position and field (sources[1].data: …), as Kubernetes names a field.
func LoadConfig(data []byte) ([]Compiled, error) {
	var sources []Source
	if err := yaml.UnmarshalStrict(data, &sources); err != nil {
		return nil, fmt.Errorf("%w: want a YAML list of sources (name, available, data, ...): %w", ErrConfig, err)
	}
	return Compile(sources)
}

// Compile checks sources and parses their templates.
func Compile(sources []Source) ([]Compiled, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("%w: no sources: without one, nothing can ever be seen as active or inactive", ErrConfig)
	}
	if len(sources) > maxSources {
		return nil, fmt.Errorf("%w: %d sources, at most %d (each is one query per check)", ErrConfig, len(sources), maxSources)
	}
	var errs []error
	seen := map[string]bool{}
	out := make([]Compiled, 0, len(sources))
	for i, s := range sources {
		path := fmt.Sprintf("sources[%d]", i)
		bad := func(field, format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
		}
		c := Compiled{Source: s}
		switch {
		case !sourceName.MatchString(s.Name):
			bad("name", "%q: want 1-32 lowercase letters, digits, - or _ (it names the source in Events and metrics)", lifecycle.Clip(s.Name, 40))
		case seen[s.Name]:
			bad("name", "%q is used twice", s.Name)
		}
		seen[s.Name] = true
		if c.Mode == "" {
			c.Mode = ModeInstant
		}
		if c.Mode != ModeInstant && c.Mode != ModeRange {
			bad("mode", "%q: want %q or %q", lifecycle.Clip(s.Mode, 40), ModeInstant, ModeRange)
		}
		if c.Labels.Namespace == "" {
			c.Labels.Namespace = "namespace"
		}
		if c.Labels.Name == "" {
			c.Labels.Name = "name"
		}
		for field, v := range map[string]string{"labels.namespace": c.Labels.Namespace, "labels.name": c.Labels.Name} {
			if !labelName.MatchString(v) {
				bad(field, "%q is not a Prometheus label name", lifecycle.Clip(v, 40))
			}
		}
		if c.Target.Namespace == "" {
			c.Target.Namespace = "{{.Namespace}}"
		}
		if c.Target.Name == "" {
			c.Target.Name = "{{.Name}}"
		}
		c.minRange = DefaultMinRange
		if s.MinRange != "" {
			// Kustos's one duration grammar, as every other length in its configuration.
			d, err := lifecycle.ParseDuration(s.MinRange)
			if err != nil || d <= 0 {
				bad("minRange", "%q: want a positive duration (30s, 5m, 1h30m)", lifecycle.Clip(s.MinRange, 40))
			} else {
				c.minRange = d
			}
		}
		var err error
		parse := func(field, text string, required bool, probe any) *template.Template {
			if strings.TrimSpace(text) == "" {
				if required {
					bad(field, "empty")
				}
				return nil
			}
			t, perr := template.New(field).Option("missingkey=error").Parse(text)
			if perr != nil {
				bad(field, "not a template: %v", perr)
				return nil
			}
			// Render once with example values: a field that does not exist ({{.Windw}}) is an
			// error now, not at the first check.
			if err = t.Execute(&bytes.Buffer{}, probe); err != nil {
				bad(field, "%v", err)
				return nil
			}
			return t
		}
		qv := QueryVars{Window: "1w", Step: "1m", Range: "5m"}
		tv := TargetVars{Namespace: "ns", Name: "n", Kind: "Deployment", Labels: map[string]string{}, Annotations: map[string]string{}}
		c.available = parse("available", s.Available, true, qv)
		c.data = parse("data", s.Data, true, qv)
		c.targetNS = parse("target.namespace", c.Target.Namespace, true, tv)
		c.targetName = parse("target.name", c.Target.Name, true, tv)
		out = append(out, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return out, nil
}

// Ref is the (namespace, name) a source reports a target's activity under.
type Ref struct {
	Namespace, Name string
}

// RefOf is the result labels a target's activity is reported under by this source.
func (c *Compiled) RefOf(t TargetVars) (Ref, error) {
	var ns, name bytes.Buffer
	if err := c.targetNS.Execute(&ns, t); err != nil {
		return Ref{}, fmt.Errorf("source %s: target.namespace: %w", c.Name, err)
	}
	if err := c.targetName.Execute(&name, t); err != nil {
		return Ref{}, fmt.Errorf("source %s: target.name: %w", c.Name, err)
	}
	ref := Ref{Namespace: ns.String(), Name: name.String()}
	if ref.Namespace == "" || ref.Name == "" {
		// A label the template reads is missing on this target: it could never be seen active,
		// and must not be taken for idle.
		return Ref{}, fmt.Errorf("source %s: %w: namespace %q, name %q", c.Name, ErrNoRef, ref.Namespace, ref.Name)
	}
	return ref, nil
}

// maxPoints is Prometheus's limit of points per series in a range query
// ("exceeded maximum resolution of 11,000 points per timeseries").
const maxPoints = 11000

// StepFor is the query step for a window: never finer than minStep, and coarse enough that the
// window has at most 11,000 points (step ≥ window / 11,000), in whole seconds.
func StepFor(window, minStep time.Duration) time.Duration {
	step := (window + maxPoints - 1) / maxPoints
	if r := step % time.Second; r != 0 {
		step += time.Second - r
	}
	if step < minStep {
		step = minStep
	}
	if step < time.Second {
		step = time.Second
	}
	return step
}

func (c *Compiled) render(t *template.Template, v QueryVars) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// promDuration writes d as Prometheus reads it (1w2d, 90s).
func promDuration(d time.Duration) string { return model.Duration(d).String() }
