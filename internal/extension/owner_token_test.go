package extension

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestOwnerToken: an owner's page token opens that owner's page until it expires, and nothing
// else: not another owner's, not with a later expiry, not as an extension token, and no
// extension token opens a page.
func TestOwnerToken(t *testing.T) {
	s := signer(t)
	ana, bo := lifecycle.OwnerID("ana@example.com"), lifecycle.OwnerID("bo")
	expires := deadline.Add(expiry.LinkGrace)
	tok := s.MintOwner(ana, expires)
	if strings.Contains(tok, "ana") || strings.Contains(tok, "@") {
		t.Errorf("the token spells the owner out: %s", tok)
	}
	c, err := s.VerifyOwner(tok, now)
	if err != nil || c.Owner != ana || !c.Expires.Equal(expires) {
		t.Fatalf("verify: %+v, %v", c, err)
	}
	parts := strings.Split(tok, ".")
	ext, err := s.Mint(key, "3d", deadline, expires)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner([]byte("another key, 32 bytes or more......"))
	for _, tc := range []struct {
		name   string
		signer *Signer
		token  string
		at     time.Time
		want   error
	}{
		{"another owner's id written in", s, strings.Join([]string{parts[0], bo, parts[2], parts[3]}, "."), now, ErrForged},
		{"a later expiry written in", s, strings.Join([]string{parts[0], parts[1], "9999999999", parts[3]}, "."), now, ErrForged},
		{"the id in upper case", s, strings.Join([]string{parts[0], strings.ToUpper(parts[1]), parts[2], parts[3]}, "."), now, ErrMalformed},
		{"signed with another key", other, tok, now, ErrForged},
		{"expired", s, tok, expires, ErrExpired},
		{"an extension token as an owner token", s, ext, now, ErrMalformed},
		{"an extension token's MAC under the owner prefix", s, "o1." + ana + "." + strings.Split(ext, ".")[2] + "." + strings.Split(ext, ".")[3], now, ErrForged},
		{"truncated", s, tok[:len(tok)-3], now, ErrForged},
		{"another version", s, "o2" + tok[2:], now, ErrMalformed},
		{"not a token", s, "hello", now, ErrMalformed},
		{"huge", s, "o1." + strings.Repeat("a", 300), now, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.signer.VerifyOwner(tc.token, tc.at); !errors.Is(err, tc.want) {
				t.Errorf("VerifyOwner = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("an owner token as an extension token", func(t *testing.T) {
		if _, err := s.Verify(tok, key, "3d", now); err == nil {
			t.Error("an owner token verified as an extension token")
		}
	})
}

// FuzzVerifyOwner: any token from a page link — hostile input — is refused with one of the
// three errors or accepted, never a panic; a genuine token stops working when any byte of it
// changes; and no extension token is ever an owner token.
func FuzzVerifyOwner(f *testing.F) {
	s, err := NewSigner(testKey)
	if err != nil {
		f.Fatal(err)
	}
	good := s.MintOwner(lifecycle.OwnerID("ana@example.com"), deadline)
	f.Add(good, 0, byte(0))
	f.Add("o1.0123456789abcdef0123456789abcdef.1.x", 5, byte('x'))
	f.Add("", 0, byte(0))
	f.Fuzz(func(t *testing.T, token string, at int, b byte) {
		if _, err := s.VerifyOwner(token, now); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify %q: unexpected error %v", token, err)
		}
		if _, err := s.Verify(token, key, "3d", now); err == nil {
			if _, err := s.VerifyOwner(token, now); err == nil {
				t.Fatalf("%q is both an extension and an owner token", token)
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
		if _, err := s.VerifyOwner(changed, now); err == nil {
			t.Fatalf("a token with byte %d changed to %q still verifies: %q", i, b, changed)
		}
	})
}

type noticeSink struct{ got []lifecycle.Notice }

func (s *noticeSink) Send(_ context.Context, n lifecycle.Notice) error {
	s.got = append(s.got, n)
	return nil
}

// TestOwnerPages: a notice about an owner's environment gets a new page link that opens that
// owner's page until the link grace past its latest time (deadline, the action, or now); a
// notice to nobody's environment (the orphan digest) gets none.
func TestOwnerPages(t *testing.T) {
	srv := &Server{Signer: signer(t), BaseURL: "https://kustos.example", Now: func() time.Time { return now }}
	sink := &noticeSink{}
	o := OwnerPages{Server: srv, Next: sink}
	for _, tc := range []struct {
		name  string
		n     lifecycle.Notice
		until time.Time
	}{
		{"a warning: the link grace past the removal", lifecycle.Notice{Owner: "ana@example.com", Deadline: deadline, At: deadline.Add(time.Hour)}, deadline.Add(time.Hour + expiry.LinkGrace)},
		{"removed: the link grace past now", lifecycle.Notice{Owner: "ana@example.com", Deadline: now.Add(-time.Hour), At: now.Add(-time.Minute)}, now.Add(expiry.LinkGrace)},
		{"an inactivity alert without a deadline", lifecycle.Notice{Owner: "bo"}, now.Add(expiry.LinkGrace)},
		{"the orphan digest: no owner, no link", lifecycle.Notice{To: "ops@example.com"}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.got = nil
			if err := o.Send(t.Context(), tc.n); err != nil || len(sink.got) != 1 {
				t.Fatalf("Send: %v, %d sent", err, len(sink.got))
			}
			p := sink.got[0].OwnerPage
			if tc.until.IsZero() {
				if p != nil {
					t.Errorf("a page link for nobody: %+v", p)
				}
				return
			}
			if p == nil || p.Label != OwnerPageLabel || !p.Expires.Equal(tc.until) || !strings.HasPrefix(p.URL, "https://kustos.example/environment/?token=o1.") {
				t.Fatalf("page link %+v", p)
			}
			c, err := srv.Signer.VerifyOwner(strings.TrimPrefix(p.URL, "https://kustos.example/environment/?token="), now)
			if err != nil || c.Owner != lifecycle.OwnerID(tc.n.Owner) || !c.Expires.Equal(tc.until) {
				t.Errorf("the link's token: %+v, %v", c, err)
			}
		})
	}
}

// TestOwnerPageLinkTTL: the owner's page link lives at most the link TTL past the notice that
// carries it, however far away the environment's deadline is (kustos.io/ttl: 10y), and a notice
// sent later carries a new link that lives as long past it.
func TestOwnerPageLinkTTL(t *testing.T) {
	const tenYears = 10 * 365 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		ttl  time.Duration // Server.OwnerPageTTL (0: the default)
		n    lifecycle.Notice
		max  time.Duration // the link expires at most this long after the notice is sent
	}{
		{"a ten-year lifetime, the default cap", 0, lifecycle.Notice{Owner: "ana@example.com", Deadline: now.Add(tenYears), At: now.Add(tenYears)}, DefaultOwnerPageTTL},
		{"a ten-year lifetime, a cap of one day", 24 * time.Hour, lifecycle.Notice{Owner: "ana@example.com", Deadline: now.Add(tenYears), At: now.Add(tenYears)}, 24 * time.Hour},
		{"a near deadline: the grace past it, under the cap", 0, lifecycle.Notice{Owner: "ana@example.com", Deadline: deadline, At: deadline}, deadline.Sub(now) + expiry.LinkGrace},
		{"a cap shorter than the grace", time.Hour, lifecycle.Notice{Owner: "bo"}, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			srv := &Server{Signer: signer(t), BaseURL: "https://kustos.example", OwnerPageTTL: tc.ttl, Now: func() time.Time { return at }}
			sink := &noticeSink{}
			o := OwnerPages{Server: srv, Next: sink}
			if err := o.Send(t.Context(), tc.n); err != nil {
				t.Fatal(err)
			}
			at = now.Add(3 * 24 * time.Hour)
			if err := o.Send(t.Context(), tc.n); err != nil {
				t.Fatal(err)
			}
			if len(sink.got) != 2 || sink.got[0].OwnerPage == nil || sink.got[1].OwnerPage == nil {
				t.Fatalf("sent %+v", sink.got)
			}
			first, later := sink.got[0].OwnerPage, sink.got[1].OwnerPage
			if want := now.Add(tc.max); !first.Expires.Equal(want) {
				t.Errorf("the first link expires at %s, want %s", first.Expires, want)
			}
			if first.URL == later.URL {
				t.Errorf("the later notice carries the same link %s", later.URL)
			}
			if later.Expires.After(at.Add(tc.max)) || tc.n.Deadline.Sub(now) > tc.max && !later.Expires.Equal(at.Add(tc.max)) {
				t.Errorf("the later link expires at %s (sent %s, at most %s after)", later.Expires, at, tc.max)
			}
			tok := strings.TrimPrefix(first.URL, "https://kustos.example/environment/?token=")
			if _, err := srv.Signer.VerifyOwner(tok, now.Add(tc.max)); !errors.Is(err, ErrExpired) {
				t.Errorf("the first link at its cap: %v, want %v", err, ErrExpired)
			}
		})
	}
}
