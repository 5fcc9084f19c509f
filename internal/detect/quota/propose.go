package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/state"
)

// Event reasons of PR mode.
const (
	ReasonQuotaResizeProposed = "QuotaResizeProposed"
	ReasonQuotaResizeMerged   = "QuotaResizeMerged"
	ReasonQuotaResizeDeclined = "QuotaResizeDeclined"
	ReasonSourceNotFound      = "SourceNotFound"
	ReasonSourceAmbiguous     = "SourceAmbiguous"
	ReasonSourceNotEditable   = "SourceNotEditable"
	ReasonSourceConflict      = "SourceConflict"
	ReasonProposeFailed       = "ProposeFailed"
)

// PRWriter is what PR mode calls of the pull-request actuator, in lifecycle's vocabulary
// (internal/app adapts *pr.Writer to it). Its errors match lifecycle's kinds under errors.Is
// (ErrSource*, ErrInvalidChange, ErrProposal*, ErrNoProposal); lifecycle.RetryAt says when a
// rate-limited call may be retried.
type PRWriter interface {
	Propose(ctx context.Context, c lifecycle.Change, opts lifecycle.ProposeOptions) (lifecycle.Proposal, error)
	Track(key lifecycle.Key, number int)
	Status(ctx context.Context, key lifecycle.Key) (lifecycle.ProposalState, error)
	MergeIfReady(ctx context.Context, key lifecycle.Key, st lifecycle.ProposalState, allowed bool) (merged bool, retryAfter time.Duration, err error)
}

// PRStore is the Lease store as PR mode uses it: the lock (holder) besides the memory.
type PRStore interface {
	StateStore
	Lock(ctx context.Context, rec state.Record, holder, proposed string) (state.Record, error)
	Unlock(ctx context.Context, rec state.Record, t time.Time, closed string) (state.Record, error)
}

var _ PRStore = (*state.Store)(nil)

// Notifier writes progress Events (Normal) with deterministic names.
type Notifier interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// PRMode turns the Reconciler's Changes into pull requests (--mode=pr), with the state Lease
// as the lock: holderIdentity "pr-<number>" names the one open PR of a quota.
type PRMode struct {
	Writer   PRWriter
	Store    PRStore
	Notifier Notifier
	// AutoMerge is --enable-auto-merge; a namespace opts out with resizer.io/auto-merge: "false".
	AutoMerge bool
	// PollInterval is how often an open PR is looked at (--pr-poll-interval).
	PollInterval time.Duration
	// AfterPropose, when set, runs after a successful Propose and before the Lease names the
	// PR; an error stops the reconcile there (tests simulate a crash with it).
	AfterPropose func(key lifecycle.Key, res lifecycle.Proposal) error
}

