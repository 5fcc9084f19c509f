package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/metrics"
)

func TestParseTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		list    []string
		wantErr string
		trusts  []string
		not     []string
	}{
		{name: "none", trusts: nil, not: []string{"10.0.0.1", "::1"}},
		{name: "CIDRs and single addresses", list: []string{"10.0.0.0/8", " 192.168.1.7 ", "fd00::/8"},
			trusts: []string{"10.1.2.3", "192.168.1.7", "fd12::1", "::ffff:10.9.9.9"}, not: []string{"192.168.1.8", "11.0.0.1", "fe80::1"}},
		{name: "a host address in CIDR form is masked", list: []string{"10.0.0.7/24"}, trusts: []string{"10.0.0.200"}},
		{name: "empty items are skipped", list: []string{"", "127.0.0.1/32"}, trusts: []string{"127.0.0.1"}},
		{name: "not an address", list: []string{"ingress-nginx"}, wantErr: `"ingress-nginx"`},
		{name: "a bad mask", list: []string{"10.0.0.0/33"}, wantErr: `"10.0.0.0/33"`},
		{name: "a host name", list: []string{"lb.example.com/32"}, wantErr: "lb.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseTrustedProxies(tc.list)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.trusts {
				if !p.Trusts(netip.MustParseAddr(a)) {
					t.Errorf("%s is not trusted", a)
				}
			}
			for _, a := range tc.not {
				if p.Trusts(netip.MustParseAddr(a)) {
					t.Errorf("%s is trusted", a)
				}
			}
		})
	}
}

// TestClient: which address a request is counted against, from its peer and X-Forwarded-For.
func TestClient(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "2001:db8:ffff::/48"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		proxies   TrustedProxies
		peer      string
		xff       []string
		want      string // the bucket's key
		malformed bool
	}{
		{name: "no proxy trusted: the peer, whatever it forwards", peer: "10.0.0.5:4711", xff: []string{"198.51.100.1"}, want: "10.0.0.5"},
		{name: "an untrusted peer's X-Forwarded-For is ignored", proxies: trusted, peer: "203.0.113.9:4711", xff: []string{"198.51.100.1"}, want: "203.0.113.9"},
		{name: "a trusted peer without X-Forwarded-For is the client", proxies: trusted, peer: "10.0.0.5:4711", want: "10.0.0.5"},
		{name: "one hop", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"198.51.100.1"}, want: "198.51.100.1"},
		{name: "spoofed left-most entries are skipped", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"1.2.3.4, 5.6.7.8, 198.51.100.1"}, want: "198.51.100.1"},
		{name: "a spoofed trusted address left of the client changes nothing", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"10.9.9.9, 198.51.100.1"}, want: "198.51.100.1"},
		{name: "multi-hop: trusted hops on the right are skipped", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"1.2.3.4, 198.51.100.1, 10.1.1.1, 10.2.2.2"}, want: "198.51.100.1"},
		{name: "several header lines are one list", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"1.2.3.4", "198.51.100.1, 10.1.1.1"}, want: "198.51.100.1"},
		{name: "all trusted: the left-most", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"10.3.3.3, 10.1.1.1"}, want: "10.3.3.3"},
		{name: "entries with ports and spaces", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{" 198.51.100.1:5555 ,\t10.1.1.1 "}, want: "198.51.100.1"},
		{name: "IPv6 is grouped by /64", proxies: trusted, peer: "[2001:db8:ffff::1]:443", xff: []string{"2001:db8:1:2:aaaa:bbbb:cccc:dddd"}, want: "2001:db8:1:2::/64"},
		{name: "IPv6 in brackets with a port", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"[2001:db8:1:2::7]:80"}, want: "2001:db8:1:2::/64"},
		{name: "an IPv6 peer is grouped by /64 too", peer: "[2001:db8:1:2::99]:443", want: "2001:db8:1:2::/64"},
		{name: "an IPv4-mapped IPv6 address is IPv4", proxies: trusted, peer: "[::ffff:10.0.0.5]:4711", xff: []string{"::ffff:198.51.100.1"}, want: "198.51.100.1"},
		{name: "a zone is dropped", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"fe80::1%eth0"}, want: "fe80::/64"},
		{name: "malformed right-most entry: the peer", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"198.51.100.1, not-an-address"}, want: "10.0.0.5", malformed: true},
		{name: "malformed behind trusted hops: the peer", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"unknown, 10.1.1.1"}, want: "10.0.0.5", malformed: true},
		{name: "an empty entry is malformed", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"198.51.100.1,,10.1.1.1"}, want: "10.0.0.5", malformed: true},
		{name: "malformed left of the client is never reached", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"garbage, 198.51.100.1"}, want: "198.51.100.1"},
		{name: "an obfuscated node name (RFC 7239 style) is malformed", proxies: trusted, peer: "10.0.0.5:4711", xff: []string{"_hidden"}, want: "10.0.0.5", malformed: true},
		{name: "a peer that is no address is its own key", proxies: trusted, peer: "@", xff: []string{"198.51.100.1"}, want: "@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.proxies.Client(tc.peer, tc.xff)
			if c.Key() != tc.want || c.Malformed != tc.malformed {
				t.Errorf("Client(%q, %q) = %q (malformed %v), want %q (malformed %v)", tc.peer, tc.xff, c.Key(), c.Malformed, tc.want, tc.malformed)
			}
		})
	}
}

