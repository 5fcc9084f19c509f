package objcache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TargetPlan says which cache holds what of the kinds the Cleaners share with the inactivity
// and expiry detectors, so that each object of such a kind is cached once. The Cleaners'
// target cache holds objects whole (trimmed to the fields their readers read); the manager's
// cache holds the rest as CacheOptions says.
type TargetPlan struct {
	// HeldWhole are the kinds the target cache holds as objects from the start, for the
	// inactivity detector (with Cleaners on; without them it has no target cache): the Cleaners
	// and the expiry detector read their metadata from those objects (MetadataView).
	// Namespaces and FilteredKinds never: the manager's cache holds those.
	HeldWhole map[schema.GroupVersionKind]bool
	// SharedMetadata are the expiry detector's kinds whose metadata the Cleaners read from the
	// manager's cache, kept there with every label and annotation, so that one informer serves
	// both detectors' metadata reads of such a kind (the target cache serves the rest).
	SharedMetadata map[schema.GroupVersionKind]bool
	// shared is SharedMetadata in the order of the expiry detector's kinds.
	shared []lifecycle.ObjectKind
	// cleanersReadExpiry: Cleaners and the expiry detector both run.
	cleanersReadExpiry bool
}

// PlanTargets plans the caches of the kinds the detectors share. cleaners says whether the
// Cleaner detector runs; inactivity and expiry are the kinds of those detectors (nil: off).
func PlanTargets(cleaners bool, inactivity, expiry []schema.GroupVersionKind) TargetPlan {
	p := TargetPlan{HeldWhole: map[schema.GroupVersionKind]bool{}, SharedMetadata: map[schema.GroupVersionKind]bool{}}
	if !cleaners {
		return p
	}
	for _, k := range inactivity {
		if k != corev1.SchemeGroupVersion.WithKind("Namespace") && !FilteredKinds[k] {
			p.HeldWhole[k] = true
		}
	}
	p.cleanersReadExpiry = expiry != nil
	for _, k := range expiry {
		if FilteredKinds[k] || p.HeldWhole[k] {
			continue // the manager's cache holds only some of them, or the target cache all
		}
		p.SharedMetadata[k] = true
		p.shared = append(p.shared, lifecycle.ObjectKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	}
	return p
}

// CleanerWatches is what the Cleaners read from the manager's cache: SharedMetadata, whole.
func (p TargetPlan) CleanerWatches() []lifecycle.Watches {
	if !p.cleanersReadExpiry {
		return nil
	}
	return []lifecycle.Watches{{WholeMetadata: p.shared}}
}

// InManager are those of kinds the manager's cache holds, the others being HeldWhole.
func (p TargetPlan) InManager(kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range kinds {
		if !p.HeldWhole[k] {
			out = append(out, k)
		}
	}
	return out
}
