package github

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	apiCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_github_api_calls_total",
		Help: "HTTP requests sent to the GitHub API (each attempt), by endpoint template, method and status code (\"error\" when no response).",
	}, []string{"endpoint", "method", "code"})

	rateLimitRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_github_rate_limit_remaining",
		Help: "Last x-ratelimit-remaining reported by GitHub, by rate-limit resource.",
	}, []string{"resource"})

	errorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_github_errors_total",
		Help: "GitHub faults seen, by kind: network, timeout, server_error, rate_limit, secondary_rate_limit (per attempt); not_found, conflict, validation, not_mergeable, unauthorized, credentials, rate_limited, unavailable, other (per failed client call).",
	}, []string{"kind"})

	retriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_github_retries_total",
		Help: "GitHub requests retried, by reason (network, server_error, rate_limit, secondary_rate_limit).",
	}, []string{"reason"})

	writeTokens = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_github_write_tokens_available",
		Help: "Content-creating GitHub requests the client may send now without waiting, by window: minute (the paced rate's bucket) and hour (the hourly budget).",
	}, []string{"window"})

	waitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kustos_github_wait_seconds",
		Help:    "Waits of GitHub requests before they were sent, by reason: write_rate, write_budget (pacing of content-creating requests), in_flight (the cap on concurrent requests), secondary_rate_limit, rate_limit (GitHub's answers).",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 3600},
	}, []string{"reason"})

	deferredTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_github_requests_deferred_total",
		Help: "GitHub requests not sent because the wait would have been longer than the maximum rate-limit wait (the caller retries at the reset), by reason: write_rate, write_budget, secondary_rate_limit, rate_limit.",
	}, []string{"reason"})

	inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kustos_github_requests_in_flight",
		Help: "GitHub requests on the wire now (sent, response not read to the end).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(apiCalls, rateLimitRemaining, errorsTotal, retriesTotal, writeTokens, waitSeconds, deferredTotal, inFlight)
}

// instrumented counts every attempt and records rate-limit headers. It sits just above the
// network so that retries and 304s are counted as the calls GitHub sees.
type instrumented struct{ next http.RoundTripper }

func (t *instrumented) RoundTrip(req *http.Request) (*http.Response, error) {
	endpoint := endpointTemplate(req.URL.Path)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		apiCalls.WithLabelValues(endpoint, req.Method, "error").Inc()
		if errors.Is(err, context.DeadlineExceeded) {
			errorsTotal.WithLabelValues("timeout").Inc()
		} else if !errors.Is(err, context.Canceled) {
			errorsTotal.WithLabelValues("network").Inc()
		}
		return nil, err
	}
	apiCalls.WithLabelValues(endpoint, req.Method, strconv.Itoa(resp.StatusCode)).Inc()
	if resp.StatusCode >= 500 {
		errorsTotal.WithLabelValues("server_error").Inc()
	}
	if rem, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); err == nil {
		res := resp.Header.Get("X-RateLimit-Resource")
		if !knownResources[res] {
			res = "core"
		}
		rateLimitRemaining.WithLabelValues(res).Set(float64(rem))
	}
	return resp, nil
}

var knownResources = map[string]bool{
	"core": true, "search": true, "graphql": true, "integration_manifest": true,
	"source_import": true, "code_scanning_upload": true, "actions_runner_registration": true,
	"scim": true, "code_search": true, "dependency_snapshots": true,
}

// staticSegments are the path words kept verbatim in endpoint templates; every other segment
// becomes a placeholder, so the label set stays bounded whatever the repository holds.
var staticSegments = map[string]bool{
	"repos": true, "pulls": true, "issues": true, "labels": true, "git": true, "refs": true,
	"ref": true, "matching-refs": true, "commits": true, "trees": true, "blobs": true,
	"tags": true, "contents": true, "merge": true, "status": true, "statuses": true,
	"check-runs": true, "check-suites": true, "app": true, "installations": true,
	"access_tokens": true, "installation": true, "repositories": true, "user": true,
	"users": true, "orgs": true, "rate_limit": true, "comments": true, "reviews": true,
	"requested_reviewers": true, "files": true, "branches": true, "protection": true,
	"search": true, "graphql": true, "meta": true, "events": true, "timeline": true,
	"compare": true, "readme": true, "merges": true, "update-branch": true, "hooks": true,
	"annotations": true, "code": true, "issue": true, "required_status_checks": true,
}

// commitSuffixes end the ref in /repos/:owner/:repo/commits/:ref/<suffix>.
var commitSuffixes = map[string]bool{
	"status": true, "statuses": true, "check-runs": true, "check-suites": true,
	"pulls": true, "comments": true, "branches-where-head": true,
}

// endpointTemplate turns a request path into a low-cardinality template, e.g.
// /repos/acme/gitops/pulls/42 → /repos/:owner/:repo/pulls/:number. Refs and file paths, which
// contain slashes, collapse to one placeholder.
func endpointTemplate(path string) string {
	path = strings.TrimPrefix(path, "/api/v3")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) == 1 && segs[0] == "" {
		return "/"
	}
	repos := segs[0] == "repos"
	out := make([]string, 0, len(segs))
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		switch {
		case repos && i == 1:
			out = append(out, ":owner")
		case repos && i == 2:
			out = append(out, ":repo")
		case (segs[0] == "users" || segs[0] == "orgs") && i == 1:
			out = append(out, ":owner")
		case repos && i == 3 && s == "contents":
			out = append(out, s)
			if i+1 < len(segs) {
				out = append(out, ":path")
			}
			i = len(segs)
		case repos && i == 4 && segs[3] == "git" && (s == "ref" || s == "refs" || s == "matching-refs"):
			out = append(out, s)
			if i+1 < len(segs) {
				out = append(out, ":ref")
			}
			i = len(segs)
		case repos && i == 3 && s == "commits":
			out = append(out, s)
			if i+1 >= len(segs) {
				break
			}
			out = append(out, ":ref")
			j := i + 2
			for j < len(segs) && !commitSuffixes[segs[j]] {
				j++
			}
			if j < len(segs) {
				out = append(out, segs[j:]...) // suffixes are static words
				for k := len(out) - (len(segs) - j); k < len(out); k++ {
					if !staticSegments[out[k]] && !commitSuffixes[out[k]] {
						out[k] = placeholder(out[k])
					}
				}
			}
			i = len(segs)
		case staticSegments[s]:
			out = append(out, s)
		default:
			out = append(out, placeholder(s))
		}
	}
	return "/" + strings.Join(out, "/")
}

func placeholder(s string) string {
	if s == "" {
		return ":param"
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return ":number"
	}
	if (len(s) == 40 || len(s) == 64) && strings.Trim(strings.ToLower(s), "0123456789abcdef") == "" {
		return ":sha"
	}
	return ":param"
}
