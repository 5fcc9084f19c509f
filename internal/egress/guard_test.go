package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// answers is a resolver that answers from a table, as a hostile DNS could; names not in it
// are not found.
type answers map[string][]string

func (a answers) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := a[strings.ToLower(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range addrs {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

var _ egress.Resolver = answers(nil)

func policy(t *testing.T, s string) egress.Policy {
	t.Helper()
	p, err := egress.ParsePolicy(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// server is an HTTP server on loopback that counts its requests.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func get(c *http.Client, u string) (status int, err error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// TestLoopbackRefusedByDefault: a server on 127.0.0.1 — by address, as localhost, as a name a
// resolver answers with 127.0.0.1 — is never asked; the error is a refusal, the metric counts
// it by class.
func TestLoopbackRefusedByDefault(t *testing.T) {
	s, hits := server(t, nil)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	g := &egress.Guard{Detector: "test-default", Resolver: answers{"rebind.example.com": {"127.0.0.1"}}}
	for _, u := range []string{
		s.URL,
		"http://localhost:" + itoa(port),
		"http://rebind.example.com:" + itoa(port),
		"http://[::ffff:127.0.0.1]:" + itoa(port),
	} {
		t.Run(u, func(t *testing.T) {
			before := refusals(t, "test-default", "loopback")
			c := g.Client(5 * time.Second)
			if strings.Contains(u, "localhost") {
				// The system's resolver, not the table: localhost is what the host says it is.
				c = (&egress.Guard{Detector: "test-default"}).Client(5 * time.Second)
			}
			_, err := get(c, u)
			if !errors.Is(err, egress.ErrRefused) {
				t.Fatalf("GET %s: %v, want a refusal", u, err)
			}
			if got := egress.Failure(err); got != egress.FailureRefused {
				t.Errorf("Failure = %q", got)
			}
			if after := refusals(t, "test-default", "loopback"); after != before+1 {
				t.Errorf("kustos_egress_refused_total{reason=loopback} went %v → %v, want one more", before, after)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
}

// TestAllowedCIDR: --allowed-destinations=127.0.0.1/32 lets a request to the loopback server
// through, and only to 127.0.0.1.
func TestAllowedCIDR(t *testing.T) {
	s, hits := server(t, nil)
	c := (&egress.Guard{Policy: policy(t, "127.0.0.1/32")}).Client(5 * time.Second)
	status, err := get(c, s.URL)
	if err != nil || status != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("GET %s: %v (%d), %d requests", s.URL, err, status, hits.Load())
	}
	port := s.Listener.Addr().(*net.TCPAddr).Port
	if _, err := get(c, "http://127.0.0.2:"+itoa(port)); !errors.Is(err, egress.ErrRefused) {
		t.Errorf("127.0.0.2: %v, want a refusal", err)
	}
}

// TestNamesAndTricks: what a name allowance relaxes, and what a URL written to look like an
// allowed name gets. Allowed connections go to addresses nothing listens on (they time out or
// are refused by the network); what matters is whether the guard refused them.
func TestNamesAndTricks(t *testing.T) {
	res := answers{
		"broker.knative-eventing.svc.cluster.local": {"10.96.3.4"},
		"team-a.svc.cluster.local.evil.example":     {"10.96.3.4"},
		"metadata.svc.cluster.local":                {"169.254.169.254"},
		"sneaky.svc.cluster.local":                  {"127.0.0.1"},
		"127.0.0.1.svc.cluster.local":               {"127.0.0.1"},
		"mixed.svc.cluster.local":                   {"169.254.169.254", "10.96.3.5"},
		"intranet.example.com":                      {"10.1.2.3"},
		"v6.example.com":                            {"fd00::1"},
		"mapped.example.com":                        {"::ffff:10.1.2.3"},
		"meta.example.com":                          {"fe80::a9fe:a9fe"},
	}
	g := &egress.Guard{Policy: policy(t, ".svc.cluster.local"), Resolver: res, Detector: "test-names"}
	for _, tc := range []struct {
		url     string
		refused bool
	}{
		{"http://broker.knative-eventing.svc.cluster.local:9/", false},
		{"http://BROKER.Knative-Eventing.svc.cluster.local.:9/", false},
		{"http://mixed.svc.cluster.local:9/", false}, // the link-local answer is skipped, the private one tried
		{"http://metadata.svc.cluster.local/latest/meta-data/", true},
		{"http://sneaky.svc.cluster.local/", true},
		{"http://127.0.0.1.svc.cluster.local/", true},
		{"http://broker.knative-eventing.svc.cluster.local@10.96.3.4:9/", true}, // userinfo: the host is the address
		{"http://10.96.3.4:9/#.svc.cluster.local", true},
		{"http://team-a.svc.cluster.local.evil.example:9/", true},
		{"http://intranet.example.com/", true},
		{"http://v6.example.com/", true},
		{"http://mapped.example.com/", true},
		{"http://meta.example.com/", true},
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://[fe80::1%25lo]/", true},
		{"http://[fc00::1]/", true},
		{"http://0.0.0.0/", true},
		{"ftp://broker.knative-eventing.svc.cluster.local/", true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c := g.Client(300 * time.Millisecond)
			_, err := get(c, tc.url)
			if got := errors.Is(err, egress.ErrRefused); got != tc.refused {
				t.Errorf("GET %s: %v; refused %v, want %v", tc.url, err, got, tc.refused)
			}
		})
	}
	if _, err := get(g.Client(time.Second), "http://nowhere.example.com/"); egress.Failure(err) != egress.FailureDNS {
		t.Errorf("unknown name: %v (%q), want a DNS failure", err, egress.Failure(err))
	}
}

// TestNoRedirectNoProxy: a redirect is the answer (its target is never asked), and HTTP_PROXY
// is not used: through a proxy the check would see only the proxy.
func TestNoRedirectNoProxy(t *testing.T) {
	inner, innerHits := server(t, nil)
	outer, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/elsewhere", http.StatusFound)
	})
	proxy, proxyHits := server(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	c := (&egress.Guard{Policy: policy(t, "127.0.0.1/32")}).Client(5 * time.Second)
	status, err := get(c, outer.URL)
	if err != nil || status != http.StatusFound {
		t.Fatalf("GET %s: %v, %d; want the 302 itself", outer.URL, err, status)
	}
	if n := innerHits.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
	if n := proxyHits.Load(); n != 0 {
		t.Errorf("the proxy from the environment got %d requests", n)
	}
}

func TestFailureClasses(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsServer.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	c := (&egress.Guard{Policy: policy(t, "127.0.0.1/32")}).Client(300 * time.Millisecond)
	for _, tc := range []struct {
		url, want string
	}{
		{closedURL, egress.FailureConnRefused},
		{tlsServer.URL, egress.FailureTLS}, // its certificate is not trusted
		{slow.URL, egress.FailureTimeout},
	} {
		_, err := get(c, tc.url)
		if got := egress.Failure(err); got != tc.want {
			t.Errorf("GET %s: %v: class %q, want %q", tc.url, err, got, tc.want)
		}
	}
	for code, want := range map[int]string{200: "HTTP 2xx", 404: "HTTP 4xx", 503: "HTTP 5xx", 1000: "HTTP status 1000"} {
		if got := egress.StatusClass(code); got != want {
			t.Errorf("StatusClass(%d) = %q, want %q", code, got, want)
		}
	}
	if _, err := url.Parse("http://x"); egress.Failure(err) != "" {
		t.Error("Failure(nil) is not empty")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// refusals reads kustos_egress_refused_total{detector, reason}.
func refusals(t *testing.T, detector, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.EgressRefused.WithLabelValues(detector, reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
