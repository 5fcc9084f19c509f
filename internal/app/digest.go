package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

// NoticeOrphans is the kind of the daily orphan digest.
const NoticeOrphans = "expiry.orphans"

// maxDigestRows bounds one digest: the rest is counted, `kustos status --orphans` lists all.
const maxDigestRows = 200

// orphanDigest mails the orphan report (what the expiry detector leaves alone for want of an
// owner or a lifetime, or for metadata it cannot use) to the administrators every interval, on
// the leader only. It keeps no state: a restart may send one digest early, never a flood.
type orphanDigest struct {
	reader client.Reader // the API server, in pages, once a day
	kinds  []schema.GroupVersionKind
	// namespaces selects the namespaces this installation serves (--namespace-selector; nil:
	// all): another installation's orphans are its administrators' digest.
	namespaces labels.Selector
	// stateNamespace holds the vSphere crawl's orphans (statusreport.VMOrphans).
	stateNamespace string
	settings       expiry.Settings
	notifier       pipeline.Notifier
	to             string
	interval       time.Duration
	now            func() time.Time
	log            logr.Logger
}

func (d *orphanDigest) NeedLeaderElection() bool { return true }

func (d *orphanDigest) Start(ctx context.Context) error {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := d.send(ctx); err != nil {
			d.log.Error(err, "orphan digest not sent; trying again at the next interval")
		}
	}
}

func (d *orphanDigest) send(ctx context.Context) error {
	now := d.now()
	rows, err := statusreport.Orphans(ctx, d.reader, d.kinds, d.settings, now, d.namespaces)
	if err != nil {
		return err
	}
	vms, err := statusreport.VMOrphans(ctx, d.reader, d.stateNamespace, now)
	if err != nil {
		return err
	}
	rows = append(rows, vms...)
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d objects are left alone by Kustos's expiry detector: they have no owner (kustos.io/owner) or no lifetime (kustos.io/ttl, kustos.io/expires-at; EC_OWNER and EC_TTL in a VM's notes), or their metadata cannot be used. Add the metadata in Git (or the VM's notes), or opt the namespace out (kustos.io/expiration-ignore: \"true\"; a VM: --vsphere-ignore or another folder). `kustos status --orphans` lists them all.\n", len(rows))
	for i, r := range rows {
		if i == maxDigestRows {
			fmt.Fprintf(&b, "… and %d more\n", len(rows)-maxDigestRows)
			break
		}
		why := "missing " + strings.Join(r.Missing, " and ")
		if r.Problem != "" {
			why = r.Problem
		}
		fmt.Fprintf(&b, "- %s: %s (age %s)\n", r.Target, why, r.Age.Round(time.Hour))
	}
	n := lifecycle.Notice{ID: NoticeOrphans + "|" + now.UTC().Format("2006-01-02T15"), Kind: NoticeOrphans, To: d.to,
		Subject: fmt.Sprintf("Kustos: %d environments without an owner or a lifetime", len(rows)), Text: b.String(), At: now}
	if err := d.notifier.Send(ctx, n); err != nil {
		return err
	}
	d.log.Info("orphan digest sent", "orphans", len(rows))
	return nil
}
