package vsphere

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// Crawler lists the VMs (*vsphere.Client).
type Crawler interface {
	Crawl(ctx context.Context) (vsphere.Crawl, error)
}

// StateReader reads the expiry state a Key's Lease keeps; found is false without a Lease.
type StateReader interface {
	ExpiryState(ctx context.Context, key lifecycle.Key) (st expiry.State, found bool, err error)
}

// OrphanReport keeps the last crawl's orphans for `kustos status --orphans` and the digest.
type OrphanReport interface {
	SetOrphans(ctx context.Context, orphans []Orphan) error
}

var _ Crawler = (*vsphere.Client)(nil)

// Orphan is a VM the detector leaves alone: no owner or no lifetime in its notes and none kept,
// or notes it cannot use.
type Orphan struct {
	// Target is the VM as people know it (Label).
	Target  string    `json:"target"`
	UUID    string    `json:"uuid"`
	Missing []string  `json:"missing,omitempty"`
	Problem string    `json:"problem,omitempty"`
	Created time.Time `json:"created,omitempty"`
}

// orphanKind is the kind label of VM orphans in kustos_expiry_orphans.
const orphanKind = Kind + "." + Group

// minLook bounds how soon the controller crawls again when a VM's schedule asks.
const minLook = time.Second

// Controller crawls the VMs and hands each one's decision to the expiry pipeline.
type Controller struct {
	Crawler  Crawler
	State    StateReader
	Pipeline expiry.Pipeline
	Reporter expiry.Reporter
	Orphans  OrphanReport
	Settings expiry.Settings
	Links    func(key lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error)
	// Interval is --vsphere-crawl-interval; a VM's schedule (a warning due, a removal) makes
	// the next crawl sooner.
	Interval time.Duration
	Now      func() time.Time
	Log      logr.Logger
}

// NeedLeaderElection: one replica crawls and acts.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start crawls until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	for {
		next := c.Look(ctx)
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Look crawls once and decides about every VM; it returns when to look again. A failed crawl
// is counted and logged and tried again at the next interval; a VM whose look fails does not
// stop the others.
func (c *Controller) Look(ctx context.Context) time.Duration {
	start := time.Now()
	defer func() {
		metrics.ReconcileDuration.WithLabelValues(expiry.DetectorName).Observe(time.Since(start).Seconds())
	}()
	next := c.Interval
	crawl, err := c.Crawler.Crawl(ctx)
	if err != nil {
		metrics.VSphereCrawlErrors.Inc()
		c.Log.Error(err, "vSphere crawl failed; trying again at the next interval", "interval", c.Interval)
		return next
	}
	metrics.VSphereVMs.Set(float64(len(crawl.VMs)))
	for _, p := range crawl.Skipped {
		c.Log.V(1).Info("VM without an instance UUID skipped (being created?)", "path", p)
	}
	var orphans []Orphan
	for _, vm := range crawl.VMs {
		after, orphan, err := c.lookAt(ctx, vm)
		if err != nil {
			c.Log.Error(err, "deciding about a VM failed; trying again at the next crawl", "vm", vm.Name, "path", vm.Path, "uuid", vm.UUID)
			continue
		}
		if orphan != nil {
			orphans = append(orphans, *orphan)
		}
		if after > 0 && after < next {
			next = max(after, minLook)
		}
	}
	metrics.ExpiryOrphans.WithLabelValues(orphanKind).Set(float64(len(orphans)))
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].Target < orphans[j].Target })
	if c.Orphans != nil {
		if err := c.Orphans.SetOrphans(ctx, orphans); err != nil {
			c.Log.Error(err, "recording the VM orphans for kustos status and the digest failed")
		}
	}
	return next
}

// lookAt decides about one VM: its notes, the lifetime its Lease keeps, then the pipeline.
func (c *Controller) lookAt(ctx context.Context, vm vsphere.VM) (time.Duration, *Orphan, error) {
	now := c.Now()
	target := Target(vm.UUID)
	key := lifecycle.KeyFor(expiry.DetectorName, target)
	log := c.Log.WithValues("vm", vm.Name, "path", vm.Path, "uuid", vm.UUID)
	notes, noteProblems := vsphere.ParseNotes(vm.Notes)
	ref := corev1.ObjectReference{APIVersion: Group + "/" + Version, Kind: Kind, Name: target.Name}
	st, found, err := c.State.ExpiryState(ctx, key)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the state of %s: %w", key, err)
	}
	policy, _, problems := PolicyOf(vm, notes, st.Kept, c.Settings, now)
	problems = append(NoteProblems(vm, noteProblems), problems...)
	if err := expiry.ReportProblems(ctx, c.Reporter, log, ref, nil, problems, now); err != nil {
		return 0, nil, err
	}
	if m := policy.Missing(); len(m) > 0 && (!found || st.Kept.IsZero()) {
		// Nothing kept and the notes do not give both: an orphan, reported and left alone, and
		// no Lease for it. Notes Kustos cannot use are the reason, when there are some.
		o := &Orphan{Target: Label(vm), UUID: vm.UUID, Missing: m, Created: vm.Created}
		if len(problems) > 0 {
			o.Missing, o.Problem = nil, problemText(problems)
		}
		return 0, o, nil
	}
	if policy.Ignored || policy.Owner == "" || (policy.Deadline.IsZero() && !policy.Never) {
		// A kept lifetime that cannot be used now (an owner without an address, with mail):
		// reported above; nothing to schedule.
		return 0, nil, nil
	}
	req := expiry.KeptRequest(key, target, "", now, c.Settings, c.Links, log, func(st expiry.State) (expiry.Policy, expiry.Kept) {
		p, k, _ := PolicyOf(vm, notes, st.Kept, c.Settings, now)
		return p, k
	})
	res, err := c.Pipeline.Run(ctx, req)
	if res.Committed != nil {
		metrics.Decisions.WithLabelValues(expiry.DetectorName, string(res.Committed.Edit.Op)).Inc()
	}
	return res.RequeueAfter, nil, err
}

func problemText(ps []expiry.Problem) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += "; "
		}
		s += p.String()
	}
	return s
}
