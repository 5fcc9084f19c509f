package extension

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var (
	keepKey   = lifecycle.Key("inactivity/Deployment.apps/lab/vm-1")
	idleSince = now.Add(-8 * 24 * time.Hour)
	alertAt   = now.Add(-time.Hour)
)

// TestKeepToken: a keep token keeps its target for its period, answering its alert, until it
// expires, and nothing else: not another target, not a longer period, not another alert, not
// with a later expiry; and no other kind of token is a keep token, nor a keep token another kind.
func TestKeepToken(t *testing.T) {
	s := signer(t)
	expires := now.Add(48 * time.Hour)
	tok, err := s.MintKeep(keepKey, "ana@example.org", "3d", idleSince, alertAt, expires)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.VerifyKeep(tok, keepKey, "3d", now)
	if err != nil || c.Key != keepKey || c.Owner != lifecycle.OwnerID("ana@example.org") || c.Period != "3d" || !c.IdleSince.Equal(idleSince) || !c.AlertAt.Equal(alertAt) || !c.Expires.Equal(expires) || len(c.ID) != 16 {
		t.Fatalf("verify: %+v, %v", c, err)
	}
	p := strings.Split(tok, ".")
	with := func(i int, v string) string {
		q := append([]string(nil), p...)
		q[i] = v
		return strings.Join(q, ".")
	}
	ext, err := s.Mint(key, "3d", deadline, expires)
	if err != nil {
		t.Fatal(err)
	}
	owner := s.MintOwner(lifecycle.OwnerID("ana@example.com"), expires)
	other, _ := NewSigner([]byte("another key, 32 bytes or more......"))
	for _, tc := range []struct {
		name   string
		signer *Signer
		token  string
		key    lifecycle.Key
		period string
		at     time.Time
		want   error
	}{
		{"a longer period written into the link", s, tok, keepKey, "2w", now, ErrForged},
		{"another target's key", s, tok, "inactivity/Deployment.apps/lab/vm-2", "3d", now, ErrForged},
		{"another id", s, with(1, "00000000"+p[1][8:]), keepKey, "3d", now, ErrForged},
		{"another owner written in", s, with(2, lifecycle.OwnerID("bo")), keepKey, "3d", now, ErrForged},
		{"no owner written in", s, with(2, "-"), keepKey, "3d", now, ErrForged},
		{"the owner in upper case", s, with(2, strings.ToUpper(p[2])), keepKey, "3d", now, ErrMalformed},
		{"the owner spelt out", s, with(2, "ana@example.org"), keepKey, "3d", now, ErrMalformed},
		{"another idle period written in", s, with(3, "1"), keepKey, "3d", now, ErrForged},
		{"another alert written in", s, with(4, "1"), keepKey, "3d", now, ErrForged},
		{"a later expiry written in", s, with(5, "9999999999"), keepKey, "3d", now, ErrForged},
		{"signed with another key", other, tok, keepKey, "3d", now, ErrForged},
		{"expired", s, tok, keepKey, "3d", expires, ErrExpired},
		{"truncated", s, tok[:len(tok)-3], keepKey, "3d", now, ErrForged},
		{"another version", s, with(0, "k2"), keepKey, "3d", now, ErrMalformed},
		{"a short id", s, with(1, "abc"), keepKey, "3d", now, ErrMalformed},
		{"a time that is no number", s, with(3, "x"), keepKey, "3d", now, ErrMalformed},
		{"an extension token as a keep token", s, ext, keepKey, "3d", now, ErrMalformed},
		{"an owner token as a keep token", s, owner, keepKey, "3d", now, ErrMalformed},
		{"an extension token's MAC under the keep prefix", s, with(6, strings.Split(ext, ".")[3]), keepKey, "3d", now, ErrForged},
		{"not a token", s, "hello", keepKey, "3d", now, ErrMalformed},
		{"huge", s, "k1." + strings.Repeat("a", 300), keepKey, "3d", now, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.signer.VerifyKeep(tc.token, tc.key, tc.period, tc.at); !errors.Is(err, tc.want) {
				t.Errorf("VerifyKeep = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("a target without an owner", func(t *testing.T) {
		tok, err := s.MintKeep(keepKey, "", "1d", idleSince, alertAt, expires)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := s.VerifyKeep(tok, keepKey, "1d", now); err != nil || c.Owner != "-" {
			t.Errorf("verify: %+v, %v", c, err)
		}
	})
	if strings.Contains(tok, "ana") {
		t.Errorf("the token spells the owner out: %s", tok)
	}
	t.Run("a keep token as an extension or owner token", func(t *testing.T) {
		if _, err := s.Verify(tok, keepKey, "3d", now); err == nil {
			t.Error("a keep token verified as an extension token")
		}
		if _, err := s.VerifyOwner(tok, now); err == nil {
			t.Error("a keep token verified as an owner token")
		}
	})
}

// FuzzVerifyKeep: any token, key and period from a keep link — hostile input — is refused with
// one of the three errors or accepted, never a panic; a genuine token stops working when any
// byte of it changes; and no token is both a keep token and another kind.
func FuzzVerifyKeep(f *testing.F) {
	s, err := NewSigner(testKey)
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.MintKeep(keepKey, "ana@example.org", "3d", idleSince, alertAt, deadline)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, string(keepKey), "3d", 0, byte(0))
	f.Add("k1.0123456789abcdef.-.1.2.3.x", "inactivity/x", "1w", 5, byte('x'))
	f.Add("", "", "", 0, byte(0))
	f.Fuzz(func(t *testing.T, token, k, period string, at int, b byte) {
		_, err := s.VerifyKeep(token, lifecycle.Key(k), period, now)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify %q: unexpected error %v", token, err)
		}
		if err == nil {
			if _, err := s.Verify(token, lifecycle.Key(k), period, now); err == nil {
				t.Fatalf("%q is both a keep and an extension token", token)
			}
			if _, err := s.VerifyOwner(token, now); err == nil {
				t.Fatalf("%q is both a keep and an owner token", token)
			}
		}
		i := at % len(good)
		if i < 0 {
			i = -i
		}
		if good[i] == b {
			return
		}
		changed := good[:i] + string([]byte{b}) + good[i+1:]
		if _, err := s.VerifyKeep(changed, keepKey, "3d", now); err == nil {
			t.Fatalf("a token with byte %d changed to %q still verifies: %q", i, b, changed)
		}
	})
}
