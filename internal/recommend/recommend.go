package recommend

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
	"github.com/kustos-dev/kustos/internal/state"
)

// Options are the controller flags the decision depends on, and the time it is made at.
type Options struct {
	// Defaults are the threshold and increment of namespaces without annotations.
	Defaults quota.Settings
	// Cooldown is the default cooldown (resizer.io/cooldown-minutes overrides it).
	Cooldown time.Duration
	// Now is the time of the decision: cooldowns end and events are fresh relative to it.
	Now time.Time
	// Window holds the window and shrink flags; a zero Length means quota.DefaultWindowPolicy.
	Window quota.WindowPolicy
	// History, when set, is where each quota's usage window comes from (Prometheus, as the
	// controller's --prometheus-url); nil: the daily peaks the state Leases of the input keep.
	History quota.History
}

// Result is what Recommend concluded about all quotas of the input.
type Result struct {
	// Recommendations are sorted by namespace, quota and resource.
	Recommendations []quota.Recommendation
	// Shrinks are the resources whose hard value lies above the usage window's target, held
	// back or not, sorted as Recommendations; a quota that must grow has none.
	Shrinks []quota.Shrink
	// Totals are what the quotas could give back, per resource (quota.Reclaims summed).
	Totals quota.ReclaimTotals
	// Messages are the lines for stderr, in order and without repetitions: "warning: …" for
	// input that was skipped or replaced by a default (an invalid annotation, an unreadable
	// event message or state Lease, a quantity that cannot be raised) and "notice: …" for
	// findings that are not recommendations (a workload that misses a resource field).
	Messages []string
}

// dump is the input indexed the way the decision reads it.
type dump struct {
	namespaces map[string]*corev1.Namespace
	quotas     map[nsName]*corev1.ResourceQuota
	// events are per namespace, in input order; a later copy of the same event replaces an
	// earlier one (the same dump given twice, or a core/v1 and an events.k8s.io/v1 view).
	events    map[string][]*corev1.Event
	eventAt   map[nsName]int
	workloads map[workloadKey]runtime.Object
	// lastModified is the state Leases' resizer.io/last-modified per quota.
	lastModified map[nsName]time.Time
	// bags are the state Leases' bags per quota: the kept daily peaks and the grow and shrink
	// times, as the controller reads them.
	bags map[nsName]map[string]string
}

type nsName struct{ namespace, name string }

type workloadKey struct{ namespace, kind, name string }

// Recommend makes the controller's decision for every ResourceQuota in objs. Later objects
// replace earlier ones with the same kind, namespace and name. ctx bounds opt.History's queries.
func Recommend(ctx context.Context, objs []Object, opt Options) Result {
	res := Result{Totals: quota.ReclaimTotals{}}
	window := opt.Window
	if window.Length == 0 {
		window = quota.DefaultWindowPolicy()
	}
	seen := map[string]bool{}
	say := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !seen[msg] {
			seen[msg] = true
			res.Messages = append(res.Messages, msg)
		}
	}
	d := index(objs, say)

	// Namespace policies first: their warnings concern the namespace, not one quota.
	policies := map[string]quota.Policy{}
	for _, name := range sortedKeys(d.namespaces) {
		p, problems := quota.ParsePolicyWith(d.namespaces[name].Annotations, opt.Defaults, opt.Cooldown, window)
		for _, pr := range problems {
			say("warning: namespace %s: %s", name, pr.Error())
		}
		policies[name] = p
	}

	keys := make([]nsName, 0, len(d.quotas))
	for k := range d.quotas {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})

	for _, k := range keys {
		q := d.quotas[k]
		ns, nsKnown := d.namespaces[k.namespace]
		if q.DeletionTimestamp != nil || (nsKnown && ns.DeletionTimestamp != nil) {
			continue // going away: the controller does not raise it either
		}
		policy, ok := policies[k.namespace]
		if !ok {
			// The dump lacks the Namespace: decide with the defaults.
			policy, _ = quota.ParsePolicyWith(nil, opt.Defaults, opt.Cooldown, window)
			policy.Enabled = true
		}
		if !policy.Enabled {
			continue
		}
		where := k.namespace + "/" + k.name
		if len(q.Status.Hard) == 0 {
			say("notice: %s: the quota has no status.hard (usage not computed yet); nothing to decide", where)
		}

		failures, problems, err := quota.CollectFailures(d.events[k.namespace], k.name, d.lookup(k.namespace))
		for _, p := range problems {
			say("warning: %s; skipped", p.Error())
		}
		if err != nil {
			// The lookup never fails; kept so a future change cannot drop evidence silently.
			say("warning: %s: %v; deficits not evaluated", where, err)
		}

		hist, peaks := d.window(ctx, k, q, policy, opt, say)
		dec := quota.Decide(quota.Snapshot{
			Now:       opt.Now,
			Namespace: k.namespace,
			Quota:     k.name,
			Hard:      q.Status.Hard,
			Used:      q.Status.Used,
			Policy:    policy,
			State:     quota.State{LastModified: d.lastModified[k], LastGrow: peaks.LastGrow, LastShrink: peaks.LastShrink},
			Failures:  failures,
			Window:    hist,
		})
		for _, m := range dec.MissingSpecs {
			say("notice: %s: %s", where, m.Message)
		}
		for _, p := range dec.Problems {
			say("warning: %s: %s; resource skipped", where, p)
		}
		res.Recommendations = append(res.Recommendations, dec.Recommendations...)
		res.Shrinks = append(res.Shrinks, dec.Shrinks...)
		res.Totals.Add(quota.Reclaims(dec.Shrinks))
	}
	return res
}

