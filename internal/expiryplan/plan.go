package expiryplan

import (
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/manifest"
	"github.com/kustos-dev/kustos/internal/state"
)

// Line is one output line: what happens next to one target.
type Line struct {
	// Key is the target's Key, which names its state Lease.
	Key lifecycle.Key `json:"key"`
	// Target is Kind[.group]/namespace/name, or Namespace/name (lifecycle.Target.String).
	Target string `json:"target"`
	// Owner is kustos.io/owner as written (the object's, else its namespace's); nil when none.
	Owner *string `json:"owner"`
	// Deadline is the effective deadline (a later extension in the state counts); nil: never.
	Deadline *time.Time  `json:"deadline"`
	Next     expiry.Next `json:"next"`
	// At is when Next happens; nil for none and orphan.
	At *time.Time `json:"at"`
	// Action is what happens at the deadline; nil when the namespace opted out or
	// kustos.io/on-expiry cannot be used.
	Action *expiry.Action `json:"action"`
}

// Options are what the controller's flags say.
type Options struct {
	// Now is the time of the decision.
	Now time.Time
	// Kinds are --lifecycle-kinds (expiry.ParseKinds); Namespaces are always targets.
	Kinds []schema.GroupVersionKind
	// Settings are --default-ttl, --expiry-warning-before, --notification-interval, the owners
	// file and CarriesOut (the mode).
	Settings expiry.Settings
}

// namespaceGVK is the kind of Namespaces, the targets that are always watched.
var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Decoder is the manifest.Decoder for Plan: Leases (coordination.k8s.io/v1) are read as the
// typed API, Namespaces and objects of kinds (matched by group and kind, whatever the version)
// as unstructured, and everything else is skipped.
func Decoder(kinds []schema.GroupVersionKind) manifest.Decoder {
	return func(apiVersion, kind string) runtime.Object {
		if apiVersion == coordinationv1.SchemeGroupVersion.String() && kind == "Lease" {
			return &coordinationv1.Lease{}
		}
		if _, ok := kindOf(kinds, apiVersion, kind); ok {
			return manifest.Unstructured(apiVersion, kind)
		}
		return nil
	}
}