// reconcilePR is Reconcile in PR mode, from the state record on.
func (r *Reconciler) reconcilePR(ctx context.Context, log logr.Logger, q *corev1.ResourceQuota, ns *metav1.PartialObjectMetadata,
	policy Policy, rec state.Record, now time.Time) (reconcile.Result, error) {
	p := r.PR
	ref := quotaRef(q)
	opts := lifecycle.ProposeOptions{GitPath: strings.TrimSpace(ns.Annotations[AnnotationGitPath])}

	// A decision remembered but maybe not proposed (a crash, a GitHub error): propose it again.
	// Propose adopts the PR it may already have opened.
	if rec.Pending != "" {
		var c lifecycle.Change
		if err := json.Unmarshal([]byte(rec.Pending), &c); err == nil {
			return r.propose(ctx, log, ref, rec, c, opts, now)
		}
		metrics.InvalidInput.WithLabelValues(DetectorName, "state_lease").Inc()
		log.Error(errors.New("unreadable pending decision"), "dropping pending decision", "key", rec.Key)
		var err error
		if rec, err = p.Store.ClearPending(ctx, rec); err != nil {
			return conflictOr(err)
		}
	}

	failures, err := r.failures(ctx, log, q.Namespace, q.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	snap := Snapshot{
		Now: now, Namespace: q.Namespace, Quota: q.Name, Hard: q.Status.Hard, Used: q.Status.Used,
		Policy: policy, State: State{LastModified: rec.LastModified}, Failures: failures,
	}
	if rec.Holder != "" {
		return r.followPR(ctx, log, q, ns, snap, rec, opts, now)
	}

	d := Decide(snap)
	if err := r.warnFindings(ctx, log, ref, q, d, now); err != nil {
		return reconcile.Result{}, err
	}
	change := d.Change()
	if change == nil {
		return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
	}
	if rec.ClosedValues != "" {
		var closed lifecycle.Change
		if json.Unmarshal([]byte(rec.ClosedValues), &closed) == nil && !larger(*change, closed) {
			// A human declined this (or more): wait until the evidence has grown.
			log.V(1).Info("recommendation is not larger than the declined pull request; nothing proposed")
			return reconcile.Result{}, nil
		}
	}
	if rec, err = commitDecision(ctx, p.Store, rec, *change, d.Recommendations, now); err != nil {
		return conflictOr(err)
	}
	return r.propose(ctx, log, ref, rec, *change, opts, now)
}

// propose hands c to the Writer and locks the Lease on the PR. rec holds c as pending.
func (r *Reconciler) propose(ctx context.Context, log logr.Logger, ref corev1.ObjectReference, rec state.Record,
	c lifecycle.Change, opts lifecycle.ProposeOptions, now time.Time) (reconcile.Result, error) {
	p := r.PR
	res, err := p.Writer.Propose(ctx, c, opts)
	if err != nil {
		if reason, ok := proposeFindingReason(err); ok {
			// No PR can carry this change: say why, show the recommendation in observer form,
			// and forget the pending decision.
			log.Info("no pull request possible", "reason", reason, "error", err.Error())
			if werr := r.Actuator.Warn(ctx, ref, reason, err.Error(), reason+"|"+string(c.Key)+"|"+err.Error(), now); werr != nil {
				return reconcile.Result{}, werr
			}
			if rerr := r.Actuator.Record(ctx, c, rec.LastModified); rerr != nil {
				return reconcile.Result{}, rerr
			}
			_, cerr := p.Store.ClearPending(ctx, rec)
			return conflictOr(cerr)
		}
		return githubError(log, "proposing pull request", err)
	}
	if p.AfterPropose != nil {
		if err := p.AfterPropose(c.Key, res); err != nil {
			return reconcile.Result{}, err
		}
	}
	if res.AlreadyInBase {
		// A merged PR waiting for Argo CD or Flux: the change is done.
		log.Info("base branch already holds the change; waiting for the GitOps tool to sync", "key", string(c.Key))
		_, err := p.Store.ClearPending(ctx, rec)
		return conflictOr(err)
	}
	proposed, err := json.Marshal(c)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("encoding proposal: %w", err)
	}
	// The Event first (its name is deterministic, so a replay writes it once), then the lock.
	msg := fmt.Sprintf("Pull request #%d proposes %s: %s", res.Number, fieldsText(c), res.URL)
	if err := p.Notifier.Notify(ctx, ref, corev1.EventTypeNormal, ReasonQuotaResizeProposed, msg,
		fmt.Sprintf("proposed|%s|%d|%s", c.Key, res.Number, fieldsText(c)), now); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := p.Store.Lock(ctx, rec, holderOf(res.Number), string(proposed)); err != nil {
		return conflictOr(err)
	}
	switch {
	case res.Created:
		metrics.PRs.WithLabelValues("opened").Inc()
	case res.Committed || res.Edited:
		metrics.PRs.WithLabelValues("updated").Inc()
	}
	log.Info("pull request proposed", "key", string(c.Key), "number", res.Number, "url", res.URL,
		"created", res.Created, "committed", res.Committed)
	return reconcile.Result{RequeueAfter: p.pollInterval()}, nil
}

