package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Class is why an address is not a public destination ("" when it is one). Refusals are
// counted and logged by class.
type Class string

// The classes of addresses refused by default.
const (
	ClassPublic Class = ""
	// ClassLoopback: 127.0.0.0/8, ::1 — the pod itself (sidecars, the metrics port).
	ClassLoopback Class = "loopback"
	// ClassLinkLocal: 169.254.0.0/16 (the cloud metadata service at 169.254.169.254), fe80::/10
	// and link-local multicast.
	ClassLinkLocal Class = "link-local"
	// ClassPrivate: RFC 1918 (10/8, 172.16/12, 192.168/16), 100.64.0.0/10 (carrier-grade NAT,
	// used by some clusters' pod or service networks), fc00::/7 and the deprecated fec0::/10:
	// the cluster's services and pods, the company network.
	ClassPrivate Class = "private"
	// ClassUnspecified: 0.0.0.0/8 and :: (connecting to them reaches the local host).
	ClassUnspecified Class = "unspecified"
	// ClassMulticast: 224.0.0.0/4, ff00::/8.
	ClassMulticast Class = "multicast"
	// ClassReserved: addresses that are nobody's public service: 192.0.0.0/24, 198.18.0.0/15,
	// 240.0.0.0/4 with the broadcast address, ::/96 (IPv4-compatible) and Teredo (2001::/32).
	ClassReserved Class = "reserved"
	// ClassScheme: a URL whose scheme is not http or https (not an address class; counted with
	// them).
	ClassScheme Class = "scheme"
)

var (
	cgn       = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal = netip.MustParsePrefix("fec0::/10")
	// The well-known NAT64 prefix (RFC 6052) embeds the IPv4 address in its last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// The local-use translation prefix (RFC 8215) is a /48 from which an operator picks a
	// translation prefix of /48, /56, /64 or /96, each embedding the IPv4 address elsewhere
	// (RFC 6052, section 2.2).
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	v4Compat   = netip.MustParsePrefix("::/96")
	reserved   = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("2001::/32"),
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

// ClassOf says whether ip is a public destination (ClassPublic) or which kind of
// non-public address it is. IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d,
// NAT64 64:ff9b::/96 and the local-use 64:ff9b:1::/48 in each of its layouts, ISATAP
// …:0:5efe:a.b.c.d, 6to4 2002::/16) are classified as that IPv4 address, so that
// ::ffff:127.0.0.1 is loopback and 64:ff9b::a9fe:a9fe is link-local.
func ClassOf(ip netip.Addr) Class {
	ip = ip.WithZone("").Unmap()
	switch {
	case !ip.IsValid():
		return ClassUnspecified
	case ip.IsUnspecified() || (ip.Is4() && thisNetwork.Contains(ip)):
		return ClassUnspecified
	case ip.IsLoopback():
		return ClassLoopback
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return ClassLinkLocal
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return ClassMulticast
	case ip.IsPrivate() || cgn.Contains(ip) || siteLocal.Contains(ip):
		return ClassPrivate
	}
	if ip.Is6() {
		b := ip.As16()
		// An ISATAP identifier can follow any prefix, a 6to4 or NAT64 one too: its IPv4 address
		// is refused on its own, and a public one leaves the prefix to be read as usual.
		if isISATAP(b) {
			if c := embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); c != ClassPublic {
				return c
			}
		}
		if nat64.Contains(ip) {
			return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		if nat64Local.Contains(ip) {
			return localNAT64(b)
		}
		if sixToFour.Contains(ip) {
			return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
		if v4Compat.Contains(ip) {
			return ClassReserved
		}
	}
	if ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return ClassReserved
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return ClassReserved
		}
	}
	return ClassPublic
}

// embedded classifies the IPv4 address an IPv6 translation or tunnel address carries: a
// public one leaves the IPv6 address public.
func embedded(v4 netip.Addr) Class {
	return ClassOf(v4)
}

