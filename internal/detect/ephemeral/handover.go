package ephemeral

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// ReasonCloudEventDue is the reason of a Cleaner's CloudEvent Change: the Warning Event observer
// mode writes on the Cleaner for the event it would send.
const ReasonCloudEventDue = "CloudEventDue"

// CloudEventKind and CloudEventGroup name the Key of a Cleaner's CloudEvent,
// ephemeral/CloudEvent.kustos.io/<namespace>/<cleaner>: a Key of its own beside the Cleaner's
// (whose deletion is keyed by the Cleaner itself), so that the event is decided once per cleanup
// id and its delivery followed in its own Lease.
const (
	CloudEventKind  = "CloudEvent"
	CloudEventGroup = "kustos.io"
)

// CloudEventKey is the Key of the CloudEvent of the Cleaner namespace/name.
func CloudEventKey(namespace, name string) lifecycle.Key {
	return lifecycle.KeyFor(DetectorName, lifecycle.Target{Group: CloudEventGroup, Version: v1alpha1.GroupVersion.Version,
		Kind: CloudEventKind, Namespace: namespace, Name: name})
}

// handed is what the pipeline did with one Change of a cleanup.
type handed struct {
	// recorded: at the pipeline's last look, the version handed over was decided on and the
	// decision recorded, and nothing of it was pending: carried out (in this Run or an earlier
	// one), or reported by the pipeline as something no actuator can carry out.
	recorded bool
	// decidedNow: this Run recorded the decision.
	decidedNow bool
	// declined: a person closed its last proposal unmerged (PR mode), and none was merged since.
	declined bool
	// proposalOpen: a proposal (PR mode) carries it; proposal is its number.
	proposalOpen bool
	proposal     int
	// moved (only when resumed): another version was decided on before; nothing is decided.
	moved bool
	res   lifecycle.Result
}

// stuck: the version was decided on in an earlier look and is still here (the caller saw it)
// although nothing is pending or proposed — the pipeline reported why (a refusal, a GitOps
// tool's object), and no second decision is made for it.
func (h handed) stuck() bool { return h.recorded && !h.decidedNow && !h.proposalOpen }

// handOver runs one Change of cl's cleanup through the pipeline, decided on once per version (of
// the object, the release installation or the cleanup id) with uid linking its Events.
//
// g is the group whose one pull request carries the Change in PR mode (the Cleaner's removals);
// the zero Group for what is never proposed (a plain release, the CloudEvent) and for the
// Cleaner's own deletion, which comes after its targets are gone.
func (r *Reconciler) handOver(ctx context.Context, cl *v1alpha1.Cleaner, change lifecycle.Change, uid, version string, now time.Time, resumed bool, g lifecycle.Group) (handed, error) {
	var h handed
	req := r.cleanupRequest(cl, change, uid, version, now, resumed, &h)
	req.Group = g
	res, err := r.Pipeline.Run(ctx, req)
	h.res = res
	return h, err
}

// cleanupRequest is the pipeline Request of one Change of cl's cleanup — the one place every
// effect of a Cleaner (an object's deletion, a release's removal, its CloudEvent, its own
// deletion) becomes a Request.
//
// Its decision keeps a version bag: the version decided on and the Key's last decision time
// before it. The pipeline writes the bag before it records the decision, so a bag whose "before"
// is still the last decision time is a decision not recorded yet (made in this Run, or cut short
// by a crash): decide it (again). Once recorded, this version is never decided a second time:
// one Event, one pull request, one delete, one uninstall, one CloudEvent per version.
func (r *Reconciler) cleanupRequest(cl *v1alpha1.Cleaner, change lifecycle.Change, uid, version string, now time.Time, resumed bool, h *handed) lifecycle.Request {
	return lifecycle.Request{
		Key: change.Key, Target: change.Target, UID: uid, Now: now, AutoMerge: r.AutoMerge,
		Decide: func(v lifecycle.View) lifecycle.Decision {
			h.proposalOpen, h.proposal, h.recorded, h.declined = v.ProposalOpen, v.ProposalNumber, false, v.Declined
			before := v.LastModified.UTC().Format(time.RFC3339Nano)
			if resumed && v.Bag[bagDecided] != "" && v.Bag[bagDecided] != version && !v.ProposalOpen {
				h.moved = true
				return lifecycle.Decision{}
			}
			if v.Bag[bagDecided] == version && v.Bag[bagBefore] != before {
				h.recorded = true
				return lifecycle.Decision{}
			}
			bag := map[string]string{bagDecided: version, bagBefore: before}
			if v.Bag[bagDecided] == version {
				bag[bagBefore] = v.Bag[bagBefore]
				h.decidedNow = true
			}
			return lifecycle.Decision{Change: &change, Bag: bag}
		},
	}
}

