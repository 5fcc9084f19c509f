package main

import (
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
)

// What the bench reads from Kustos's /metrics (controller-runtime's and client-go's metrics,
// read with bench/internal/kmetrics).
const (
	metricReconciles = kmetrics.Reconciles
	metricRequests   = kmetrics.Requests
	metricErrors     = kmetrics.Errors

	// deploymentController is the name of the expiry detector's controller for Deployments
	// ("expiry-" + kind.group in lower case); expiryPrefix starts the names of all of its
	// controllers (Namespaces too).
	deploymentController = "expiry-deployment.apps"
	expiryPrefix         = "expiry-"
)

// expiryQueue is the expiry detector's work as its metrics say: reconciles of Deployments so
// far, and items ready in the queues or being reconciled by any of its controllers.
func expiryQueue(m kmetrics.Metrics) (kmetrics.Queue, error) {
	return kmetrics.ReadQueue(m, metricReconciles, kmetrics.ControllerIs(deploymentController), kmetrics.ControllerHasPrefix(expiryPrefix))
}

// passDone: the initial pass is over when, at two consecutive reads, at least n Deployments were
// reconciled, no more since, and nothing of the expiry detector is queued or being reconciled
// (kmetrics.Settled).
func passDone(prev, cur kmetrics.Queue, n int) bool {
	return kmetrics.Settled(prev, cur, float64(n))
}
