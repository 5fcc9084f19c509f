package app

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// The in-memory world of the soak benchmark: what the quota Reconciler, the pipeline and the
// observe Recorder talk to instead of an API server and GitHub. Each fake holds a fixed amount
// per quota (the cluster's objects, the Lease of each Key, the latest PR of each Key) and
// counters, never a log of calls, so the heap the soak measures is Kustos's own.

// soakCluster is the informer cache (and the live reader) of the soak: one Namespace with one
// ResourceQuota per entry, no Events. It implements client.Reader for what the quota
// Reconciler reads: ResourceQuotas, Namespace metadata and EventLists.
type soakCluster struct {
	mu     sync.RWMutex
	quotas map[types.NamespacedName]*corev1.ResourceQuota
	uids   map[string]types.UID // namespace name → UID
}

var _ client.Reader = (*soakCluster)(nil)

var (
	quotaGR     = schema.GroupResource{Resource: "resourcequotas"}
	namespaceGR = schema.GroupResource{Resource: "namespaces"}
)

func newSoakCluster() *soakCluster {
	return &soakCluster{quotas: map[types.NamespacedName]*corev1.ResourceQuota{}, uids: map[string]types.UID{}}
}

// add creates a namespace with one quota whose status is hard, used at 90% of it.
func (c *soakCluster) add(namespace, name string, res corev1.ResourceName, hard resource.Quantity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids[namespace] = types.UID("ns-" + namespace)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("rq-" + namespace)}}
	c.quotas[types.NamespacedName{Namespace: namespace, Name: name}] = q
	c.setLocked(q, res, hard)
}

// setHard is the quota controller after a merged PR was synced: status.hard is the new value,
// and usage has grown to 90% of it (above the 80% threshold), so the quota is under pressure
// again.
func (c *soakCluster) setHard(key types.NamespacedName, res corev1.ResourceName, hard resource.Quantity) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.quotas[key]
	if q == nil {
		return fmt.Errorf("no quota %s", key)
	}
	c.setLocked(q, res, hard)
	return nil
}

func (c *soakCluster) setLocked(q *corev1.ResourceQuota, res corev1.ResourceName, hard resource.Quantity) {
	// Only the status, updated in place: the Reconciler reads nothing else (it gets a deep
	// copy), and the fake's own memory should neither dilute nor fragment the heap the soak
	// measures for Kustos.
	if q.Status.Hard == nil {
		q.Status.Hard, q.Status.Used = corev1.ResourceList{}, corev1.ResourceList{}
	}
	q.Status.Hard[res] = hard
	q.Status.Used[res] = *resource.NewMilliQuantity(hard.MilliValue()/10*9, resource.DecimalSI)
}

func (c *soakCluster) hard(key types.NamespacedName, res corev1.ResourceName) resource.Quantity {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.quotas[key].Status.Hard[res]
}

func (c *soakCluster) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch o := obj.(type) {
	case *corev1.ResourceQuota:
		q := c.quotas[key]
		if q == nil {
			return apierrors.NewNotFound(quotaGR, key.Name)
		}
		q.DeepCopyInto(o)
		return nil
	case *metav1.PartialObjectMetadata:
		if o.Kind != "Namespace" {
			return fmt.Errorf("soak cluster: metadata of %s not served", o.GroupVersionKind())
		}
		uid, ok := c.uids[key.Name]
		if !ok {
			return apierrors.NewNotFound(namespaceGR, key.Name)
		}
		o.ObjectMeta = metav1.ObjectMeta{Name: key.Name, UID: uid}
		return nil
	}
	return fmt.Errorf("soak cluster: %T not served", obj)
}

func (c *soakCluster) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch l := list.(type) {
	case *corev1.EventList:
		l.Items = nil // no workload ever fails to create pods in the soak
		return nil
	case *corev1.ResourceQuotaList:
		l.Items = nil
		for k, q := range c.quotas {
			if lo.Namespace == "" || k.Namespace == lo.Namespace {
				l.Items = append(l.Items, *q.DeepCopy())
			}
		}
		return nil
	}
	return fmt.Errorf("soak cluster: %T not served", list)
}

// soakEvents is the observe Recorder's client: it accepts every Event and keeps nothing but a
// count per reason. Recorder calls only Create; anything else panics on the nil interface.
type soakEvents struct {
	client.Client
	mu       sync.Mutex
	byReason map[string]int
}