// followPR looks after the open PR named by the Lease holder: a larger recommendation updates
// it, a merge (by Kustos or a human) or a close unlocks the Lease.
func (r *Reconciler) followPR(ctx context.Context, log logr.Logger, q *corev1.ResourceQuota, ns *metav1.PartialObjectMetadata,
	snap Snapshot, rec state.Record, opts lifecycle.ProposeOptions, now time.Time) (reconcile.Result, error) {
	p := r.PR
	ref := quotaRef(q)
	key := rec.Key
	if n, ok := parseHolder(rec.Holder); ok {
		p.Writer.Track(key, n)
	}
	st, err := p.Writer.Status(ctx, key)
	if err != nil {
		return githubError(log, "reading pull request", err)
	}
	var proposed lifecycle.Change
	_ = json.Unmarshal([]byte(rec.Proposed), &proposed)
	switch st.State {
	case lifecycle.ProposalMerged:
		return r.merged(ctx, log, ref, rec, st.Number, now)
	case lifecycle.ProposalClosedByHuman:
		return r.declined(ctx, log, ref, rec, st.Number, now)
	case lifecycle.ProposalNone:
		log.Info("the pull request of the lease holder is gone; unlocking", "holder", rec.Holder)
		_, err := p.Store.Unlock(ctx, rec, rec.LastModified, rec.ClosedValues)
		return conflictOr(err)
	}

	// Open. While it is, the cooldown does not apply (updating the PR is what it is for), but
	// events older than the last proposal still count as accounted for.
	snap.Policy.Cooldown = 0
	d := Decide(snap)
	if err := r.warnFindings(ctx, log, ref, q, d, now); err != nil {
		return reconcile.Result{}, err
	}
	if c := d.Change(); c != nil && larger(*c, proposed) {
		next := mergeChanges(proposed, *c)
		if rec, err = commitDecision(ctx, p.Store, rec, next, d.Recommendations, now); err != nil {
			return conflictOr(err)
		}
		return r.propose(ctx, log, ref, rec, next, opts, now)
	}

	allowed := p.AutoMerge && !strings.EqualFold(strings.TrimSpace(ns.Annotations[AnnotationAutoMerge]), "false")
	merged, retry, err := p.Writer.MergeIfReady(ctx, key, st, allowed)
	switch {
	case errors.Is(err, lifecycle.ErrProposalClosed):
		return r.declined(ctx, log, ref, rec, st.Number, now)
	case errors.Is(err, lifecycle.ErrNoProposal):
		_, err := p.Store.Unlock(ctx, rec, rec.LastModified, rec.ClosedValues)
		return conflictOr(err)
	case errors.Is(err, lifecycle.ErrProposalDirty) && len(proposed.Edit.Fields) > 0:
		// The base moved under the PR: rebuild the branch on the new base.
		pending, _ := json.Marshal(proposed)
		if rec, err = p.Store.MarkModified(ctx, rec, rec.LastModified, string(pending)); err != nil {
			return conflictOr(err)
		}
		return r.propose(ctx, log, ref, rec, proposed, opts, now)
	case err != nil:
		return githubError(log, "merging pull request", err)
	case merged:
		return r.merged(ctx, log, ref, rec, st.Number, now)
	}
	after := p.pollInterval()
	if retry > 0 && retry < after {
		after = retry
	}
	if d.RequeueAfter > 0 && d.RequeueAfter < after {
		after = d.RequeueAfter
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// merged unlocks the Lease after the PR was merged (by Kustos or a human); last-modified
// starts the cooldown.
func (r *Reconciler) merged(ctx context.Context, log logr.Logger, ref corev1.ObjectReference, rec state.Record, number int, now time.Time) (reconcile.Result, error) {
	p := r.PR
	if err := p.Notifier.Notify(ctx, ref, corev1.EventTypeNormal, ReasonQuotaResizeMerged,
		fmt.Sprintf("Pull request #%d was merged; the new quota takes effect when the GitOps tool syncs it", number),
		fmt.Sprintf("merged|%s|%d", rec.Key, number), now); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := p.Store.Unlock(ctx, rec, now, ""); err != nil {
		return conflictOr(err)
	}
	metrics.PRs.WithLabelValues("merged").Inc()
	log.Info("pull request merged", "key", string(rec.Key), "number", number)
	return reconcile.Result{}, nil
}

// declined unlocks the Lease after a human closed the PR and remembers what was declined.
func (r *Reconciler) declined(ctx context.Context, log logr.Logger, ref corev1.ObjectReference, rec state.Record, number int, now time.Time) (reconcile.Result, error) {
	p := r.PR
	if err := p.Notifier.Notify(ctx, ref, corev1.EventTypeNormal, ReasonQuotaResizeDeclined,
		fmt.Sprintf("Pull request #%d was closed without merging; nothing is proposed again before the cooldown has passed and the recommendation has grown", number),
		fmt.Sprintf("declined|%s|%d", rec.Key, number), now); err != nil {
		return reconcile.Result{}, err
	}
	closed := rec.Proposed
	if closed == "" {
		closed = "{}"
	}
	if _, err := p.Store.Unlock(ctx, rec, now, closed); err != nil {
		return conflictOr(err)
	}
	metrics.PRs.WithLabelValues("declined").Inc()
	log.Info("pull request closed by a human", "key", string(rec.Key), "number", number)
	return reconcile.Result{}, nil
}

// warnFindings writes the Warning Events of a Decision's findings (missing specs, problems).
func (r *Reconciler) warnFindings(ctx context.Context, log logr.Logger, ref corev1.ObjectReference, q *corev1.ResourceQuota, d Decision, now time.Time) error {
	for _, m := range d.MissingSpecs {
		if err := r.Actuator.Warn(ctx, ref, ReasonQuotaSpecMissing, m.Message, "spec|"+q.Name+"|"+m.Owner.Kind+"/"+m.Owner.Name+"|"+m.Missing, now); err != nil {
			return err
		}
	}
	for _, p := range d.Problems {
		metrics.InvalidInput.WithLabelValues(DetectorName, "quantity").Inc()
		log.Info("quota resource skipped", "problem", p)
		if err := r.Actuator.Warn(ctx, ref, ReasonInvalidQuota, p, "invalid|"+string(q.UID)+"|"+q.ResourceVersion+"|"+p, now); err != nil {
			return err
		}
	}
	return nil
}

func quotaRef(q *corev1.ResourceQuota) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "ResourceQuota", Namespace: q.Namespace, Name: q.Name, UID: q.UID}
}

