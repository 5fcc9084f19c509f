package statusreport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/recommend"
	"github.com/kustos-dev/kustos/internal/state"
)

// GatherReclaim is what the quotas could give back, per resource: `kustos recommend`'s
// decision (quota.Decide, with run's default flags) over the cluster's Namespaces,
// ResourceQuotas and FailedCreate Events and the usage windows the state Leases of namespace
// keep, or Prometheus (history, when not nil, as --prometheus-url). A quota whose window Kustos
// reads from Prometheus has none in its Lease: without history its shrinks count as held back
// by window.
func GatherReclaim(ctx context.Context, c client.Reader, namespace string, history quota.History, now time.Time) (quota.ReclaimTotals, error) {
	var objs []recommend.Object
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil {
		return nil, fmt.Errorf("listing Namespaces: %w", err)
	}
	for i := range namespaces.Items {
		objs = append(objs, recommend.Object{Object: &namespaces.Items[i]})
	}
	var quotas corev1.ResourceQuotaList
	if err := c.List(ctx, &quotas); err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas: %w", err)
	}
	if len(quotas.Items) == 0 {
		return quota.ReclaimTotals{}, nil
	}
	for i := range quotas.Items {
		objs = append(objs, recommend.Object{Object: &quotas.Items[i]})
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.MatchingFields{"reason": quota.EventReasonFailedCreate}); err != nil {
		return nil, fmt.Errorf("listing FailedCreate Events: %w", err)
	}
	for i := range events.Items {
		objs = append(objs, recommend.Object{Object: &events.Items[i]})
	}
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{state.LabelManagedBy: state.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing state Leases in %s: %w", namespace, err)
	}
	for i := range leases.Items {
		objs = append(objs, recommend.Object{Object: &leases.Items[i]})
	}
	var q cli.Quota
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	q.AddFlags(fs) // run's defaults: nothing is parsed
	q.AddWindowFlags(fs)
	res := recommend.Recommend(ctx, objs, recommend.Options{Now: now, Defaults: q.Defaults, Cooldown: q.Cooldown, Window: q.Window, History: history})
	return res.Totals, nil
}

// PrintReclaim writes the totals after the rows: in the table, a section of one line per
// resource ("requests.cpu: 184 reclaimable in 61 quotas; 40 blocked by window"); as JSON, one
// line {"totals":{…}} as `kustos recommend` prints it. Nothing without totals.
func PrintReclaim(w io.Writer, totals quota.ReclaimTotals, format string) error {
	if len(totals) == 0 {
		return nil
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(recommend.TotalsOf(totals))
	}
	if _, err := fmt.Fprintln(w, "\nRECLAIMABLE (quotas above their usage window's target)"); err != nil {
		return err
	}
	for _, r := range totals.Resources() {
		if _, err := fmt.Fprintf(w, "%s: %s\n", r, totals[r].Summary()); err != nil {
			return err
		}
	}
	return nil
}
