package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/metrics"
)

// ErrRefused is wrapped by the error of a request whose destination the policy refuses.
var ErrRefused = errors.New("destination refused")

// RefusedError says which destination was refused and why. Its text names the address, so it
// is for the operator's log; a tenant is told Failure(err), "destination refused".
type RefusedError struct {
	// Host is the host as the URL named it; Addr the address it resolved to (invalid for a
	// refused scheme).
	Host  string
	Addr  netip.Addr
	Class Class
	// Scheme is the refused scheme (Class == ClassScheme).
	Scheme string
}

func (e *RefusedError) Error() string {
	if e.Class == ClassScheme {
		return fmt.Sprintf("egress: scheme %q refused: only http and https", e.Scheme)
	}
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("egress: %s is a %s address and not in --allowed-destinations", e.Addr, e.Class)
	}
	return fmt.Sprintf("egress: %s resolves to %s, a %s address, and is not in --allowed-destinations", e.Host, e.Addr, e.Class)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Resolver looks host names up (*net.Resolver; tests answer with addresses of their choosing).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// DialTimeout bounds one connection attempt (the client's timeout bounds the whole request).
const DialTimeout = 10 * time.Second

// Guard makes the HTTP clients for tenant-given destinations. Build it once per user (the
// inactivity probes, the CloudEvent sender): the clients share its connection pool.
type Guard struct {
	// Policy is --allowed-destinations.
	Policy Policy
	// Detector names the user in the refusal metric and log lines ("inactivity", "cleaner").
	Detector string
	// Resolver looks names up; nil: net.DefaultResolver.
	Resolver Resolver
	// Log receives one line per refused request, with the address (operator only).
	Log logr.Logger
}

// Client returns an HTTP client for tenant-given URLs: checked on every connection, no proxy,
// no redirect followed (a 3xx is the answer), timeout bounding each request (0: none).
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   timeout,
		// A destination's redirect would take Kustos to a URL the tenant never had checked:
		// the redirect is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Transport returns the checked transport underneath Client (for clients that set their own
// redirect rule; they must not follow redirects either).
func (g *Guard) Transport() http.RoundTripper {
	return &transport{g: g, next: &http.Transport{
		// Proxy nil: HTTP_PROXY and HTTPS_PROXY are ignored. Through a proxy the proxy connects,
		// and the dialer would check only the proxy's address.
		Proxy:                 nil,
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// transport refuses schemes other than http and https before the request goes anywhere.
type transport struct {
	g    *Guard
	next *http.Transport
}

var _ http.RoundTripper = (*transport)(nil)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if s := req.URL.Scheme; s != "http" && s != "https" {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &RefusedError{Host: req.URL.Host, Class: ClassScheme, Scheme: s}
		t.g.refused(err)
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the pool.
func (t *transport) CloseIdleConnections() { t.next.CloseIdleConnections() }

// dial resolves addr's host itself, skips the addresses the policy refuses and connects to the
// others in turn; the dialer's Control checks the address of the socket again, so what is
// connected to is what was checked, whatever a second lookup would say.
func (g *Guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: port %q: %w", portText, err)
	}
	name := host
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		// An address literal: no name, so no name allowance applies.
		ips, name = []netip.Addr{ip}, ""
	} else {
		ips, err = g.resolver().LookupNetIP(ctx, lookupNetwork(network), host)
		if err != nil {
			return nil, err
		}
	}
	var firstRefused, lastErr error
	for _, ip := range ips {
		if class, ok := g.Policy.allows(name, ip); !ok {
			if firstRefused == nil {
				firstRefused = &RefusedError{Host: host, Addr: ip, Class: class}
			}
			continue
		}
		d := net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Control: g.control(host, name)}
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		lastErr = firstRefused
	}
	if lastErr == nil {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var re *RefusedError
	if errors.As(lastErr, &re) {
		g.refused(re)
	}
	return nil, lastErr
}

// control checks the address a socket is about to connect to.
func (g *Guard) control(host, name string) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedError{Host: host, Class: ClassUnspecified}
		}
		if class, ok := g.Policy.allows(name, ap.Addr()); !ok {
			return &RefusedError{Host: host, Addr: ap.Addr(), Class: class}
		}
		return nil
	}
}

func (g *Guard) refused(e *RefusedError) {
	metrics.EgressRefused.WithLabelValues(g.Detector, string(e.Class)).Inc()
	g.Log.Info("request to a tenant-given destination refused", "detector", g.Detector, "reason", e.Error(), "class", string(e.Class))
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

func lookupNetwork(network string) string {
	switch network {
	case "tcp4":
		return "ip4"
	case "tcp6":
		return "ip6"
	}
	return "ip"
}