func newSoakEvents() *soakEvents { return &soakEvents{byReason: map[string]int{}} }

func (e *soakEvents) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return fmt.Errorf("soak events: %T not accepted", obj)
	}
	e.mu.Lock()
	e.byReason[ev.Reason]++
	e.mu.Unlock()
	return nil
}

func (e *soakEvents) count(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byReason[reason]
}

// soakForge is GitHub in memory as the pipeline sees it (pipeline.Actuator and
// pipeline.Proposals): one PR per Key, opened by Apply, always clean, merged by Merge. Only the
// latest PR of each Key is kept: GitHub's storage is not Kustos's memory.
type soakForge struct {
	mu     sync.Mutex
	next   int
	prs    map[lifecycle.Key]*soakPR
	opened int
	merged int
}

type soakPR struct {
	number  int
	state   lifecycle.ProposalStatus
	head    string
	commits int
	fields  []lifecycle.FieldChange
}

var (
	_ pipeline.Actuator  = (*soakForge)(nil)
	_ pipeline.Proposals = (*soakForge)(nil)
)

func newSoakForge() *soakForge { return &soakForge{prs: map[lifecycle.Key]*soakPR{}} }

func (f *soakForge) Apply(_ context.Context, c lifecycle.Change, _ time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[c.Key]
	res := lifecycle.Proposal{}
	if p == nil || p.state != lifecycle.ProposalOpen {
		f.next++
		f.opened++
		p = &soakPR{number: f.next, state: lifecycle.ProposalOpen}
		f.prs[c.Key] = p
		res.Created = true
	}
	if p.commits == 0 || !slices.EqualFunc(p.fields, c.Edit.Fields, sameField) {
		p.commits++
		p.head = "sha-" + strconv.Itoa(p.number) + "-" + strconv.Itoa(p.commits)
		p.fields = slices.Clone(c.Edit.Fields)
		res.Committed = true
	}
	res.Number, res.HeadSHA, res.URL = p.number, p.head, "https://github.test/pull/"+strconv.Itoa(p.number)
	return lifecycle.Outcome{Proposal: &res}, nil
}

func sameField(a, b lifecycle.FieldChange) bool {
	return a.To == b.To && slices.Equal(a.Path, b.Path)
}

func (f *soakForge) Status(_ context.Context, key lifecycle.Key, number int) (lifecycle.ProposalState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	if p == nil || p.number != number {
		return lifecycle.ProposalState{State: lifecycle.ProposalNone}, nil
	}
	mergeable := true
	return lifecycle.ProposalState{State: p.state, Number: p.number, HeadSHA: p.head,
		Mergeable: &mergeable, MergeableState: "clean"}, nil
}

func (f *soakForge) ClosedSince(context.Context, lifecycle.Change, time.Time) (int, bool, error) {
	return 0, false, nil // nobody closes a PR in the soak
}

func (f *soakForge) Merge(_ context.Context, key lifecycle.Key, st lifecycle.ProposalState) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	switch {
	case p == nil || p.number != st.Number:
		return false, 0, lifecycle.ErrNoProposal
	case p.state == lifecycle.ProposalMerged:
		return true, 0, nil
	case p.head != st.HeadSHA:
		return false, time.Second, nil
	}
	p.state = lifecycle.ProposalMerged
	f.merged++
	return true, 0, nil
}

// OwnCommit: every commit in the soak is Kustos's (nobody pushes to its PRs).
func (f *soakForge) OwnCommit(_ context.Context, _ lifecycle.Key, sha string) (bool, error) {
	return strings.HasPrefix(sha, "sha-"), nil
}

// Withdraw closes an open PR (the quota detector of the soak never withdraws one).
func (f *soakForge) Withdraw(_ context.Context, key lifecycle.Key, number int, _ string, _ lifecycle.Group) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.prs[key]; p != nil && p.number == number && p.state == lifecycle.ProposalOpen {
		p.state = lifecycle.ProposalClosedByHuman
	}
	return nil
}

// mergedFields is what the Key's latest PR wrote to Git, once it is merged.
func (f *soakForge) mergedFields(key lifecycle.Key) ([]lifecycle.FieldChange, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.prs[key]
	if p == nil || p.state != lifecycle.ProposalMerged {
		return nil, false
	}
	return p.fields, true
}

func (f *soakForge) counts() (opened, merged int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened, f.merged
}
