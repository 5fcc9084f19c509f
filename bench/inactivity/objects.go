package main

import (
	"fmt"

	"github.com/kustos-dev/kustos/bench/internal/promrun"
)

// The annotation and state the bench reads, spelled out: the bench measures the binary, and
// these are its public interface (internal/detect/inactivity, internal/state).
const (
	annotationOwner = "kustos.io/owner"

	labelDetector        = "kustos.io/detector"
	labelTargetNamespace = "kustos.io/target-namespace"
	annotationTargetName = "kustos.io/target-name"
	bagLastActivity      = "bag.kustos.io/last-activity"
)

func namespaceName(i int) string { return fmt.Sprintf("inact-%03d", i) }

func owner(i int) string { return fmt.Sprintf("team-%02d@example.com", i) }

// targetAt is target i: Deployment env-NNNNN in namespace i mod namespaces.
func targetAt(i, namespaces int) target {
	return target{Namespace: namespaceName(i % namespaces), Name: fmt.Sprintf("env-%05d", i)}
}

// activeTargets are every (n/active)-th target, alternately in use through the ingress (nginx)
// and the bastion.
func activeTargets(n, namespaces, active int) []activeTarget {
	if active <= 0 {
		return nil
	}
	stride := n / active
	out := make([]activeTarget, active)
	for j := range out {
		src := promrun.SourceNginx
		if j%2 == 1 {
			src = promrun.SourceBastion
		}
		out[j] = activeTarget{Target: targetAt(j*stride, namespaces), Source: src}
	}
	return out
}

// activityCheck compares the targets whose state Lease holds a last activity with those in use.
type activityCheck struct {
	leases       int      // the inactivity detector's state Leases
	seen         int      // active targets with a last activity
	missing      []string // active targets without one (a few)
	idleSeen     int      // idle targets with a last activity
	idleExamples []string // a few of them
}

// compareActivity: withActivity are the targets ("namespace/name") whose Lease holds a last
// activity.
func compareActivity(active []activeTarget, leases int, withActivity map[string]bool) activityCheck {
	c := activityCheck{leases: leases}
	want := map[string]bool{}
	for _, a := range active {
		want[a.String()] = true
		if withActivity[a.String()] {
			c.seen++
		} else if len(c.missing) < 5 {
			c.missing = append(c.missing, a.String()+" ("+a.Source+")")
		}
	}
	for key := range withActivity {
		if !want[key] {
			c.idleSeen++
			if len(c.idleExamples) < 5 {
				c.idleExamples = append(c.idleExamples, key)
			}
		}
	}
	return c
}
