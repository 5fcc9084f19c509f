// Package quotahistory says what a ResourceQuota's usage was over the sizing window, so that the
// quota detector (internal/detect/quota) can size a quota from its peak and give back what a
// team no longer uses.
//
// Window is the one answer every history source gives: the peak of each resource over the
// window, when it happened, and whether the history covers the whole window. A window that is
// not complete never looks like low usage: the detector holds a shrink back with gate "window".
//
// It owns:
//
//   - Window and Peak, that contract;
//   - Prometheus, the source that reads kube-state-metrics' kube_resourcequota{type="used"} for
//     every quota at once, whatever their number: the peak of each resource per UTC day, each
//     closed day read once (four days a query) and today again at each refresh (default
//     hourly), the answer read as it streams in. A window is complete only when the history
//     reaches back past its start with no day missing; an unreachable Prometheus, a failed
//     query or an answer with a warning (partial) leaves every window incomplete, said in
//     words. Window.Days holds each resource's daily peaks, for a chart of the window, and
//     Daily the same peaks gathered by day;
//   - Step, the day buckets sized under Prometheus's 11,000 points per series, and Quantity,
//     kube-state-metrics' floats (cpu in cores, memory in bytes) as exact Quantities, rounded
//     up, never down.
//
// How Prometheus is reached (URL, bearer token file, CA file, whole answers only) is
// internal/activity's Access, shared with the inactivity detector.
package quotahistory