// localNAT64 classifies an address b of the local-use prefix 64:ff9b:1::/48. Which of RFC 6052's
// layouts the operator's translator uses (/48, /56, /64 or /96) cannot be seen from the address,
// and a translator reads the IPv4 bits of its layout whatever the other bits hold (RFC 6052 only
// says the "u" octet and the suffix should be zero). So every layout is read, and the address is
// refused when any reading carries a non-public IPv4 address: a tenant's name that resolves to
// the translation of 10.0.0.1 under the translator's layout is refused whichever it is. Readings
// in 0.0.0.0/8 are passed over — they are what the zero bytes of one layout read as under another,
// and no translator sends anything there — unless every reading is one. The price: a public
// destination whose bytes read as a non-public address under another layout is refused too, and
// needs a CIDR in --allowed-destinations.
func localNAT64(b [16]byte) Class {
	readings := [][4]byte{
		{b[6], b[7], b[9], b[10]},    // /48
		{b[7], b[9], b[10], b[11]},   // /56
		{b[9], b[10], b[11], b[12]},  // /64
		{b[12], b[13], b[14], b[15]}, // /96
	}
	unspecified := 0
	for _, r := range readings {
		switch c := embedded(netip.AddrFrom4(r)); c {
		case ClassPublic:
		case ClassUnspecified:
			unspecified++
		default:
			return c
		}
	}
	if unspecified == len(readings) {
		return ClassUnspecified
	}
	return ClassPublic
}

// isISATAP reports whether b has an ISATAP interface identifier (RFC 5214: 0000:5efe or, with
// the universal/local bit, 0200:5efe, before the IPv4 address of the tunnel's end), under any
// prefix: the packets go to that IPv4 address.
func isISATAP(b [16]byte) bool {
	return binary.BigEndian.Uint32(b[8:12])&^0x0300_0000 == 0x0000_5efe
}

// Policy is what the operator allows beyond public addresses: --allowed-destinations. The zero
// Policy allows public addresses only.
type Policy struct {
	prefixes []netip.Prefix
	names    []nameRule
	text     string
}

// nameRule allows one host name (exact) or every name below it (suffix, written with a
// leading dot).
type nameRule struct {
	name   string // lower case, no leading or trailing dot
	suffix bool
}

func (r nameRule) matches(host string) bool {
	if r.suffix {
		return strings.HasSuffix(host, "."+r.name)
	}
	return host == r.name
}

// ErrInvalidPolicy is wrapped by every error of ParsePolicy.
var ErrInvalidPolicy = errors.New("invalid --allowed-destinations")

// ParsePolicy reads --allowed-destinations: comma-separated entries, each a CIDR
// ("10.20.0.0/16", "fd00:1::/64"; a single address is written /32 or /128), a host name
// ("broker.knative-eventing.svc.cluster.local": that name only) or a host-name suffix with a
// leading dot (".lab.example.com": every name below it, not the name itself). Names are
// case-insensitive, in ASCII (an internationalised name in its xn-- form), without a trailing
// dot, wildcard, port, scheme or user. The empty string is the default policy: public
// addresses only.
func ParsePolicy(s string) (Policy, error) {
	p := Policy{}
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	var canonical []string
	for i, raw := range strings.Split(s, ",") {
		e := strings.TrimSpace(raw)
		fail := func(format string, args ...any) (Policy, error) {
			return Policy{}, fmt.Errorf("%w: entry %d %q: %s", ErrInvalidPolicy, i+1, e, fmt.Sprintf(format, args...))
		}
		switch {
		case e == "":
			return fail("empty (a doubled or trailing comma?)")
		case strings.Contains(e, "://"):
			return fail("a URL; write the host name or CIDR only")
		case strings.Contains(e, "/"):
			pfx, err := netip.ParsePrefix(e)
			if err != nil {
				return fail("not a CIDR (want e.g. 10.20.0.0/16 or 127.0.0.1/32)")
			}
			if pfx.Addr().Is4In6() {
				// ::ffff:10.0.0.0/104 is the IPv4 range; connections are checked unmapped.
				if pfx.Bits() < 96 {
					return fail("an IPv4-mapped prefix shorter than /96 covers more than IPv4; write the IPv4 CIDR")
				}
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
			}
			if pfx.Masked() != pfx {
				return fail("has bits set past its /%d; did you mean %s?", pfx.Bits(), pfx.Masked())
			}
			p.prefixes = append(p.prefixes, pfx)
			canonical = append(canonical, pfx.String())
		default:
			if a, err := netip.ParseAddr(e); err == nil {
				bits := 32
				if a.Is6() {
					bits = 128
				}
				return fail("an address, not a CIDR; write %s/%d", a.WithZone(""), bits)
			}
			r, err := parseName(e)
			if err != nil {
				return fail("%v", err)
			}
			p.names = append(p.names, r)
			if r.suffix {
				canonical = append(canonical, "."+r.name)
			} else {
				canonical = append(canonical, r.name)
			}
		}
	}
	p.text = strings.Join(canonical, ",")
	return p, nil
}