// cleanupGroup is the group of cl's removals that Git may hold (its targets, its Flux
// HelmReleases): one pull request per Cleaner, opened once the expect removals handed over in
// this look have joined (or after the group window).
func (r *Reconciler) cleanupGroup(cl *v1alpha1.Cleaner, expect int) lifecycle.Group {
	// Every removal joins within one look, so the group opens as soon as they all have; the
	// window only bounds the wait for one that cannot join (it fails, or was carried out).
	window := max(r.GroupWindow, minCleanupWindow)
	return lifecycle.Group{Key: lifecycle.CleanerGroupKey(cl.Namespace, cl.Name),
		Label: "Cleaner " + cl.Namespace + "/" + cl.Name, Namespace: cl.Namespace, Window: window, Expect: expect}
}

// minCleanupWindow bounds a Cleaner's gathering from below: with --group-window=0 its removals
// still go as one pull request.
const minCleanupWindow = time.Minute

// objectVersion is what a deletion is decided on: the object's UID and resourceVersion.
func objectVersion(o metav1.Object) string { return string(o.GetUID()) + "/" + o.GetResourceVersion() }

// deletion is the Change deleting o (target) for cl: with o's UID and resourceVersion as
// preconditions, so that an object changed since the conditions were evaluated is not deleted.
func (r *Reconciler) deletion(cl *v1alpha1.Cleaner, target lifecycle.Target, o metav1.Object, summary string) lifecycle.Change {
	if summary == "" {
		summary = fmt.Sprintf("Cleaner %s/%s: its TTL passed and every condition holds; %s is to be deleted", cl.Namespace, cl.Name, target)
	}
	c := r.change(cl, target, lifecycle.Edit{Op: lifecycle.EditDelete, Preconditions: &lifecycle.Preconditions{
		UID: string(o.GetUID()), ResourceVersion: o.GetResourceVersion()}}, summary)
	c.Evidence[0]["uid"], c.Evidence[0]["resourceVersion"] = string(o.GetUID()), o.GetResourceVersion()
	return c
}

// releaseRemoval is the Change removing the plain helm release target (uninstalled with helm's
// own library by the helm release actuator; reported in observer mode).
func (r *Reconciler) releaseRemoval(cl *v1alpha1.Cleaner, target lifecycle.Target) lifecycle.Change {
	return r.change(cl, target, lifecycle.Edit{Op: lifecycle.EditDelete},
		fmt.Sprintf("Cleaner %s/%s: its TTL passed and every condition holds; helm release %s/%s is to be uninstalled", cl.Namespace, cl.Name, target.Namespace, target.Name))
}

// cloudEvent is the Change sending the CloudEvent of cl's finished cleanup (id, data) to sink.
// Its Target is the Cleaner (where its Events go), its Key CloudEventKey. The sink may hold
// credentials: only its form without them appears in the summary and evidence.
func (r *Reconciler) cloudEvent(cl *v1alpha1.Cleaner, sink, id string, data lifecycle.Cleaned) (lifecycle.Change, error) {
	e, err := lifecycle.NewCloudEvent(sink, id, data.Cleaner, data)
	if err != nil {
		return lifecycle.Change{}, err
	}
	c := r.change(cl, cleanerTarget(cl), lifecycle.Edit{Op: lifecycle.EditSendCloudEvent, CloudEvent: e},
		fmt.Sprintf("Cleaner %s/%s: its cleanup is done; CloudEvent %s (io.kustos.cleaner.cleaned) goes to %s", cl.Namespace, cl.Name, id, e.SinkForDisplay()))
	c.Key = CloudEventKey(cl.Namespace, cl.Name)
	c.Reason = ReasonCloudEventDue
	c.Evidence[0]["cloudEventID"], c.Evidence[0]["sink"] = id, e.SinkForDisplay()
	return c, nil
}

