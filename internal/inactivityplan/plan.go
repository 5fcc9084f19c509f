package inactivityplan

import (
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/manifest"
	"github.com/kustos-dev/kustos/internal/state"
)

// Line is one output line: what happens next to one target.
type Line struct {
	// Key is the target's Key, which names its state Lease.
	Key lifecycle.Key `json:"key"`
	// Target is Kind[.group]/namespace/name (lifecycle.Target.String).
	Target string `json:"target"`
	// LastActivity is the latest activity known: the sources' and the Lease's (a restart after
	// a pause counts as activity now); nil: none within what the sources cover.
	LastActivity *time.Time `json:"lastActivity"`
	// Sources are the activity sources by name: "ok", or "unavailable" (not collecting, or
	// Prometheus could not be asked; Problems says which).
	Sources map[string]string `json:"sources"`
	// AlertsSent is the number of alerts already sent per the Lease, before this decision.
	AlertsSent int             `json:"alertsSent"`
	Next       inactivity.Next `json:"next"`
	// At is when Next happens (--now when it is due now); nil for none and unknown.
	At *time.Time `json:"at"`
	// Problems name metadata that cannot be used and why the activity is unknown.
	Problems []string `json:"problems,omitempty"`
}

// Options are what the controller's flags say, and what the activity check found.
type Options struct {
	// Now is the time of the decision (and of the activity check).
	Now time.Time
	// Kinds are --inactivity-kinds (expiry.ParseKinds).
	Kinds []schema.GroupVersionKind
	// TemplateRef is --template-ref-field (nil: none), naming objects of TemplateKind.
	TemplateRef  []string
	TemplateKind schema.GroupVersionKind
	// Settings are --inactivity-timeout, --max-alerts, --notification-interval,
	// --inactivity-persistent-default, --inactivity-pause-field and --probe-failures.
	Settings inactivity.Settings
	// Sources are the activity sources; Check is the one check of them, and Tracker has
	// observed it.
	Sources []activity.Compiled
	Check   activity.Result
	Tracker *activity.Tracker
}

// Where a kind of the input is used.
type role struct {
	target, template, namespace bool
	gvk                         schema.GroupVersionKind
}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Decoder is the manifest.Decoder for Plan: Leases (coordination.k8s.io/v1) are read as the
// typed API; Namespaces, objects of kinds and of templateKind (matched by group and kind,
// whatever the version) as unstructured; everything else is skipped.
func Decoder(kinds []schema.GroupVersionKind, templateKind schema.GroupVersionKind) manifest.Decoder {
	return func(apiVersion, kind string) runtime.Object {
		if apiVersion == coordinationv1.SchemeGroupVersion.String() && kind == "Lease" {
			return &coordinationv1.Lease{}
		}
		if r := roleOf(kinds, templateKind, apiVersion, kind); r.target || r.template || r.namespace {
			return manifest.Unstructured(apiVersion, kind)
		}
		return nil
	}
}

// roleOf says what an object of apiVersion and kind is to the plan: a Namespace, a target (the
// first of kinds with its group and kind: the controller reads its objects at that version), a
// template object, or nothing.
func roleOf(kinds []schema.GroupVersionKind, templateKind schema.GroupVersionKind, apiVersion, kind string) role {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return role{}
	}
	if gv.Group == namespaceGVK.Group && kind == namespaceGVK.Kind {
		return role{namespace: true, gvk: namespaceGVK}
	}
	var r role
	for _, k := range kinds {
		if k.Group == gv.Group && k.Kind == kind {
			r.target, r.gvk = true, k
			break
		}
	}
	r.template = templateKind.Kind != "" && templateKind.Group == gv.Group && templateKind.Kind == kind
	return r
}

// object is a target, template object or Namespace of the input, with where it is.
type object struct {
	src    manifest.Object
	u      *unstructured.Unstructured
	target lifecycle.Target
}