// parseName reads a host name or suffix of the policy.
func parseName(e string) (nameRule, error) {
	r := nameRule{}
	name := e
	if strings.HasPrefix(name, ".") {
		r.suffix, name = true, name[1:]
	}
	switch {
	case strings.Contains(name, "://"):
		return r, errors.New("a URL; write the host name only")
	case strings.ContainsAny(name, "*"):
		return r, errors.New("no wildcards; a leading dot (.example.com) allows every name below it")
	case strings.ContainsAny(name, "@:[]"):
		return r, errors.New("a host name has no user, port or brackets")
	case strings.HasSuffix(name, "."):
		return r, errors.New("no trailing dot")
	}
	r.name = strings.ToLower(name)
	if err := checkHostName(r.name); err != nil {
		return r, err
	}
	return r, nil
}

// checkHostName accepts lower-case ASCII host names: dot-separated labels of letters, digits
// and hyphens (not at a label's ends), at most 63 bytes each and 253 in all, whose last label is
// not all digits (so that nothing an address parser might read as an IPv4 address, such as
// "127.1", passes for a name).
func checkHostName(name string) error {
	if name == "" {
		return errors.New("no host name")
	}
	if len(name) > 253 {
		return errors.New("longer than 253 bytes")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("an empty label (two dots in a row)")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with a hyphen", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				if c >= 0x80 {
					return errors.New("not ASCII; write an internationalised name in its xn-- form")
				}
				return fmt.Errorf("label %q holds %q; a host name has letters, digits and hyphens", l, c)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" {
		return errors.New("ends in a number: an address, not a host name (write a CIDR)")
	}
	return nil
}

// String is the policy as --allowed-destinations would say it, canonical ("" for the default).
func (p Policy) String() string { return p.text }

// allows decides one connection: to address ip, for host name host ("" when the URL named an
// address). It returns ClassPublic when allowed, the address's class when refused.
func (p Policy) allows(host string, ip netip.Addr) (Class, bool) {
	class := ClassOf(ip)
	if class == ClassPublic {
		return class, true
	}
	plain := ip.WithZone("").Unmap()
	for _, pfx := range p.prefixes {
		if pfx.Contains(plain) {
			return class, true
		}
	}
	if class == ClassPrivate && p.nameAllowed(host) {
		return class, true
	}
	return class, false
}

// nameAllowed says whether host (as the URL named it) is a name the policy allows. host must
// be a valid host name itself: an IP literal, a name with characters no DNS name has, or with
// empty labels never matches. One trailing dot (the absolute form of the same name) is ignored.
func (p Policy) nameAllowed(host string) bool {
	if host == "" || len(p.names) == 0 {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if checkHostName(h) != nil {
		return false
	}
	for _, r := range p.names {
		if r.matches(h) {
			return true
		}
	}
	return false
}