// change is a Change of cl's cleanup on target, keyed by target, with the evidence a reviewer
// needs: the Cleaner, when it expired and its conditions.
func (r *Reconciler) change(cl *v1alpha1.Cleaner, target lifecycle.Target, edit lifecycle.Edit, summary string) lifecycle.Change {
	return lifecycle.Change{
		Key: lifecycle.KeyFor(DetectorName, target), Detector: DetectorName, Target: target, Edit: edit,
		Reason: ReasonCleanupDue, Summary: summary,
		Evidence: []map[string]string{{
			"cleaner": cl.Namespace + "/" + cl.Name, "expiresAt": cl.CreationTimestamp.Add(r.compile(cl).spec.TTL).UTC().Format(time.RFC3339),
			"conditions": strings.Join(cl.Spec.Conditions, " && "),
		}},
	}
}

// cleanerTarget is cl as a Change's Target.
func cleanerTarget(cl *v1alpha1.Cleaner) lifecycle.Target {
	return lifecycle.Target{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Cleaner",
		Namespace: cl.Namespace, Name: cl.Name}
}

// cloudEventID is the id of cl's CloudEvent: one per cleanup (UID and generation), so that a
// repeat after a crash is recognisable as one.
func cloudEventID(cl *v1alpha1.Cleaner) string { return fmt.Sprintf("%s/%d", cl.UID, cl.Generation) }

// CurrentCloudEvent tells the CloudEvent actuator whether a CloudEvent decided earlier (and
// pending: not acknowledged yet) is still this Cleaner's to send: the Cleaner is still there,
// at the generation the event's id names. Its author may have changed the sink since (one
// refused, say), which makes a new generation and a new event; the old one is then dropped
// with an error matching lifecycle.ErrSourceConflict.
func (r *Reconciler) CurrentCloudEvent(ctx context.Context, c lifecycle.Change) error {
	if c.Edit.CloudEvent == nil {
		return nil
	}
	var cl v1alpha1.Cleaner
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Target.Namespace, Name: c.Target.Name}, &cl)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Cleaner %s/%s: %w", c.Target.Namespace, c.Target.Name, err)
	}
	if err != nil || cl.DeletionTimestamp != nil || cloudEventID(&cl) != c.Edit.CloudEvent.ID {
		return fmt.Errorf("%w: CloudEvent %s of Cleaner %s/%s is not sent: the Cleaner changed or went since it was decided",
			lifecycle.ErrSourceConflict, c.Edit.CloudEvent.ID, c.Target.Namespace, c.Target.Name)
	}
	return nil
}

// announce writes one CleanupDue Event on the Cleaner per generation.
func (r *Reconciler) announce(ctx context.Context, cl *v1alpha1.Cleaner, names []string, now time.Time) error {
	msg := "Every condition holds"
	if len(names) > 0 {
		msg += "; deleting " + strings.Join(names, ", ")
	}
	if r.Observe {
		msg += " (observer mode: reported only)"
	}
	return r.Reporter.Notify(ctx, cleanerRef(cl), corev1.EventTypeNormal, ReasonCleanupDue, msg,
		fmt.Sprintf("cleanupdue|%s|%d", cl.UID, cl.Generation), now)
}

// warn writes one Warning Event on the Cleaner per generation and message.
func (r *Reconciler) warn(ctx context.Context, cl *v1alpha1.Cleaner, reason, msg string, now time.Time) error {
	r.Log.Info("Cleaner cannot proceed", "cleaner", cl.Namespace+"/"+cl.Name, "reason", reason, "message", msg)
	return r.Reporter.Notify(ctx, cleanerRef(cl), corev1.EventTypeWarning, reason, msg,
		fmt.Sprintf("%s|%s|%d|%s", reason, cl.UID, cl.Generation, msg), now)
}

func cleanerRef(cl *v1alpha1.Cleaner) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Cleaner",
		Namespace: cl.Namespace, Name: cl.Name, UID: cl.UID}
}
