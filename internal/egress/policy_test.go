package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want Class
	}{
		{"8.8.8.8", ClassPublic},
		{"2606:4700:4700::1111", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.255.0.9", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"169.254.169.254", ClassLinkLocal},
		{"::ffff:169.254.169.254", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"febf::1", ClassLinkLocal},
		{"10.0.0.1", ClassPrivate},
		{"10.96.0.1", ClassPrivate}, // a typical service network
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.1", ClassPublic},
		{"192.168.1.1", ClassPrivate},
		{"100.64.0.1", ClassPrivate},
		{"100.127.255.255", ClassPrivate},
		{"100.128.0.1", ClassPublic},
		{"fc00::1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"fec0::1", ClassPrivate},
		{"::ffff:10.1.2.3", ClassPrivate},
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"::ffff:0.0.0.0", ClassUnspecified},
		{"224.0.0.1", ClassLinkLocal}, // link-local multicast
		{"224.0.1.1", ClassMulticast},
		{"239.1.1.1", ClassMulticast},
		{"ff02::1", ClassLinkLocal}, // link-local multicast
		{"ff05::2", ClassMulticast},
		{"255.255.255.255", ClassReserved},
		{"240.0.0.1", ClassReserved},
		{"198.18.0.1", ClassReserved},
		{"::a00:1", ClassReserved},             // IPv4-compatible ::10.0.0.1
		{"64:ff9b::7f00:1", ClassLoopback},     // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", ClassLinkLocal}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", ClassPublic},      // NAT64 of 8.8.8.8
		{"2002:a00:1::1", ClassPrivate},        // 6to4 of 10.0.0.1
		// The local-use NAT64 prefix, in each of RFC 6052's layouts.
		{"64:ff9b:1:a00:0:100::", ClassPrivate},         // /48 layout of 10.0.0.1
		{"64:ff9b:1:7f:0:1::", ClassLoopback},           // /56 layout of 127.0.0.1
		{"64:ff9b:1:0:a:0:100:0", ClassPrivate},         // /64 layout of 10.0.0.1 (read as /96: 1.0.0.0)
		{"64:ff9b:1:0:a9:fea9:fe00:0", ClassLinkLocal},  // /64 layout of 169.254.169.254
		{"64:ff9b:1::a00:1", ClassPrivate},              // /96 layout of 10.0.0.1
		{"64:ff9b:1::808:808", ClassPublic},             // /96 layout of 8.8.8.8
		{"64:ff9b:1:808:8:800::", ClassPublic},          // /48 layout of 8.8.8.8 (read as /96: 0.0.0.0)
		{"64:ff9b:1::", ClassUnspecified},               // every layout reads 0.0.0.0
		{"64:ff9b:1:a00:0:100:808:808", ClassPrivate},   // /48 layout of 10.0.0.1 with a suffix (read as /96: 8.8.8.8)
		{"64:ff9b:1:a00:100:100:808:808", ClassPrivate}, // the same with a "u" octet that is not zero
		// ISATAP interface identifiers, under any prefix.
		{"2a00:1450::5efe:a00:1", ClassPrivate},       // 10.0.0.1
		{"2a00:1450::200:5efe:7f00:1", ClassLoopback}, // universal bit set, 127.0.0.1
		{"2a00:1450::5efe:808:808", ClassPublic},      // 8.8.8.8
		{"2002:808:808:0:0:5efe:a00:1", ClassPrivate}, // 6to4 of a public address, ISATAP of 10.0.0.1
		{"fe80::5efe:808:808", ClassLinkLocal},
		{"2002:808:808::1", ClassPublic},                        // 6to4 of 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ClassReserved}, // Teredo
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := ClassOf(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("ClassOf(%s) = %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
	if got := ClassOf(netip.Addr{}); got != ClassUnspecified {
		t.Errorf("ClassOf(zero) = %q", got)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "127.0.0.1/32", want: "127.0.0.1/32"},
		{in: "10.0.0.0/8, fd00::/8 ,.svc.cluster.local", want: "10.0.0.0/8,fd00::/8,.svc.cluster.local"},
		{in: "Broker.Knative-Eventing.SVC.cluster.local", want: "broker.knative-eventing.svc.cluster.local"},
		{in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		{in: ".xn--bcher-kva.example", want: ".xn--bcher-kva.example"},
		{in: "10.0.0.0/8,", err: "entry 2 \"\": empty"},
		{in: ",10.0.0.0/8", err: "entry 1 \"\": empty"},
		{in: "10.1.2.3/8", err: "did you mean 10.0.0.0/8?"},
		{in: "10.0.0.0/33", err: "not a CIDR"},
		{in: "127.0.0.1", err: "write 127.0.0.1/32"},
		{in: "::1", err: "write ::1/128"},
		{in: "::ffff:0.0.0.0/8", err: "IPv4-mapped prefix shorter than /96"},
		{in: "*.svc.cluster.local", err: "no wildcards"},
		{in: "https://broker.svc", err: "a URL"},
		{in: "broker.svc:8080", err: "no user, port or brackets"},
		{in: "user@broker.svc", err: "no user, port or brackets"},
		{in: "broker.svc.", err: "no trailing dot"},
		{in: ".", err: "no host name"},
		{in: "..svc", err: "empty label"},
		{in: "a..b", err: "empty label"},
		{in: "bücher.example", err: "xn-- form"},
		{in: "broker_1.svc", err: "letters, digits and hyphens"},
		{in: "-broker.svc", err: "starts or ends with a hyphen"},
		{in: "127.1", err: "ends in a number"},
		{in: "0x7f.1", err: "ends in a number"},
		{in: strings.Repeat("a", 64) + ".svc", err: "longer than 63 bytes"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ParsePolicy(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidPolicy) {
					t.Fatalf("ParsePolicy(%q) = %v, want an ErrInvalidPolicy saying %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != tc.want {
				t.Errorf("String() = %q, want %q", p.String(), tc.want)
			}
			again, err := ParsePolicy(p.String())
			if err != nil || again.String() != p.String() {
				t.Errorf("the canonical form %q does not parse to itself: %v", p.String(), err)
			}
		})
	}
}

// TestPolicyAllows: the decision for one connection, by the host the URL named and the address
// it resolved to. A name allowance relaxes private addresses only; a CIDR relaxes any class.
func TestPolicyAllows(t *testing.T) {
	p, err := ParsePolicy(".svc.cluster.local,broker.knative-eventing.svc,192.168.7.0/24,127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host, addr string
		allowed          bool
	}{
		{"public by address", "", "8.8.8.8", true},
		{"public by any name", "example.com", "93.184.216.34", true},
		{"private by address", "", "10.96.0.1", false},
		{"private by a name not allowed", "intranet.example.com", "10.1.2.3", false},
		{"private by an allowed suffix", "my-svc.team-a.svc.cluster.local", "10.96.0.12", true},
		{"the suffix itself is not below it", "svc.cluster.local", "10.96.0.12", false},
		{"suffix as a label prefix", "evil-svc.cluster.local", "10.96.0.12", false},
		{"suffix inside another name", "x.svc.cluster.local.evil.com", "10.96.0.12", false},
		{"allowed suffix, upper case and a trailing dot", "MY-SVC.TEAM-A.SVC.CLUSTER.LOCAL.", "10.96.0.12", true},
		{"allowed exact name", "broker.knative-eventing.svc", "10.96.3.4", true},
		{"below an exact name", "x.broker.knative-eventing.svc", "10.96.3.4", false},
		{"allowed name with an empty label", "a..svc.cluster.local", "10.96.0.12", false},
		{"allowed name with a stray character", "a_b.svc.cluster.local", "10.96.0.12", false},
		{"allowed suffix resolving to loopback", "x.svc.cluster.local", "127.0.0.2", false},
		{"allowed suffix resolving to metadata", "metadata.svc.cluster.local", "169.254.169.254", false},
		{"allowed suffix resolving to mapped metadata", "metadata.svc.cluster.local", "::ffff:169.254.169.254", false},
		{"allowed suffix resolving to unspecified", "x.svc.cluster.local", "0.0.0.0", false},
		{"allowed CIDR", "", "192.168.7.9", true},
		{"allowed CIDR, mapped", "", "::ffff:192.168.7.9", true},
		{"next to the CIDR", "", "192.168.8.1", false},
		{"loopback by CIDR", "", "127.0.0.1", true},
		{"loopback next to the CIDR", "", "127.0.0.2", false},
		{"localhost by CIDR", "localhost", "127.0.0.1", true},
		{"IPv6 loopback", "localhost", "::1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, ok := p.allows(tc.host, netip.MustParseAddr(tc.addr))
			if ok != tc.allowed {
				t.Errorf("allows(%q, %s) = %v (class %q), want %v", tc.host, tc.addr, ok, class, tc.allowed)
			}
		})
	}
	var zero Policy
	for _, addr := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "fc00::1", "fe80::1", "::ffff:127.0.0.1"} {
		if _, ok := zero.allows("x.svc.cluster.local", netip.MustParseAddr(addr)); ok {
			t.Errorf("the default policy allows %s", addr)
		}
	}
}

// FuzzParsePolicy: the parser never panics, and what it accepts has a canonical form that
// parses to itself.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1/32", "10.0.0.0/8,.svc.cluster.local", "broker.knative-eventing.svc",
		"::ffff:10.0.0.0/104", "*.x", "a..b", "bücher.example", "127.1", ",", "fe80::/10,.lab.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error %v does not wrap ErrInvalidPolicy", err)
			}
			return
		}
		again, err := ParsePolicy(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("%q: canonical %q parses to %q, %v", s, p.String(), again.String(), err)
		}
		for _, r := range p.names {
			if checkHostName(r.name) != nil {
				t.Fatalf("%q: accepted name %q is not a host name", s, r.name)
			}
		}
	})
}

