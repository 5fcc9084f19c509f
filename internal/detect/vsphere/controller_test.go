package vsphere

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

type failingCrawler struct{ err error }

func (f failingCrawler) Crawl(context.Context) (vsphere.Crawl, error) { return vsphere.Crawl{}, f.err }

type orphanRecorder struct{ calls int }

func (o *orphanRecorder) SetOrphans(context.Context, []Orphan) error { o.calls++; return nil }

// TestLookCrawlFails: a crawl that fails (a configured folder that does not exist) is counted
// in kustos_vsphere_crawl_errors_total and changes nothing: no VM is looked at, and the orphan
// list is not replaced (its VMs do not flip to "no orphans").
func TestLookCrawlFails(t *testing.T) {
	before := crawlErrors(t)
	orphans := &orphanRecorder{}
	c := &Controller{Crawler: failingCrawler{fmt.Errorf(`--vsphere-folders: folder "lasb" does not exist: %w`, vsphere.ErrConfig)},
		Orphans: orphans, Interval: time.Minute, Now: time.Now, Log: logr.Discard()}
	if next := c.Look(context.Background()); next != time.Minute {
		t.Errorf("next look in %s, want the interval", next)
	}
	if got := crawlErrors(t) - before; got != 1 {
		t.Errorf("crawl errors counted: %v, want 1", got)
	}
	if orphans.calls != 0 {
		t.Errorf("the orphan list was replaced %d times after a failed crawl", orphans.calls)
	}
}

func crawlErrors(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.VSphereCrawlErrors.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

type fixedCrawler struct{ crawl *vsphere.Crawl }

func (f fixedCrawler) Crawl(context.Context) (vsphere.Crawl, error) { return *f.crawl, nil }

type fakeLeases struct{ uuids map[string]bool }

func (f *fakeLeases) SweepVMs(ctx context.Context, gone func(context.Context, string) (bool, error)) (int, error) {
	n := 0
	for u := range f.uuids {
		g, err := gone(ctx, u)
		if err != nil {
			return n, err
		}
		if g {
			delete(f.uuids, u)
			n++
		}
	}
	return n, nil
}

type fakeFinder struct {
	exists map[string]bool
	asked  int
}

func (f *fakeFinder) Exists(_ context.Context, uuid string) (bool, error) {
	f.asked++
	return f.exists[uuid], nil
}

// TestSweepGone: the Lease of a VM missing from 3 crawls over at least an hour, which vSphere
// no longer finds, is deleted; a VM still found (quarantined) keeps its Lease, as does one
// seen again, or missing for less than 3 crawls or an hour.
func TestSweepGone(t *testing.T) {
	const seen, destroyed, quarantined, brief = "u-seen", "u-destroyed", "u-quarantined", "u-brief"
	crawl := &vsphere.Crawl{VMs: []vsphere.VM{{UUID: seen}}}
	leases := &fakeLeases{uuids: map[string]bool{seen: true, destroyed: true, quarantined: true, brief: true}}
	finder := &fakeFinder{exists: map[string]bool{seen: true, quarantined: true, brief: true}}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	c := &Controller{Crawler: fixedCrawler{crawl}, Leases: leases, Finder: finder, Interval: time.Hour,
		Now: func() time.Time { return now }, Log: logr.Discard(), Pipeline: nil}
	look := func() {
		c.sweepGone(context.Background(), *crawl)
	}
	// Three crawls within a minute: not an hour yet, nothing asked.
	for range 3 {
		look()
		now = now.Add(20 * time.Second)
	}
	if finder.asked != 0 || len(leases.uuids) != 4 {
		t.Fatalf("after 3 quick crawls: asked %d, leases %v", finder.asked, leases.uuids)
	}
	// brief comes back.
	crawl.VMs = append(crawl.VMs, vsphere.VM{UUID: brief})
	now = now.Add(time.Hour)
	look()
	if leases.uuids[destroyed] || !leases.uuids[quarantined] || !leases.uuids[brief] || !leases.uuids[seen] {
		t.Errorf("after an hour and 4 crawls: leases %v; want destroyed's gone, the others kept", leases.uuids)
	}
	// brief goes missing again: counted from scratch.
	crawl.VMs = crawl.VMs[:1]
	now = now.Add(2 * time.Hour)
	look()
	look()
	if !leases.uuids[brief] {
		t.Errorf("brief's Lease deleted after 2 crawls of absence")
	}
}
