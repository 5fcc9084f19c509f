package inactivity_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/egress"
)

// TestHTTPProber: through the egress client an exam endpoint on loopback is refused unless
// --allowed-destinations covers it; a failure's Detail is its class only, never the server's
// words or the dialer's.
func TestHTTPProber(t *testing.T) {
	var hits atomic.Int32
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	allow, err := egress.ParsePolicy("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	prober := func(p egress.Policy) inactivity.HTTPProber {
		return inactivity.HTTPProber{Client: (&egress.Guard{Policy: p, Detector: "probe-test"}).Client(time.Second)}
	}
	for _, tc := range []struct {
		name   string
		policy egress.Policy
		url    string
		status int
		want   inactivity.Probe
	}{
		{name: "loopback, default policy", url: srv.URL, want: inactivity.Probe{Detail: egress.FailureRefused, Refused: true}},
		{name: "localhost, default policy", url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), want: inactivity.Probe{Detail: egress.FailureRefused, Refused: true}},
		{name: "metadata, default policy", url: "http://169.254.169.254/latest/meta-data/", want: inactivity.Probe{Detail: egress.FailureRefused, Refused: true}},
		{name: "loopback allowed", policy: allow, url: srv.URL, status: http.StatusOK, want: inactivity.Probe{OK: true}},
		{name: "loopback allowed, 503", policy: allow, url: srv.URL, status: http.StatusServiceUnavailable, want: inactivity.Probe{Detail: "HTTP 5xx"}},
		{name: "loopback allowed, nothing listening", policy: allow, url: closed.URL, want: inactivity.Probe{Detail: egress.FailureConnRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status = tc.status
			before := hits.Load()
			got := prober(tc.policy).Probe(context.Background(), tc.url)
			if got != tc.want {
				t.Errorf("Probe(%s) = %+v, want %+v", tc.url, got, tc.want)
			}
			if asked := hits.Load() > before; asked != (tc.want.OK || tc.status != 0) {
				t.Errorf("the endpoint was asked: %v", asked)
			}
		})
	}
}
