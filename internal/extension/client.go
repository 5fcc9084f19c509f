package extension

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// TrustedProxies are --trusted-proxies: the addresses (CIDRs) of the reverse proxies in front
// of the extension server, whose X-Forwarded-For is believed. Behind an Ingress every request
// comes from the ingress controller; without this, every owner shares its one rate-limit
// bucket. The zero value trusts no one: the peer is the client.
type TrustedProxies struct {
	prefixes []netip.Prefix
}

// ParseTrustedProxies parses CIDRs (10.0.0.0/8, fd00::/8) or single addresses; empty items are
// skipped.
func ParseTrustedProxies(list []string) (TrustedProxies, error) {
	var p TrustedProxies
	for _, item := range list {
		s := strings.TrimSpace(item)
		if s == "" {
			continue
		}
		var pfx netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			pfx, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				pfx = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return TrustedProxies{}, fmt.Errorf("%q is not an address or CIDR: %w", s, err)
		}
		p.prefixes = append(p.prefixes, pfx.Masked())
	}
	return p, nil
}

// Trusts says whether a is one of the trusted proxies (an IPv4-mapped IPv6 address counts as
// its IPv4 address).
func (p TrustedProxies) Trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, pfx := range p.prefixes {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// Client is whom a request is counted against.
type Client struct {
	// Addr is the client's address; invalid when the peer's address could not be read (then
	// Peer is the key).
	Addr netip.Addr
	Peer string
	// Malformed: a trusted proxy forwarded an entry that is no address; the peer stood in.
	Malformed bool
}

// Key is the client's rate-limit bucket: an IPv4 address, or the /64 of an IPv6 address (one
// host, one subscriber or one LAN gets a /64 and can use every address in it).
func (c Client) Key() string {
	if !c.Addr.IsValid() {
		return c.Peer
	}
	if c.Addr.Is4() {
		return c.Addr.String()
	}
	return netip.PrefixFrom(c.Addr, 64).Masked().String()
}

// Client finds the client of a request whose direct peer is remoteAddr (http.Request's
// RemoteAddr) and whose X-Forwarded-For header lines are forwardedFor.
//
// Only X-Forwarded-For is read, and only when the peer is a trusted proxy: every common proxy
// (ingress-nginx, Traefik, HAProxy, Envoy, cloud load balancers) appends the address that
// connected to it, so walking the list from the right, past trusted proxies, the first
// untrusted entry is the client a trusted proxy saw; entries left of it were written by the
// client and are never read. All trusted: the left-most. X-Real-IP is not read: it is one
// value that some proxies pass on from the client untouched, so behind those a client would
// choose its own bucket. Forwarded (RFC 7239) is not read either: ingress-nginx does not set
// it. An entry that is no address (empty, "unknown", an obfuscated name) reached in the walk
// ends it: the peer stands in and Malformed says so.
func (p TrustedProxies) Client(remoteAddr string, forwardedFor []string) Client {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		return Client{Peer: remoteAddr}
	}
	c := Client{Addr: peer, Peer: remoteAddr}
	if !p.Trusts(peer) {
		return c
	}
	// Walk right to left without splitting into a slice: the header is the client's, up to
	// the server's MaxHeaderBytes.
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		list := forwardedFor[i]
		for {
			var entry string
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				entry, list = list[j+1:], list[:j]
			} else {
				entry, list = list, ""
			}
			a, ok := parseHop(entry)
			if !ok {
				return Client{Addr: peer, Peer: remoteAddr, Malformed: true}
			}
			c.Addr = a
			if !p.Trusts(a) {
				return c
			}
			if list == "" {
				break
			}
		}
	}
	return c // every hop trusted: the left-most
}

// parseHop reads one address as a peer or an X-Forwarded-For entry writes it: 192.0.2.1,
// 192.0.2.1:80, 2001:db8::1, [2001:db8::1]:80 or [2001:db8::1]; a zone is dropped and an
// IPv4-mapped IPv6 address is IPv4.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.Trim(s, " \t")
	a, err := netip.ParseAddr(s)
	if err != nil {
		host, _, serr := net.SplitHostPort(s)
		if serr != nil {
			if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
				return netip.Addr{}, false
			}
			host = s[1 : len(s)-1]
		}
		if a, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}
