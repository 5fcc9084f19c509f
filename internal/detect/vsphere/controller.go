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

// VMLeases sweeps the VMs' state Leases: gone is asked about each one's instance UUID, and
// true deletes the Lease (one holding an open proposal or a pending decision is never asked).
type VMLeases interface {
	SweepVMs(ctx context.Context, gone func(ctx context.Context, uuid string) (bool, error)) (int, error)
}

// Finder tells whether vSphere still has a VM (anywhere in the datacenter, quarantine included).
type Finder interface {
	Exists(ctx context.Context, uuid string) (bool, error)
}

// A VM's Lease goes when the VM was missing from goneCrawls successful crawls in a row spanning
// at least goneAfter, and vSphere then finds no VM with its instance UUID.
const (
	goneCrawls = 3
	goneAfter  = time.Hour
)

// missing is how long a VM with a Lease has been missing from the crawls.
type missing struct {
	crawls int
	since  time.Time
}

var (
	_ Crawler = (*vsphere.Client)(nil)
	_ Finder  = (*vsphere.Client)(nil)
)

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
	// Leases and Finder remove the Lease of a VM destroyed by people (both nil: never).
	Leases VMLeases
	Finder Finder

	missed map[string]missing
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
	c.sweepGone(ctx, crawl)
	return next
}

// sweepGone deletes the Leases of VMs that are gone: missing from goneCrawls successful crawls
// in a row over at least goneAfter, and not found by vSphere by instance UUID (a quarantined VM,
// or one moved out of the crawled folders, is found: its Lease stays, and it is counted again).
// The counts are in memory: a restart starts them over, which only delays a removal.
func (c *Controller) sweepGone(ctx context.Context, crawl vsphere.Crawl) {
	if c.Leases == nil || c.Finder == nil {
		return
	}
	now := c.Now()
	seen := make(map[string]bool, len(crawl.VMs))
	for _, vm := range crawl.VMs {
		seen[vm.UUID] = true
	}
	missed := map[string]missing{}
	n, err := c.Leases.SweepVMs(ctx, func(ctx context.Context, uuid string) (bool, error) {
		if seen[uuid] {
			return false, nil
		}
		m, ok := c.missed[uuid]
		if !ok {
			m.since = now
		}
		m.crawls++
		missed[uuid] = m
		if m.crawls < goneCrawls || now.Sub(m.since) < goneAfter {
			return false, nil
		}
		exists, err := c.Finder.Exists(ctx, uuid)
		if err != nil {
			c.Log.Error(err, "asking vSphere whether a VM with a Lease still exists failed; asked again at the next crawl", "uuid", uuid)
			return false, nil
		}
		if exists {
			delete(missed, uuid)
			return false, nil
		}
		c.Log.Info("VM gone from vSphere: its state Lease is deleted", "uuid", uuid, "missingSince", m.since, "crawls", m.crawls)
		delete(missed, uuid)
		return true, nil
	})
	c.missed = missed
	if err != nil {
		c.Log.Error(err, "sweeping the Leases of VMs gone from vSphere failed; tried again at the next crawl")
	}
	if n > 0 {
		metrics.LeasesSwept.Add(float64(n))
	}
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
