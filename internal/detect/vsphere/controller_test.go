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