// keepsPeaks reports whether a state Lease's bag holds daily peaks.
func keepsPeaks(bag map[string]string) bool {
	for k := range bag {
		if strings.HasPrefix(k, "peak.") {
			return true
		}
	}
	return false
}

// window is the quota's usage window as the controller gathers it: from History when there
// is one, else from the daily peaks its state Lease keeps, with this look's usage recorded as
// the controller records it when the Lease keeps any (in memory only: nothing is written). The grow and shrink times
// come from the Lease either way.
func (d *dump) window(ctx context.Context, k nsName, q *corev1.ResourceQuota, policy quota.Policy, opt Options, say func(string, ...any)) (quotahistory.Window, *quota.DailyPeaks) {
	resources := make([]corev1.ResourceName, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		resources = append(resources, name)
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i] < resources[j] })
	peaks, problems := quota.ReadDailyPeaks(d.bags[k], resources)
	if opt.History != nil {
		w := opt.History.Window(ctx, k.namespace, k.name, policy.Window.Length, opt.Now)
		if !w.Complete && w.Incomplete != "" {
			// Once per reason, not per quota: a Prometheus that is down says the same of all.
			say("notice: a usage window from Prometheus is incomplete (its shrinks are held back by window): %s", w.Incomplete)
		}
		return w, peaks
	}
	if len(resources) > 0 && keepsPeaks(d.bags[k]) {
		// A quota without kept peaks is decided without a history, as it was before Kustos
		// kept one: no peak raises its grows, and any shrink waits for the window.
		problems = append(problems, peaks.Record(q.Status.Used, resources, opt.Now, policy.Window.Length)...)
	}
	for _, p := range problems {
		say("warning: %s/%s: usage history in the state lease: %s; those days count as missing", k.namespace, k.name, strings.TrimSpace(p))
	}
	w := peaks.Window(opt.Now, policy.Window.Length)
	return w, peaks
}

