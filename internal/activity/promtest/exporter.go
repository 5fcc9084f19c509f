package promtest

import (
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Exporter is a loopback HTTP server exposing Registry at /metrics (any path, in fact), for
// [Options.Scrape]. Register collectors and set their values; Prometheus sees them at its next
// scrape.
type Exporter struct {
	// Registry is empty at first: no Go runtime or process collectors, only what the test
	// registers.
	Registry *prometheus.Registry
	// Addr is the server's host:port.
	Addr string
}

// NewExporter starts an Exporter; it is closed when the test ends.
func NewExporter(t TB) *Exporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return &Exporter{Registry: reg, Addr: srv.Listener.Addr().String()}
}
