package extension

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// FuzzVerify: any token, key and period from a link — hostile input from the internet — is
// refused with one of the three errors or accepted, never a panic; and a genuine token stops
// working when any byte of it changes.
func FuzzVerify(f *testing.F) {
	s, err := NewSigner(testKey)
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.Mint(key, "3d", deadline, deadline.Add(time.Hour))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, string(key), "3d", 0, byte(0))
	f.Add("a.b.c.d", "expiry/x", "1w", 3, byte('x'))
	f.Add("", "", "", 0, byte(0))
	resume, err := s.MintExpiryResume(key, "ana", "3d", deadline, deadline.Add(time.Hour))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(resume, string(key), "3d", 1, byte('x'))
	f.Fuzz(func(t *testing.T, token, k, period string, at int, b byte) {
		if _, err := s.Verify(token, key, period, now); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify %q: unexpected error %v", token, err)
		}
		_, _ = s.Verify(token, lifecycle.Key(k), period, now)
		// The resume token of an expiry pause is read from the same kind of link.
		if _, err := s.VerifyExpiryResume(token, lifecycle.Key(k), period, now); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify expiry resume %q: unexpected error %v", token, err)
		}
		if good == "" {
			return
		}
		i := at % len(good)
		if i < 0 {
			i = -i
		}
		if good[i] == b {
			return
		}
		changed := good[:i] + string([]byte{b}) + good[i+1:]
		if _, err := s.Verify(changed, key, "3d", now); err == nil {
			t.Fatalf("a token with byte %d changed to %q still verifies: %q", i, b, changed)
		}
	})
}

// FuzzClient: any peer address and X-Forwarded-For — the header is whatever a client sends —
// gives a client without a panic, the same one a plain reading of the rule gives (split the
// list, walk it from the right past trusted proxies; no address: the peer), and never an
// IPv6 key finer than /64.
func FuzzClient(f *testing.F) {
	proxies, err := ParseTrustedProxies([]string{"10.0.0.0/8", "fd00::/8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("10.0.0.1:80", "198.51.100.1, 10.0.0.2", "")
	f.Add("10.0.0.1:80", "1.2.3.4,, [2001:db8::1]:80, unknown", "10.0.0.3")
	f.Add("[fd00::1]:443", "2001:db8:1:2::3%eth0", "::ffff:10.1.1.1")
	f.Add("203.0.113.1:5", "10.0.0.9", "")
	f.Add("@", "", "")
	f.Fuzz(func(t *testing.T, peer, xff1, xff2 string) {
		c := proxies.Client(peer, []string{xff1, xff2})
		want := referenceClient(proxies, peer, xff1+","+xff2)
		if c.Addr != want.Addr || c.Malformed != want.Malformed || c.Key() != want.Key() {
			t.Fatalf("Client(%q, %q, %q) = %+v, want %+v", peer, xff1, xff2, c, want)
		}
		if k := c.Key(); c.Addr.Is6() && !strings.HasSuffix(k, "/64") {
			t.Fatalf("IPv6 client %s has key %q, want its /64", c.Addr, k)
		}
		if c.Addr.Is4In6() || c.Addr.Zone() != "" {
			t.Fatalf("client %s keeps a mapping or zone", c.Addr)
		}
	})
}

// referenceClient is the rule as docs/detectors/expiry.md states it, written plainly.
func referenceClient(p TrustedProxies, peer, xff string) Client {
	a, ok := parseHop(peer)
	if !ok {
		return Client{Peer: peer}
	}
	if !p.Trusts(a) {
		return Client{Addr: a, Peer: peer}
	}
	entries := strings.Split(xff, ",")
	left := a
	for i := len(entries) - 1; i >= 0; i-- {
		e, ok := parseHop(entries[i])
		if !ok {
			return Client{Addr: a, Peer: peer, Malformed: true}
		}
		if !p.Trusts(e) {
			return Client{Addr: e, Peer: peer}
		}
		left = e
	}
	return Client{Addr: left, Peer: peer}
}
