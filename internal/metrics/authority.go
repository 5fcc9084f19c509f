package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// PermissionRefusals counts actions Kustos refused because whoever asked for them (a Cleaner's
// author) may not do them, or could not be verified, by detector and reason (no_author_key,
// author_unverified, author_denied).
var PermissionRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kustos_permission_refusals_total",
	Help: "Actions refused because the tenant who asked for them may not do them or could not be verified, by detector and reason.",
}, []string{"detector", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(PermissionRefusals)
}