// FuzzEmbeddedIPv4 checks that no IPv6 form carrying a non-public IPv4 address is public: the
// well-known NAT64 prefix, the local-use one in each of RFC 6052's layouts (but 0.0.0.0/8, whose
// readings localNAT64 passes over), an ISATAP identifier under any prefix, and 6to4.
func FuzzEmbeddedIPv4(f *testing.F) {
	f.Add([]byte{10, 0, 0, 1}, []byte{0x2a, 0, 0x14, 0x50, 0, 0, 0, 0}, uint16(0))
	f.Add([]byte{127, 0, 0, 1}, []byte{0, 0x64, 0xff, 0x9b, 0, 1, 0xab, 0xcd}, uint16(0x1234))
	f.Add([]byte{169, 254, 169, 254}, []byte{0x20, 0x02, 0, 0, 0, 0, 0, 0}, uint16(0xffff))
	f.Fuzz(func(t *testing.T, v4b, prefix []byte, site uint16) {
		if len(v4b) != 4 || len(prefix) != 8 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(v4b))
		if ClassOf(v4) == ClassPublic {
			return
		}
		var forms [][16]byte
		wellKnown := [16]byte{0, 0x64, 0xff, 0x9b}
		copy(wellKnown[12:], v4b)
		forms = append(forms, wellKnown)
		local := [16]byte{0, 0x64, 0xff, 0x9b, 0, 1}
		l48, l56, l64, l96 := local, local, local, local
		l48[6], l48[7], l48[9], l48[10] = v4b[0], v4b[1], v4b[2], v4b[3]
		l56[6] = byte(site)
		l56[7], l56[9], l56[10], l56[11] = v4b[0], v4b[1], v4b[2], v4b[3]
		l64[6], l64[7] = byte(site>>8), byte(site)
		copy(l64[9:13], v4b)
		l96[6], l96[7] = byte(site>>8), byte(site)
		copy(l96[12:], v4b)
		// A translator reads its layout's IPv4 bits whatever the "u" octet and the suffix hold.
		l48[8], l56[8], l64[8] = prefix[7], prefix[7], prefix[7]
		copy(l48[11:], prefix[:5])
		copy(l56[12:], prefix[:4])
		copy(l64[13:], prefix[:3])
		forms = append(forms, l48, l56, l64, l96)
		var isatap [16]byte
		copy(isatap[:8], prefix)
		isatap[8], isatap[10], isatap[11] = byte(site)&0x02, 0x5e, 0xfe
		copy(isatap[12:], v4b)
		forms = append(forms, isatap)
		sixToFour := [16]byte{0x20, 0x02}
		copy(sixToFour[2:6], v4b)
		copy(sixToFour[6:], prefix)
		forms = append(forms, sixToFour)
		for i, b := range forms {
			if ClassOf(v4) == ClassUnspecified && i >= 1 && i <= 4 {
				continue // local-use readings in 0.0.0.0/8 are passed over (localNAT64)
			}
			ip := netip.AddrFrom16(b)
			if ClassOf(ip) == ClassPublic {
				t.Errorf("ClassOf(%s) is public, but it carries %s (%s)", ip, v4, ClassOf(v4))
			}
		}
	})
}
