package extension

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rateLimited counts requests answered 429, by the bucket that was empty: "client" (one
// address, or an IPv6 /64), "link" (one extension link, from any address) or "owner" (one
// owner's page, from any address).
var rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kustos_extension_rate_limited_total",
	Help: "Extension requests answered 429 Too Many Requests, by the limit they hit (client, link or owner).",
}, []string{"by"})

func init() { ctrlmetrics.Registry.MustRegister(rateLimited) }
