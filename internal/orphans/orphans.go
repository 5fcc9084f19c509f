package orphans

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Row is an object of a lifecycle kind that the expiry detector leaves alone because it
// lacks an owner or a lifetime, or because its metadata cannot be used.
type Row struct {
	// Target is Kind[.group]/namespace/name (Namespace/name for Namespaces).
	Target string `json:"target"`
	// Missing lists "owner" and/or "lifetime"; empty when Problem says why instead.
	Missing []string `json:"missing,omitempty"`
	// Problem is metadata Kustos cannot use (the InvalidExpiryMetadata Event's message).
	Problem string        `json:"problem,omitempty"`
	Age     time.Duration `json:"age"`
}

// listPage bounds each list request: a large cluster's Deployments arrive in pages.
const listPage = 500

// List lists the Namespaces and the objects of kinds (metadata only, in pages) and returns
// those the expiry detector would leave alone for want of an owner or a lifetime, or for
// metadata it cannot use, sorted by target. It runs the detector's own lookup (SourcesOf,
// ParsePolicy). Only the Namespaces sel selects, and the objects in them, are listed (nil: every
// namespace): an installation that serves some namespaces (--namespace-selector) reports the
// orphans it would otherwise act on, not another installation's.
func List(ctx context.Context, c client.Reader, kinds []schema.GroupVersionKind, s expiry.Settings, now time.Time, sel labels.Selector) ([]Row, error) {
	nsGVK := corev1.SchemeGroupVersion.WithKind("Namespace")
	namespaces := map[string]*expiry.Meta{}
	var rows []Row
	selected := map[string]bool{}
	add := func(gvk schema.GroupVersionKind, o metav1.PartialObjectMetadata) {
		if ns := o.Namespace; (gvk == nsGVK && !selected[o.Name]) || (ns != "" && !selected[ns]) {
			return
		}
		t := lifecycle.Target{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.Namespace, Name: o.Name}
		p, problems := expiry.ParsePolicy(o.CreationTimestamp.Time, expiry.SourcesOf(t, expiry.Meta{Labels: o.Labels, Annotations: o.Annotations}, namespaces[o.Namespace]),
			expiry.Scalable(gvk), s)
		row := Row{Target: strings.TrimPrefix(t.KindGroup()+"/"+t.Namespace+"/"+t.Name, "/"), Age: age(o.CreationTimestamp.Time, now)}
		if gvk == nsGVK {
			row.Target = "Namespace/" + o.Name
		}
		switch {
		case len(problems) > 0:
			msgs := make([]string, len(problems))
			for i, pr := range problems {
				msgs[i] = pr.String()
			}
			row.Problem = strings.Join(msgs, "; ")
		case len(p.Missing()) > 0:
			row.Missing = p.Missing()
		default:
			return
		}
		rows = append(rows, row)
	}
	nsItems, err := listMeta(ctx, c, nsGVK)
	if err != nil {
		return nil, err
	}
	for i := range nsItems {
		namespaces[nsItems[i].Name] = &expiry.Meta{Labels: nsItems[i].Labels, Annotations: nsItems[i].Annotations}
		selected[nsItems[i].Name] = sel == nil || sel.Matches(labels.Set(nsItems[i].Labels))
	}
	for i := range nsItems {
		add(nsGVK, nsItems[i])
	}
	for _, k := range kinds {
		items, err := listMeta(ctx, c, k)
		if err != nil {
			return nil, err
		}
		for i := range items {
			add(k, items[i])
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Target < rows[j].Target })
	return rows, nil
}

func listMeta(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.Limit(listPage), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		out = append(out, list.Items...)
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}

// age is now - created to the second; 0 when created is unknown.
func age(created, now time.Time) time.Duration {
	if created.IsZero() {
		return 0
	}
	return now.Sub(created).Truncate(time.Second)
}
