//go:build tools

// Package tools pins Prometheus and promtool, which hack/setup-testbin.sh builds into bin/.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
