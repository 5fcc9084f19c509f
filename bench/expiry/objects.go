package main

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kustos-dev/kustos/bench/internal/objects"
)

// The annotations of internal/detect/expiry (spelled out: the bench measures the binary, and
// these are its public interface).
const (
	annotationOwner     = "kustos.io/owner"
	annotationExpiresAt = "kustos.io/expires-at"

	reasonWarning = "ExpiryWarning"
	reasonDue     = "ExpiryDue"

	scheduledNamespace = "expiry-scheduled"
)

func namespaceName(i int) string { return fmt.Sprintf("expiry-%03d", i) }

// idleName is idle Deployment i, in namespace i mod namespaces.
func idleName(i int) string { return fmt.Sprintf("env-%05d", i) }

func scheduledName(i int) string { return fmt.Sprintf("due-%03d", i) }

// deployment is an environment: no replicas (no pods needed), an owner and a deadline.
func deployment(ns, name, owner string, expiresAt time.Time) *appsv1.Deployment {
	return objects.Deployment(ns, name, 0, map[string]string{
		annotationOwner:     owner,
		annotationExpiresAt: expiresAt.UTC().Format(time.RFC3339),
	})
}

// deadlines spreads n deadlines evenly over base+from .. base+to, rounded to whole seconds
// (RFC 3339 in kustos.io/expires-at has whole seconds; base should be a whole second too).
func deadlines(base time.Time, n int, from, to time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		off := from
		if n > 1 {
			off += (to - from) * time.Duration(i) / time.Duration(n-1)
		}
		out[i] = base.Add(off).Round(time.Second)
	}
	return out
}
