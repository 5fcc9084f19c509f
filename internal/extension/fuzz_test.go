package extension

import (
	"errors"
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
	f.Fuzz(func(t *testing.T, token, k, period string, at int, b byte) {
		if _, err := s.Verify(token, key, period, now); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify %q: unexpected error %v", token, err)
		}
		_, _ = s.Verify(token, lifecycle.Key(k), period, now)
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