// index sorts the objects into a dump. State Leases that cannot be read are reported and
// ignored, as the controller does: the quota is treated as never modified.
func index(objs []Object, say func(string, ...any)) *dump {
	d := &dump{
		namespaces:   map[string]*corev1.Namespace{},
		quotas:       map[nsName]*corev1.ResourceQuota{},
		events:       map[string][]*corev1.Event{},
		eventAt:      map[nsName]int{},
		workloads:    map[workloadKey]runtime.Object{},
		lastModified: map[nsName]time.Time{},
		bags:         map[nsName]map[string]string{},
	}
	var legacy []Object
	for _, o := range objs {
		switch obj := o.Object.(type) {
		case *corev1.Namespace:
			d.namespaces[obj.Name] = obj
		case *corev1.ResourceQuota:
			d.quotas[nsName{obj.Namespace, obj.Name}] = obj
		case *corev1.Event:
			d.addEvent(obj)
		case *coordinationv1.Lease:
			if state.IsLegacyLease(obj) {
				legacy = append(legacy, o)
				continue
			}
			rec, ok, err := state.ParseLease(obj)
			if err != nil {
				say("warning: %s:%d: %v; treating the quota as never modified", o.File, o.Line, err)
				continue
			}
			detector, ns, name := state.SplitKey(rec.Key)
			if !ok || detector != quota.DetectorName {
				continue
			}
			k := nsName{ns, name}
			if rec.Bag != nil {
				d.bags[k] = rec.Bag
			}
			if rec.LastModified.After(d.lastModified[k]) {
				d.lastModified[k] = rec.LastModified
			}
		case *appsv1.ReplicaSet:
			d.workloads[workloadKey{obj.Namespace, "ReplicaSet", obj.Name}] = obj
		case *appsv1.StatefulSet:
			d.workloads[workloadKey{obj.Namespace, "StatefulSet", obj.Name}] = obj
		case *appsv1.DaemonSet:
			d.workloads[workloadKey{obj.Namespace, "DaemonSet", obj.Name}] = obj
		case *batchv1.Job:
			d.workloads[workloadKey{obj.Namespace, "Job", obj.Name}] = obj
		case *corev1.ReplicationController:
			d.workloads[workloadKey{obj.Namespace, "ReplicationController", obj.Name}] = obj
		case *corev1.Pod:
			d.workloads[workloadKey{obj.Namespace, "Pod", obj.Name}] = obj
		}
	}
	d.adoptLegacy(legacy, say)
	return d
}

// adoptLegacy reads legacy state Leases (state-<namespace>-<quota>, no kustos.io/key) as the
// controller does: a Lease is a quota's when its name fits exactly that one quota of the dump;
// otherwise it is reported, naming it, and ignored.
func (d *dump) adoptLegacy(legacy []Object, say func(string, ...any)) {
	for _, o := range legacy {
		l := o.Object.(*coordinationv1.Lease) //nolint:forcetypeassert // index only collects Leases here
		var owners []nsName
		for k := range d.quotas {
			if state.LeaseName(lifecycle.NewKey(quota.DetectorName, k.namespace, k.name)) == l.Name {
				owners = append(owners, k)
			}
		}
		if len(owners) != 1 {
			say("warning: %s:%d: state lease %s has no %s and its name fits %d quotas of the input; ignored",
				o.File, o.Line, l.Name, state.AnnotationKey, len(owners))
			continue
		}
		k := owners[0]
		rec, err := state.ReadLease(lifecycle.NewKey(quota.DetectorName, k.namespace, k.name), l)
		if err != nil {
			say("warning: %s:%d: %v; treating the quota as never modified", o.File, o.Line, err)
			continue
		}
		if rec.Bag != nil && d.bags[k] == nil {
			d.bags[k] = rec.Bag
		}
		if rec.LastModified.After(d.lastModified[k]) {
			d.lastModified[k] = rec.LastModified
		}
	}
}

func (d *dump) addEvent(ev *corev1.Event) {
	if ev.Name == "" {
		d.events[ev.Namespace] = append(d.events[ev.Namespace], ev)
		return
	}
	k := nsName{ev.Namespace, ev.Name}
	if i, ok := d.eventAt[k]; ok {
		d.events[ev.Namespace][i] = ev
		return
	}
	d.eventAt[k] = len(d.events[ev.Namespace])
	d.events[ev.Namespace] = append(d.events[ev.Namespace], ev)
}

// lookup finds a failing owner among the loaded workloads. An owner the input does not
// contain is unknown, not gone: a dump may simply lack workloads, so it counts as one missing
// pod rather than as a resolved deficit.
func (d *dump) lookup(namespace string) quota.OwnerLookup {
	return func(kind, name string) (runtime.Object, error) {
		if obj, ok := d.workloads[workloadKey{namespace, kind, name}]; ok {
			return obj, nil
		}
		return nil, nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
