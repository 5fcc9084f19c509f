// Package activity reads when targets were last used from Prometheus, for the inactivity detector
// (internal/detect/inactivity), as CrownLabs does with ingress-nginx's request counter and its SSH
// bastion tracker.
//
// It owns four things:
//
//   - the sources file (--inactivity-config): per source, an availability query (is the source
//     collecting at all?) and a data query (when was each target last active?), as Go templates
//     over the query window and step; LoadConfig says precisely what is wrong with it, by
//     position and field;
//   - Checker, one check cycle: ONE Prometheus query per source for every target at once
//     (grouped by namespace and name), never one per target, with the step rule that keeps a
//     range query under Prometheus's 11,000 points per series; an answer with a warning (Thanos
//     with a store down) is partial, and so unknown, never silence;
//   - Access, how Prometheus is reached (URL, bearer token file, CA file), with Prometheus's own
//     HTTP client configuration underneath, asking for whole answers (partial_response=false);
//   - Tracker, what the cycles have seen: the last activity per (namespace, name) and since when
//     each source's silence is evidence (coverage), so that missing data never counts as
//     inactivity.
//
// Nothing here decides what is inactive: that is the detector's pure Decide.
package activity
