package github

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestEndpointTemplate(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	tests := []struct{ path, want string }{
		{"/repos/acme/gitops", "/repos/:owner/:repo"},
		{"/api/v3/repos/acme/gitops/pulls/42", "/repos/:owner/:repo/pulls/:number"},
		{"/repos/acme/gitops/pulls", "/repos/:owner/:repo/pulls"},
		{"/repos/acme/gitops/pulls/42/merge", "/repos/:owner/:repo/pulls/:number/merge"},
		{"/repos/acme/gitops/issues/42/labels", "/repos/:owner/:repo/issues/:number/labels"},
		{"/repos/acme/gitops/issues/42/labels/kustos", "/repos/:owner/:repo/issues/:number/labels/:param"},
		{"/repos/acme/gitops/git/ref/heads/kustos/quota/team-a/compute", "/repos/:owner/:repo/git/ref/:ref"},
		{"/repos/acme/gitops/git/refs/heads/kustos/quota/team-a/compute", "/repos/:owner/:repo/git/refs/:ref"},
		{"/repos/acme/gitops/git/refs", "/repos/:owner/:repo/git/refs"},
		{"/repos/acme/gitops/git/commits/" + sha, "/repos/:owner/:repo/git/commits/:sha"},
		{"/repos/acme/gitops/git/commits", "/repos/:owner/:repo/git/commits"},
		{"/repos/acme/gitops/git/trees", "/repos/:owner/:repo/git/trees"},
		{"/repos/acme/gitops/git/blobs/" + sha, "/repos/:owner/:repo/git/blobs/:sha"},
		{"/repos/acme/gitops/contents/clusters/prod/team-a/quota.yaml", "/repos/:owner/:repo/contents/:path"},
		{"/repos/acme/gitops/commits/" + sha + "/status", "/repos/:owner/:repo/commits/:ref/status"},
		{"/repos/acme/gitops/commits/kustos/quota/a/b/check-runs", "/repos/:owner/:repo/commits/:ref/check-runs"},
		{"/repos/acme/gitops/commits/main", "/repos/:owner/:repo/commits/:ref"},
		{"/app/installations/123456/access_tokens", "/app/installations/:number/access_tokens"},
		{"/repos/acme/gitops/branches/main/protection", "/repos/:owner/:repo/branches/:param/protection"},
		{"/some/unknown/thing-" + sha, "/:param/:param/:param"},
		{"/rate_limit", "/rate_limit"},
		{"/", "/"},
	}
	for _, tt := range tests {
		if got := endpointTemplate(tt.path); got != tt.want {
			t.Errorf("endpointTemplate(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestMetricsLabelsStayLowCardinality sends calls for many owners, repos, PR numbers, refs,
// SHAs and files through the instrumented transport and checks that the endpoint label never
// carries any of them.
func TestMetricsLabelsStayLowCardinality(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4321")
		w.Header().Set("X-RateLimit-Resource", "core")
		_, _ = w.Write([]byte("{}"))
	}))
	defer hs.Close()
	rt := &instrumented{next: http.DefaultTransport}
	for i := range 50 {
		for _, p := range []string{
			fmt.Sprintf("/repos/owner%d/repo%d/pulls/%d", i, i, 1000+i),
			fmt.Sprintf("/repos/owner%d/repo%d/git/ref/heads/kustos/quota/ns%d/q", i, i, i),
			fmt.Sprintf("/repos/owner%d/repo%d/git/commits/%040x", i, i, i),
			fmt.Sprintf("/repos/owner%d/repo%d/contents/dir%d/file%d.yaml", i, i, i, i),
			fmt.Sprintf("/repos/owner%d/repo%d/commits/%040x/check-runs", i, i, i),
		} {
			req, _ := http.NewRequest("GET", hs.URL+p, http.NoBody)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	leak := regexp.MustCompile(`owner\d|repo\d|\d{2,}|[0-9a-f]{40}|ns\d|file\d`)
	endpoints := map[string]bool{}
	var sawRemaining bool
	for _, f := range families {
		switch f.GetName() {
		case "kustos_github_api_calls_total":
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "endpoint" {
						if leak.MatchString(l.GetValue()) {
							t.Errorf("endpoint label %q carries an id", l.GetValue())
						}
						if strings.HasPrefix(l.GetValue(), "/repos/") {
							endpoints[l.GetValue()] = true
						}
					}
				}
			}
		case "kustos_github_rate_limit_remaining":
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "core" {
					sawRemaining = true
				}
			}
		}
	}
	for _, want := range []string{"/repos/:owner/:repo/pulls/:number", "/repos/:owner/:repo/git/ref/:ref",
		"/repos/:owner/:repo/git/commits/:sha", "/repos/:owner/:repo/contents/:path", "/repos/:owner/:repo/commits/:ref/check-runs"} {
		if !endpoints[want] {
			t.Errorf("no series for %s; have %v", want, endpoints)
		}
	}
	if !sawRemaining {
		t.Error("kustos_github_rate_limit_remaining{resource=\"core\"} not set")
	}
}
