package main

import (
	"github.com/kustos-dev/kustos/bench/internal/promrun"
)

// The metrics the default activity sources read, as bench/internal/promrun's exporter serves
// them.
const (
	metricNginxRequests = promrun.MetricNginxRequests
	metricBastion       = promrun.MetricBastion
)

// sourceMarkers tell which default source a query belongs to: the metric it reads.
var sourceMarkers = []struct{ source, metric string }{
	{promrun.SourceNginx, metricNginxRequests},
	{promrun.SourceBastion, metricBastion},
}

// target is a Deployment: its namespace and name.
type target = promrun.Target

// activeTarget is a target in use, and the source that says so.
type activeTarget = promrun.Active
