package orphans

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
)

// Notifier sends the digest (the administrators' mail).
type Notifier interface {
	Send(ctx context.Context, n lifecycle.Notice) error
}

// NoticeOrphans is the kind of the daily orphan digest.
const NoticeOrphans = "expiry.orphans"

// maxDigestRows bounds one digest: the rest is counted, `kustos status --orphans` lists all.
const maxDigestRows = 200

// Digest mails the orphan report (what the expiry detector leaves alone for want of an
// owner or a lifetime, or for metadata it cannot use) to the administrators every interval, on
// the leader only. It keeps no state: a restart may send one digest early, never a flood.
type Digest struct {
	Reader client.Reader // the API server, in pages, once a day
	Kinds  []schema.GroupVersionKind
	// namespaces selects the namespaces this installation serves (--namespace-selector; nil:
	// all): another installation's orphans are its administrators' digest.
	Namespaces labels.Selector
	// stateNamespace holds the vSphere crawl's orphans (VMs).
	StateNamespace string
	Settings       expiry.Settings
	Notifier       Notifier
	To             string
	Interval       time.Duration
	Now            func() time.Time
	Log            logr.Logger
}

// NeedLeaderElection is true: the leader alone sends the digest.
func (d *Digest) NeedLeaderElection() bool { return true }

// Start sends the digest every Interval until ctx ends; a digest not sent is logged.
func (d *Digest) Start(ctx context.Context) error {
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := d.send(ctx); err != nil {
			d.Log.Error(err, "orphan digest not sent; trying again at the next interval")
		}
	}
}

func (d *Digest) send(ctx context.Context) error {
	now := d.Now()
	rows, err := List(ctx, d.Reader, d.Kinds, d.Settings, now, d.Namespaces)
	if err != nil {
		return err
	}
	vms, err := VMs(ctx, d.Reader, d.StateNamespace, now)
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
	n := lifecycle.Notice{ID: NoticeOrphans + "|" + now.UTC().Format("2006-01-02T15"), Kind: NoticeOrphans, To: d.To,
		Subject: fmt.Sprintf("Kustos: %d environments without an owner or a lifetime", len(rows)), Text: b.String(), At: now}
	if err := d.Notifier.Send(ctx, n); err != nil {
		return err
	}
	d.Log.Info("orphan digest sent", "orphans", len(rows))
	return nil
}