func (p *PRMode) pollInterval() time.Duration {
	if p.PollInterval <= 0 {
		return time.Minute
	}
	return p.PollInterval
}

// conflictOr turns a Lease write conflict into a quick retry (someone else wrote first; decide
// again on the newer Lease) and passes other errors on.
func conflictOr(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// githubError keeps the pending decision and asks to be called again: when GitHub's rate limit
// resets, or with controller-runtime's backoff.
func githubError(log logr.Logger, what string, err error) (reconcile.Result, error) {
	if at, ok := lifecycle.RetryAt(err); ok {
		d := time.Until(at)
		if d < time.Second {
			d = time.Second
		}
		log.Info(what+" failed; rate limited, trying again later", "error", err.Error(), "retryAfter", d.String())
		return reconcile.Result{RequeueAfter: d}, nil
	}
	return reconcile.Result{}, fmt.Errorf("%s: %w", what, err)
}

// proposeFindingReason says which Warning a Propose error is, when it is no GitHub fault that
// a retry could fix.
func proposeFindingReason(err error) (string, bool) {
	switch {
	case errors.Is(err, lifecycle.ErrSourceNotFound):
		return ReasonSourceNotFound, true
	case errors.Is(err, lifecycle.ErrSourceAmbiguous):
		return ReasonSourceAmbiguous, true
	case errors.Is(err, lifecycle.ErrSourceNotEditable):
		return ReasonSourceNotEditable, true
	case errors.Is(err, lifecycle.ErrSourceConflict):
		return ReasonSourceConflict, true
	case errors.Is(err, lifecycle.ErrProposalBlocked), errors.Is(err, lifecycle.ErrInvalidChange):
		return ReasonProposeFailed, true
	}
	return "", false
}

func holderOf(number int) string { return "pr-" + strconv.Itoa(number) }

func parseHolder(h string) (int, bool) {
	s, ok := strings.CutPrefix(h, "pr-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

func pathKey(p []string) string { return strings.Join(p, ".") }

// fieldsText is "requests.cpu → 12, requests.memory → 24Gi".
func fieldsText(c lifecycle.Change) string {
	parts := make([]string, 0, len(c.Edit.Fields))
	for _, f := range c.Edit.Fields {
		name := pathKey(f.Path)
		if len(f.Path) > 0 {
			name = f.Path[len(f.Path)-1]
		}
		parts = append(parts, name+" → "+f.To)
	}
	return strings.Join(parts, ", ")
}

// greater reports whether quantity a is larger than b (strings that are not quantities: when
// they differ).
func greater(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	if err1 != nil || err2 != nil {
		return a != b
	}
	return qa.Cmp(qb) > 0
}

// larger reports whether c asks for more than ref: a field ref lacks, or a larger value.
func larger(c, ref lifecycle.Change) bool {
	old := map[string]string{}
	for _, f := range ref.Edit.Fields {
		old[pathKey(f.Path)] = f.To
	}
	for _, f := range c.Edit.Fields {
		v, ok := old[pathKey(f.Path)]
		if !ok || greater(f.To, v) {
			return true
		}
	}
	return false
}

// mergeChanges is next with every field of prev that next lacks or asks less of: an update of
// an open PR never drops or lowers what it already proposes.
func mergeChanges(prev, next lifecycle.Change) lifecycle.Change {
	out := next
	out.Edit.Fields = nil
	out.Evidence = nil
	evidence := func(c lifecycle.Change, i int) map[string]string {
		if i < len(c.Evidence) {
			return c.Evidence[i]
		}
		return map[string]string{}
	}
	prevAt := map[string]int{}
	for i, f := range prev.Edit.Fields {
		prevAt[pathKey(f.Path)] = i
	}
	seen := map[string]bool{}
	for i, f := range next.Edit.Fields {
		k := pathKey(f.Path)
		seen[k] = true
		if j, ok := prevAt[k]; ok && greater(prev.Edit.Fields[j].To, f.To) {
			out.Edit.Fields = append(out.Edit.Fields, prev.Edit.Fields[j])
			out.Evidence = append(out.Evidence, evidence(prev, j))
			continue
		}
		out.Edit.Fields = append(out.Edit.Fields, f)
		out.Evidence = append(out.Evidence, evidence(next, i))
	}
	for j, f := range prev.Edit.Fields {
		if !seen[pathKey(f.Path)] {
			out.Edit.Fields = append(out.Edit.Fields, f)
			out.Evidence = append(out.Evidence, evidence(prev, j))
		}
	}
	return out
}