// kindOf is the watched kind an object of apiVersion and kind belongs to: Namespace, or the
// first of kinds with its group and kind (the controller reads its objects at that version).
func kindOf(kinds []schema.GroupVersionKind, apiVersion, kind string) (schema.GroupVersionKind, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	if gv.Group == namespaceGVK.Group && kind == namespaceGVK.Kind {
		return namespaceGVK, true
	}
	for _, k := range kinds {
		if k.Group == gv.Group && k.Kind == kind {
			return k, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// object is a target or Namespace of the input, with where it is.
type object struct {
	src    manifest.Object
	u      *unstructured.Unstructured
	gvk    schema.GroupVersionKind
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

// Plan decides every target among objs (decoded with Decoder) as of o.Now, sorted by Key.
// Input that cannot be used is an error naming its file and line: an object or Lease given
// twice, a target without metadata.creationTimestamp, a state Lease whose times do not parse.
// Expiry metadata that cannot be used, and state entries that cannot be read, are warnings
// (FILE:LINE: what is wrong), as the controller reports them in Events and logs and goes on.
func Plan(objs []manifest.Object, o Options) (lines []Line, warnings []string, err error) {
	namespaces := map[string]*object{}
	targets := map[lifecycle.Key]*object{}
	leases := map[lifecycle.Key]*lease{}
	for _, src := range objs {
		switch obj := src.Object.(type) {
		case *coordinationv1.Lease:
			rec, ok, err := state.ParseLease(obj)
			p, parts := rec.Key.Parts()
			if !ok || !parts || p.Detector != expiry.DetectorName {
				continue // not Kustos state, or another detector's
			}
			if err != nil {
				return nil, nil, inputError(src, "%v", err)
			}
			if prev, dup := leases[rec.Key]; dup {
				return nil, nil, inputError(src, "state lease %s/%s holds the state of %s, as does %s/%s at %s:%d; give each Lease once",
					obj.Namespace, obj.Name, rec.Key, prev.l.Namespace, prev.l.Name, prev.src.File, prev.src.Line)
			}
			leases[rec.Key] = &lease{src: src, l: obj, rec: rec}
		case *unstructured.Unstructured:
			gvk, ok := kindOf(o.Kinds, obj.GetAPIVersion(), obj.GetKind())
			if !ok {
				continue
			}
			t := lifecycle.Target{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: obj.GetName()}
			if gvk != namespaceGVK {
				if obj.GetNamespace() == "" {
					obj.SetNamespace("default")
				}
				t.Namespace = obj.GetNamespace()
			}
			if t.Name == "" {
				return nil, nil, inputError(src, "%s: metadata.name is missing", t.KindGroup())
			}
			key := lifecycle.KeyFor(expiry.DetectorName, t)
			if prev, dup := targets[key]; dup {
				return nil, nil, inputError(src, "%s is also at %s:%d; give each object once", t, prev.src.File, prev.src.Line)
			}
			targets[key] = &object{src: src, u: obj, gvk: gvk, target: t}
			if gvk == namespaceGVK {
				namespaces[t.Name] = targets[key]
			}
		}
	}

	keys := make([]lifecycle.Key, 0, len(targets))
	for k := range targets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	reported := map[string]bool{}
	lines = make([]Line, 0, len(keys))
	for _, key := range keys {
		obj := targets[key]
		ns := namespaces[obj.target.Namespace]
		if obj.u.GetDeletionTimestamp() != nil || (ns != nil && ns.u.GetDeletionTimestamp() != nil) {
			continue // being deleted: the controller decides nothing
		}
		created := obj.u.GetCreationTimestamp().Time
		if created.IsZero() {
			return nil, nil, inputError(obj.src, "%s: metadata.creationTimestamp is missing (a kustos.io/ttl counts from it; set it to try a manifest not applied yet)", obj.target)
		}
		where := []manifest.Object{obj.src} // where each source's metadata is, for warnings
		var nsMeta *expiry.Meta
		if ns != nil && obj.gvk != namespaceGVK {
			nsMeta = &expiry.Meta{Labels: ns.u.GetLabels(), Annotations: ns.u.GetAnnotations()}
			where = append(where, ns.src)
		}
		sources := expiry.SourcesOf(obj.target, expiry.Meta{Labels: obj.u.GetLabels(), Annotations: obj.u.GetAnnotations()}, nsMeta)
		policy, problems := expiry.ParsePolicy(created, sources, expiry.Scalable(obj.gvk), o.Settings)
		for _, p := range problems {
			at := obj.src
			for i, s := range sources {
				if s.Name == p.On && i < len(where) {
					at = where[i]
				}
			}
			// Once per value, as the controller's Event about it.
			if id := p.On + "|" + p.Key + "|" + p.Value; !reported[id] {
				reported[id] = true
				warnings = append(warnings, inputError(at, "%s", p).Error())
			}
		}

		var rec state.Record
		if l := leases[key]; l != nil {
			rec = l.rec
		}
		st, bad := expiry.ParseState(rec.Bag)
		for _, b := range bad {
			l := leases[key]
			warnings = append(warnings, inputError(l.src, "state lease %s/%s of %s: unreadable expiry state %s dropped, as the controller drops it",
				l.l.Namespace, l.l.Name, key, b).Error())
		}
		d := expiry.Decide(expiry.Snapshot{Now: o.Now, Target: obj.target, UID: string(obj.u.GetUID()),
			Policy: policy, State: st, LastDecision: rec.LastModified, Settings: o.Settings})
		lines = append(lines, Line{
			Key: key, Target: obj.target.String(), Owner: nonEmpty(policy.Owner), Deadline: nonZero(d.Deadline),
			Next: d.Next, At: nonZero(d.At), Action: nonEmpty(d.Action),
		})
	}
	return lines, warnings, nil
}

func nonZero(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func nonEmpty[S ~string](s S) *S {
	if s == "" {
		return nil
	}
	return &s
}