// ingress is a reverse proxy in front of the extension server that appends the address of
// whoever connected to it to X-Forwarded-For, as ingress-nginx (compute-full-forwarded-for),
// Traefik, HAProxy and Envoy do; every request reaches the server from the proxy's address.
func ingress(t *testing.T, backend string) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header["X-Forwarded-For"] = r.In.Header["X-Forwarded-For"]
		r.SetXForwarded()
	}})
	t.Cleanup(p.Close)
	return p.URL
}

// from is an HTTP client whose connections come from a loopback address of its own
// (127.0.0.0/8 is all loopback on Linux), so the proxy sees distinct clients.
func from(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}, DisableKeepAlives: true}}
}

type answer struct {
	code       int
	retryAfter string
	body       string
}

// send GETs link (POSTs its query as the form, as the page's button does) through base,
// with extra X-Forwarded-For values the client made up.
func send(t *testing.T, c *http.Client, method, base, link string, spoofed ...string) answer {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	var req *http.Request
	if method == http.MethodGet {
		req, err = http.NewRequest(method, base+"/extend?"+u.RawQuery, http.NoBody)
	} else {
		req, err = http.NewRequest(method, base+"/extend", strings.NewReader(u.Query().Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spoofed {
		req.Header.Add("X-Forwarded-For", s)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
}

// TestRateLimitBehindIngress: behind the chart's Ingress every request comes from the ingress
// controller's address; one client looping GET /extend must not lock every owner out (their
// environments would be removed on schedule).
func TestRateLimitBehindIngress(t *testing.T) {
	h := newHarness(t)
	h.srv.PerMinute = 5
	proxies, err := ParseTrustedProxies([]string{"127.0.0.1/32"}) // the ingress's address
	if err != nil {
		t.Fatal(err)
	}
	h.srv.TrustedProxies = proxies
	front := ingress(t, h.http.URL)
	attacker, owner := from(t, "127.0.0.2"), from(t, "127.0.0.3")

	// The attacker loops over another environment's link and made-up ones, inventing a new
	// left-most X-Forwarded-For each time.
	other, err := h.srv.Links("expiry/Deployment.apps/team-b/web", deadline, deadline.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var last answer
	for i := 0; i < 20; i++ {
		link := other[0].URL
		if i%2 == 1 {
			link = h.http.URL + "/extend?key=" + url.QueryEscape(string(key)) + "&period=3d&token=" + fmt.Sprintf("%016x.1.2.x", i)
		}
		last = send(t, attacker, http.MethodGet, front, link, fmt.Sprintf("198.51.100.%d", i))
	}
	if last.code != http.StatusTooManyRequests {
		t.Fatalf("the attacker's 20th request in a minute: %d, want 429", last.code)
	}
	if s, err := strconv.Atoi(last.retryAfter); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After: %q, want seconds until the next request is allowed", last.retryAfter)
	}

	// The owner, through the same ingress, opens the link and presses the button.
	link := h.links()["1w"]
	if a := send(t, owner, http.MethodGet, front, link); a.code != http.StatusOK {
		t.Fatalf("the owner's GET: %d\n%s", a.code, a.body)
	}
	if a := send(t, owner, http.MethodPost, front, link); a.code != http.StatusOK || !strings.Contains(a.body, "now expires at") {
		t.Fatalf("the owner's POST: %d\n%s", a.code, a.body)
	}
	if st := h.state(); !st.ExtendedUntil.Equal(deadline.Add(7 * 24 * time.Hour)) {
		t.Errorf("state: %+v", st)
	}

	// Straight to the server (no trusted proxy in between) a made-up X-Forwarded-For is no
	// way around the limit.
	direct := from(t, "127.0.0.4")
	for i := 0; i < 6; i++ {
		last = send(t, direct, http.MethodGet, h.http.URL, other[1].URL, fmt.Sprintf("198.51.100.%d", i))
	}
	if last.code != http.StatusTooManyRequests {
		t.Errorf("a direct client inventing X-Forwarded-For: %d, want 429", last.code)
	}
}

// TestRateLimitPerLink: one link hammered from many addresses (a leaked or forwarded mail, a
// botnet) is limited by itself; the owner's other links, and other owners', keep working, and
// made-up tokens for the owner's environment cost the owner nothing.
func TestRateLimitPerLink(t *testing.T) {
	h := newHarness(t)
	h.srv.PerMinute = 5
	h.srv.LinkPerMinute = 4
	proxies, err := ParseTrustedProxies([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.TrustedProxies = proxies
	front := ingress(t, h.http.URL)
	ls := h.links()

	var codes []int
	for i := 0; i < 10; i++ { // ten addresses, two requests each: well within each one's limit
		c := from(t, fmt.Sprintf("127.0.1.%d", i+1))
		for j := 0; j < 2; j++ {
			a := send(t, c, http.MethodGet, front, ls["2w"])
			codes = append(codes, a.code)
			if a.code == http.StatusTooManyRequests && a.retryAfter == "" {
				t.Errorf("429 without Retry-After")
			}
		}
	}
	if ok := count(codes, http.StatusOK); ok != 4 || count(codes, http.StatusTooManyRequests) != 16 {
		t.Errorf("one link from ten addresses: %v, want 4 answered, then 429", codes)
	}
	// Made-up tokens for the same environment from many addresses.
	for i := 0; i < 20; i++ {
		c := from(t, fmt.Sprintf("127.0.2.%d", i+1))
		link := h.http.URL + "/extend?key=" + url.QueryEscape(string(key)) + "&period=1w&token=" + fmt.Sprintf("%016x.1.2.x", i)
		if a := send(t, c, http.MethodPost, front, link); a.code != http.StatusForbidden {
			t.Errorf("a made-up token: %d, want 403", a.code)
		}
	}
	owner := from(t, "127.0.0.3")
	if a := send(t, owner, http.MethodGet, front, ls["1w"]); a.code != http.StatusOK {
		t.Fatalf("the owner's other link, GET: %d\n%s", a.code, a.body)
	}
	if a := send(t, owner, http.MethodPost, front, ls["1w"]); a.code != http.StatusOK {
		t.Fatalf("the owner's other link, POST: %d\n%s", a.code, a.body)
	}
	// A minute later the hammered link answers again.
	h.mu.Lock()
	h.now = h.now.Add(time.Minute)
	h.mu.Unlock()
	if a := send(t, owner, http.MethodGet, front, ls["2w"]); a.code != http.StatusOK {
		t.Errorf("the hammered link a minute later: %d", a.code)
	}
}

func count(codes []int, c int) int {
	n := 0
	for _, x := range codes {
		if x == c {
			n++
		}
	}
	return n
}

// TestLimiterIsBounded: a flood of clients from ever new addresses keeps at most the bound in
// memory, and forgetting a client never refuses one.
func TestLimiterIsBounded(t *testing.T) {
	l := newLimiter(3, 100)
	at := now
	if ok, _ := l.take("owner", at); !ok {
		t.Fatal("the owner's first request was refused")
	}
	for i := 0; i < 1000; i++ {
		for j := 0; j < 4; j++ {
			l.take(fmt.Sprintf("2001:db8:%x::/64", i), at)
		}
	}
	if n := l.buckets.Len(); n > 100 {
		t.Errorf("%d buckets kept, want at most 100", n)
	}
	ok, _ := l.take("owner", at)
	ok2, _ := l.take("owner", at)
	if !ok || !ok2 {
		t.Error("the owner was refused after a flood of other clients")
	}
	l.take("owner", at)
	ok, wait := l.take("owner", at)
	if ok || wait != 20*time.Second {
		t.Errorf("over the limit: ok %v, retry after %s, want 20s (3 a minute)", ok, wait)
	}
}

// TestLogsCarryNoToken: the server's access log (which replaces the Ingress's, see the chart)
// names the path, the client and the link's id, never the query or a token, whatever happens
// to the request.
func TestLogsCarryNoToken(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var logs strings.Builder
	h.srv.Log = funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1})
	h.srv.PerMinute = 4
	ls := h.links()
	h.do(http.MethodGet, ls["1w"])
	h.do(http.MethodPost, ls["1w"])
	h.do(http.MethodPost, ls["1w"]) // used
	h.store.FailNext("SetBag", errors.New("etcd is down"))
	h.do(http.MethodPost, ls["3d"]) // the store fails
	h.do(http.MethodGet, ls["2w"])  // rate limited
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	for p, link := range ls {
		u, _ := url.Parse(link)
		tok := u.Query().Get("token")
		id, mac := tok[:16], tok[strings.LastIndexByte(tok, '.')+1:]
		if strings.Contains(out, mac) || strings.Contains(out, url.QueryEscape(tok)) {
			t.Errorf("the log holds the %s link's token:\n%s", p, out)
		}
		if p != "2w" && !strings.Contains(out, `"link"="`+id+`"`) {
			t.Errorf("the log does not name the %s link by its id %s:\n%s", p, id, out)
		}
	}
	for _, want := range []string{`"path"="/extend"`, `"status"=200`, `"status"=409`, `"status"=503`, `"status"=429`, `"client"="127.0.0.1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// TestMalformedForwardedFor: a trusted proxy forwarding an X-Forwarded-For entry that is no
// address is counted as bad input, and the request is counted against the proxy.
func TestMalformedForwardedFor(t *testing.T) {
	h := newHarness(t)
	h.srv.PerMinute = 2
	proxies, err := ParseTrustedProxies([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.TrustedProxies = proxies
	bad := metrics.InvalidInput.WithLabelValues(expiry.DetectorName, "forwarded_for")
	limited := rateLimited.WithLabelValues("client")
	badBefore, limitedBefore := value(t, bad), value(t, limited)
	c := from(t, "127.0.0.1")
	link := h.links()["3d"]
	var codes []int
	for _, xff := range []string{"unknown", "198.51.100.1, _hidden", ""} {
		codes = append(codes, send(t, c, http.MethodGet, h.http.URL, link, xff).code)
	}
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK || codes[2] != http.StatusTooManyRequests {
		t.Errorf("three requests counted against the proxy (2 a minute): %v", codes)
	}
	if got := value(t, bad) - badBefore; got != 3 {
		t.Errorf("kustos_invalid_input_total{kind=forwarded_for} rose by %v, want 3", got)
	}
	if got := value(t, limited) - limitedBefore; got != 1 {
		t.Errorf("kustos_extension_rate_limited_total{by=client} rose by %v, want 1", got)
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
