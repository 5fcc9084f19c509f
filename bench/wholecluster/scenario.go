package main

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/bench/internal/expirysched"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/promrun"
)

// The annotation that makes a Deployment an inactivity target (internal/detect/inactivity's,
// spelled out: the bench measures the binary). Its timeout is far beyond the run, so no target
// goes idle.
const (
	annotationInactivityTimeout = "kustos.io/inactivity-timeout"
	inactivityTimeout           = "2h"

	// sharedCondition is the condition text 90% of the Cleaners share, as CI-generated Cleaners
	// do: true once the target Deployment is scaled to zero.
	sharedCondition = `d.spec.replicas == 0`

	scheduledNamespace = "wc-scheduled"
)

// role is what a Deployment is there for.
type role int

const (
	ordinary role = iota
	expiryTarget
	inactivityTarget
)

// roleOf: every tenth Deployment (i mod 10 = 1) is an expiry target, every tenth (i mod 10 = 2)
// an inactivity target, the rest are ordinary.
func roleOf(i int) role {
	switch i % 10 {
	case 1:
		return expiryTarget
	case 2:
		return inactivityTarget
	}
	return ordinary
}

func namespaceName(i int) string  { return fmt.Sprintf("wc-%05d", i) }
func deploymentName(i int) string { return fmt.Sprintf("app-%05d", i) }
func cleanerName(j int) string    { return fmt.Sprintf("c-%05d", j) }
func owner(i int) string          { return fmt.Sprintf("team-%03d@example.com", i%1000) }

// shape is the scenario's objects by index: Deployment i lives in namespace i mod namespaces.
type shape struct {
	namespaces, deployments, cleaners int
	ordinary, expiry, inactivity      []int // Deployment indexes by role
}

func newShape(namespaces, deployments, cleaners int) shape {
	s := shape{namespaces: namespaces, deployments: deployments, cleaners: cleaners}
	for i := 0; i < deployments; i++ {
		switch roleOf(i) {
		case expiryTarget:
			s.expiry = append(s.expiry, i)
		case inactivityTarget:
			s.inactivity = append(s.inactivity, i)
		default:
			s.ordinary = append(s.ordinary, i)
		}
	}
	return s
}

func (s shape) namespaceNames() []string {
	out := make([]string, s.namespaces)
	for i := range out {
		out[i] = namespaceName(i)
	}
	return out
}

func (s shape) namespaceOf(i int) string { return namespaceName(i % s.namespaces) }

// deployment is Deployment i: an expiry target has kustos.io/owner and kustos.io/expires-at at
// expires; an inactivity target has kustos.io/owner and kustos.io/inactivity-timeout; every one
// has replicas 1 (no controller-manager runs, so nothing runs them).
func (s shape) deployment(i int, expires time.Time) *appsv1.Deployment {
	ns, name := s.namespaceOf(i), deploymentName(i)
	switch roleOf(i) {
	case expiryTarget:
		return expirysched.Deployment(ns, name, 1, owner(i), expires)
	case inactivityTarget:
		return objects.Deployment(ns, name, 1, map[string]string{
			expirysched.AnnotationOwner: owner(i), annotationInactivityTimeout: inactivityTimeout})
	}
	return objects.Deployment(ns, name, 1, nil)
}

// target is inactivity target i as the exporter names it.
func (s shape) target(i int) promrun.Target {
	return promrun.Target{Namespace: s.namespaceOf(i), Name: deploymentName(i)}
}

// activity: 90% of the inactivity targets are in use (the k-th with k mod 10 ≠ 9),
// alternately through the ingress and the bastion; the rest have flat series. With a
// timeout of 2h none goes idle during the run either way.
func (s shape) activity() (all []promrun.Target, active []promrun.Active) {
	for k, i := range s.inactivity {
		t := s.target(i)
		all = append(all, t)
		if k%10 == 9 {
			continue
		}
		src := promrun.SourceNginx
		if k%2 == 1 {
			src = promrun.SourceBastion
		}
		active = append(active, promrun.Active{Target: t, Source: src})
	}
	return all, active
}

// cleanerTarget is the ordinary Deployment Cleaner j watches.
func (s shape) cleanerTarget(j int) int { return s.ordinary[j] }

// cleaner is Cleaner j: one Deployment target d (the j-th ordinary Deployment, delete: true,
// but observer mode deletes nothing), TTL 1s, retry period 1h. Nine in ten share
// sharedCondition; the tenth has a text of its own with the same meaning.
func (s shape) cleaner(j int) *v1alpha1.Cleaner {
	i := s.cleanerTarget(j)
	cond := sharedCondition
	if j%10 == 9 {
		cond = fmt.Sprintf(`d.spec.replicas == 0 && d.metadata.name != "never-%05d"`, j)
	}
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespaceOf(i), Name: cleanerName(j)},
		Spec: v1alpha1.CleanerSpec{
			TTL:   "1s",
			Retry: v1alpha1.Retry{Period: "1h"},
			Targets: []v1alpha1.Target{{Name: "d", Delete: true,
				Reference: v1alpha1.Reference{APIGroup: "apps", Version: "v1", Kind: "Deployment", Name: deploymentName(i)}}},
			Conditions: []string{cond},
		},
	}
}
