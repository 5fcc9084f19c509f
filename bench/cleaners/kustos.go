package main

import (
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// startKustos starts `kustos run` in observer mode with the Cleaner detector as a separate
// process (see kustosproc.Start: Go's defaults for GOMAXPROCS and GOMEMLIMIT, Kustos's
// --gogc), its output going to logPath.
func startKustos(path, kubeconfig, logPath, logLevel string) (*kustosproc.Process, error) {
	return kustosproc.Start(path, []string{
		"--kubeconfig=" + kubeconfig,
		"--mode=observe",
		"--enable-cleaners=true",
		"--state-namespace=" + stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--log-level=" + logLevel,
	}, logPath)
}