// lease is a state Lease of the input, read.
type lease struct {
	src manifest.Object
	l   *coordinationv1.Lease
	rec state.Record
}

func inputError(o manifest.Object, format string, args ...any) error {
	return &manifest.InputError{File: o.File, Line: o.Line, Msg: fmt.Sprintf(format, args...)}
}

// maxProblem bounds one entry of Line.Problems.
const maxProblem = 300

// Input is the plan's input, read and checked: the targets, Namespaces, template objects and
// state Leases of the dump.
type Input struct {
	namespaces map[string]*object
	templates  map[string]*object // by namespace/name
	targets    map[lifecycle.Key]*object
	leases     map[lifecycle.Key]*lease
}

// Read sorts objs (decoded with Decoder(kinds, templateKind)) into an Input. Input that cannot
// be used is an error naming its file and line: an object or Lease given twice, a target without
// metadata.name or metadata.creationTimestamp, a state Lease whose times do not parse.
func Read(objs []manifest.Object, kinds []schema.GroupVersionKind, templateKind schema.GroupVersionKind) (*Input, error) {
	in := &Input{namespaces: map[string]*object{}, templates: map[string]*object{},
		targets: map[lifecycle.Key]*object{}, leases: map[lifecycle.Key]*lease{}}
	for _, src := range objs {
		switch obj := src.Object.(type) {
		case *coordinationv1.Lease:
			rec, ok, err := state.ParseLease(obj)
			p, parts := rec.Key.Parts()
			if !ok || !parts || p.Detector != inactivity.DetectorName {
				continue // not Kustos state, or another detector's
			}
			if err != nil {
				return nil, inputError(src, "%v", err)
			}
			if prev, dup := in.leases[rec.Key]; dup {
				return nil, inputError(src, "state lease %s/%s holds the state of %s, as does %s/%s at %s:%d; give each Lease once",
					obj.Namespace, obj.Name, rec.Key, prev.l.Namespace, prev.l.Name, prev.src.File, prev.src.Line)
			}
			in.leases[rec.Key] = &lease{src: src, l: obj, rec: rec}
		case *unstructured.Unstructured:
			r := roleOf(kinds, templateKind, obj.GetAPIVersion(), obj.GetKind())
			if obj.GetName() == "" && (r.target || r.template || r.namespace) {
				return nil, inputError(src, "%s: metadata.name is missing", obj.GetKind())
			}
			if r.namespace {
				if prev, dup := in.namespaces[obj.GetName()]; dup {
					return nil, inputError(src, "Namespace/%s is also at %s:%d; give each object once", obj.GetName(), prev.src.File, prev.src.Line)
				}
				in.namespaces[obj.GetName()] = &object{src: src, u: obj}
				continue
			}
			if (r.target || r.template) && obj.GetNamespace() == "" {
				obj.SetNamespace("default")
			}
			if r.template {
				id := obj.GetNamespace() + "/" + obj.GetName()
				if prev, dup := in.templates[id]; dup {
					return nil, inputError(src, "%s %s is also at %s:%d; give each object once", obj.GetKind(), id, prev.src.File, prev.src.Line)
				}
				in.templates[id] = &object{src: src, u: obj}
			}
			if !r.target {
				continue
			}
			t := lifecycle.Target{Group: r.gvk.Group, Version: r.gvk.Version, Kind: r.gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
			key := lifecycle.KeyFor(inactivity.DetectorName, t)
			if prev, dup := in.targets[key]; dup {
				return nil, inputError(src, "%s is also at %s:%d; give each object once", t, prev.src.File, prev.src.Line)
			}
			in.targets[key] = &object{src: src, u: obj, target: t}
		}
	}
	for _, key := range in.keys() {
		obj := in.targets[key]
		if in.deleting(obj) {
			delete(in.targets, key) // being deleted: the controller decides nothing
			continue
		}
		if obj.u.GetCreationTimestamp().Time.IsZero() {
			return nil, inputError(obj.src, "%s: metadata.creationTimestamp is missing (a target never used is idle since its creation; set it to try a manifest not applied yet)", obj.target)
		}
	}
	return in, nil
}

// keys are the targets' Keys, sorted.
func (in *Input) keys() []lifecycle.Key {
	keys := make([]lifecycle.Key, 0, len(in.targets))
	for k := range in.targets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// deleting: the target or its Namespace is being deleted.
func (in *Input) deleting(obj *object) bool {
	ns := in.namespaces[obj.target.Namespace]
	return obj.u.GetDeletionTimestamp() != nil || (ns != nil && ns.u.GetDeletionTimestamp() != nil)
}

// Plan decides every target of the input as of o.Now, sorted by Key, as the controller does
// after its first activity check (o.Check, observed by o.Tracker). Metadata that cannot be used
// and unreadable state entries are warnings (FILE:LINE: what is wrong, once per value, as the
// controller's Events) and the target's Problems.
func (in *Input) Plan(o Options) (lines []Line, warnings []string) {
	statuses := map[string]string{}
	var sourceProblems []string
	for _, s := range o.Check.Sources {
		statuses[s.Name] = string(activity.StatusOK)
		if s.Status != activity.StatusOK {
			statuses[s.Name] = string(activity.StatusUnavailable)
			sourceProblems = append(sourceProblems, lifecycle.Clip(fmt.Sprintf("activity source %s: %s: %s", s.Name, s.Status, s.Detail), maxProblem))
		}
	}

	reported := map[string]bool{}
	keys := in.keys()
	lines = make([]Line, 0, len(keys))
	for _, key := range keys {
		obj := in.targets[key]
		ns := in.namespaces[obj.target.Namespace]
		created := obj.u.GetCreationTimestamp().Time
		line := Line{Key: key, Target: obj.target.String(), Sources: statuses, Next: inactivity.NextNone}
		// Where each problem's metadata is, for warnings.
		where := map[string]manifest.Object{obj.target.String(): obj.src, obj.u.GetKind() + "/" + obj.target.Namespace + "/" + obj.target.Name: obj.src}
		problem := func(p inactivity.Problem) {
			line.Problems = append(line.Problems, lifecycle.Clip(p.String(), maxProblem))
			at, ok := where[p.On]
			if !ok {
				at = obj.src
			}
			// Once per value, as the controller's Event about it.
			if id := p.On + "|" + p.Key + "|" + p.Value; !reported[id] {
				reported[id] = true
				warnings = append(warnings, inputError(at, "%s", p).Error())
			}
		}

		// The policy's sources, in the controller's order: the target, its template object, its
		// Namespace. A Namespace not in the input is left out: the target is decided on its own
		// (and its template's) metadata.
		sources := []inactivity.Source{{Name: obj.target.String(), Meta: inactivity.Meta{Labels: obj.u.GetLabels(), Annotations: obj.u.GetAnnotations()}}}
		var problems []inactivity.Problem
		if len(o.TemplateRef) > 0 {
			tpl, p := templateOf(obj.u, o.TemplateRef, o.TemplateKind, in.templates)
			if p != nil {
				problems = append(problems, *p)
			}
			if tpl != nil {
				sources = append(sources, tpl.source)
				where[tpl.source.Name] = tpl.obj.src
			}
		}
		if ns != nil {
			name := "Namespace/" + obj.target.Namespace
			sources = append(sources, inactivity.Source{Name: name, Meta: inactivity.Meta{Labels: ns.u.GetLabels(), Annotations: ns.u.GetAnnotations()}})
			where[name] = ns.src
		}
		policy, more := inactivity.ParsePolicy(sources, o.Settings)
		for _, p := range append(problems, more...) {
			problem(p)
		}

		var rec state.Record
		l := in.leases[key]
		if l != nil {
			rec = l.rec
		}
		st, bad := inactivity.ParseState(rec.Bag)
		for _, b := range bad {
			msg := fmt.Sprintf("state lease %s/%s of %s: unreadable inactivity state %s dropped, as the controller drops it", l.l.Namespace, l.l.Name, key, b)
			line.Problems = append(line.Problems, lifecycle.Clip(msg, maxProblem))
			warnings = append(warnings, inputError(l.src, "%s", msg).Error())
		}
		line.AlertsSent = st.AlertsSent

		act, actErr := inactivity.ActivityOf(obj.u, obj.target, o.Sources, o.Tracker)
		line.LastActivity = nonZero(latest(st.LastActivity, act.Last))
		if policy.Ignored || (policy.Timeout <= 0 && policy.ProbeURL == "") {
			// Opted out, never times out, or metadata that cannot be used: the controller
			// looks no further.
			lines = append(lines, line)
			continue
		}
		if actErr != nil {
			// The controller logs this and goes on with nothing known.
			line.Problems = append(line.Problems, lifecycle.Clip(fmt.Sprintf("cannot name the target in a source's results (%v); its activity is unknown", actErr), maxProblem))
			act = activity.Activity{}
		}
		running, err := inactivity.Running(obj.u, o.Settings.Pause)
		if err != nil {
			problem(inactivity.Problem{On: obj.target.String(), Key: "pause state", Value: err.Error(), Err: "cannot tell whether the target runs; it is left alone"})
			lines = append(lines, line)
			continue
		}
		// The probe of an exam endpoint is not made: the plan says what the schedule is.
		d := inactivity.Decide(inactivity.Snapshot{Now: o.Now, Target: obj.target, UID: string(obj.u.GetUID()), Created: created,
			Running: running, Policy: policy, Activity: act, State: st, LastDecision: rec.LastModified,
			ProposalOpen: rec.Holder != "", Declined: rec.Holder == "" && rec.ClosedValues != "", Settings: o.Settings})
		line.LastActivity = nonZero(d.LastActivity)
		line.Next, line.At = d.Next, nonZero(d.At)
		switch {
		case d.Alert:
			// Decide sends an alert now (and its Next is the step after it): the plan says the
			// alert, due now; AlertsSent stays the Lease's count, before it.
			line.Next, line.At = inactivity.NextAlert, nonZero(o.Now)
		case d.Change != nil:
			// The pause or deletion is due: it happens now, however long ago it became due.
			line.At = nonZero(o.Now)
		case d.Next == inactivity.NextUnknown:
			line.Problems = append(line.Problems, sourceProblems...)
		}
		lines = append(lines, line)
	}
	return lines, warnings
}

// tpl is a target's template object as a policy source.
type tpl struct {
	obj    *object
	source inactivity.Source
}

// templateOf is the target's template object named by its ref field, as the controller reads it:
// a name (same namespace) or a {name, namespace} map. A reference that cannot be followed is a
// Problem (with the controller's words); the target then goes by its own and its namespace's
// metadata.
func templateOf(obj *unstructured.Unstructured, ref []string, kind schema.GroupVersionKind, templates map[string]*object) (*tpl, *inactivity.Problem) {
	ns, name, found, problem := inactivity.TemplateRefOf(obj, ref)
	if !found {
		return nil, problem
	}
	on := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
	t := templates[ns+"/"+name]
	if t == nil {
		return nil, &inactivity.Problem{On: on, Key: lifecycle.PathString(ref), Value: ns + "/" + name,
			Err: fmt.Sprintf("no %s of that name in the input; the template's metadata is not read", kind.Kind)}
	}
	return &tpl{obj: t, source: inactivity.Source{Name: kind.Kind + "/" + ns + "/" + name,
		Meta: inactivity.Meta{Labels: t.u.GetLabels(), Annotations: t.u.GetAnnotations()}}}, nil
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func nonZero(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
