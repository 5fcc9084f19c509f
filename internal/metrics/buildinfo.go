package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/internal/buildinfo"
)

// BuildInfo is 1, labelled with the running binary's version, commit, build date and Go
// version, so that dashboards and alerts can tell which Kustos each replica runs (as
// kube-state-metrics' and Prometheus's own *_build_info).
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "kustos_build_info",
	Help: "1, labelled with the version, commit, build date and Go version of the running Kustos.",
}, []string{"version", "commit", "date", "goversion"})

func init() {
	i := buildinfo.Get()
	BuildInfo.WithLabelValues(i.Version, i.Commit, i.Date, i.GoVersion).Set(1)
	ctrlmetrics.Registry.MustRegister(BuildInfo)
}
