package activity

import v1 "github.com/prometheus/client_golang/api/prometheus/v1"

// Describe says what went wrong asking Prometheus, as a check's Detail does: 401 and 403 in
// words, Prometheus's own error clipped, a transport error without the URL's credentials. For
// the other readers of the same Prometheus (internal/quotahistory), so that they word failures
// alike and never leak a password from --prometheus-url.
func Describe(err error) string { return describe(err) }

// ClipWarnings are Prometheus's warnings for a log or a reviewer: at most five, each clipped,
// without URL credentials.
func ClipWarnings(ws v1.Warnings) []string { return clipWarnings(ws) }
