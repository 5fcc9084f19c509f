package extension

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Token errors; every Verify error wraps one of them.
var (
	ErrMalformed = errors.New("malformed token")
	ErrForged    = errors.New("token does not match its link") // a tampered key, period or deadline
	ErrExpired   = errors.New("token expired")
)

// MinKeyBytes is the shortest HMAC key accepted (the Secret's content).
const MinKeyBytes = 32

// Signer mints and verifies extension tokens: HMAC-SHA256 over the token's id, the Key, the
// period, the deadline it extends and its expiry, with a key read from a Secret file.
type Signer struct {
	key []byte
}

// NewSigner uses key (at least MinKeyBytes bytes; surrounding whitespace, as a mounted file
// has, is ignored).
func NewSigner(key []byte) (*Signer, error) {
	k := []byte(strings.TrimSpace(string(key)))
	if len(k) < MinKeyBytes {
		return nil, fmt.Errorf("the token key has %d bytes, want at least %d (e.g. `openssl rand -hex 32`)", len(k), MinKeyBytes)
	}
	return &Signer{key: k}, nil
}

// Claim is what a token grants: extending Key, whose deadline was Deadline, by Period; valid
// until Expires (when the environment would be removed: the links die with it).
type Claim struct {
	ID       string
	Key      lifecycle.Key
	Period   string
	Deadline time.Time
	Expires  time.Time
}

// Mint makes a token for extending key (deadline d) by period; it expires at expires. The id is
// random: the Lease records used ids, so each token works once.
func (s *Signer) Mint(key lifecycle.Key, period string, d, expires time.Time) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	c := Claim{ID: hex.EncodeToString(b[:]), Key: key, Period: period, Deadline: d.UTC().Truncate(time.Second), Expires: expires.UTC().Truncate(time.Second)}
	return c.ID + "." + strconv.FormatInt(c.Deadline.Unix(), 10) + "." + strconv.FormatInt(c.Expires.Unix(), 10) + "." + s.mac(c), nil
}

// Verify checks a token against the key and period of its link at now, in constant time.
func (s *Signer) Verify(token string, key lifecycle.Key, period string, now time.Time) (Claim, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || len(parts[0]) != 16 || len(token) > 200 {
		return Claim{}, ErrMalformed
	}
	if _, err := hex.DecodeString(parts[0]); err != nil {
		return Claim{}, ErrMalformed
	}
	d, err1 := strconv.ParseInt(parts[1], 10, 64)
	e, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Claim{}, ErrMalformed
	}
	c := Claim{ID: parts[0], Key: key, Period: period, Deadline: time.Unix(d, 0).UTC(), Expires: time.Unix(e, 0).UTC()}
	if !hmac.Equal([]byte(parts[3]), []byte(s.mac(c))) {
		return Claim{}, ErrForged
	}
	if !now.Before(c.Expires) {
		return c, fmt.Errorf("%w at %s", ErrExpired, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

func (s *Signer) mac(c Claim) string {
	h := hmac.New(sha256.New, s.key)
	// Length-prefixed fields: no two claims share an encoding.
	for _, f := range []string{"kustos-extend-v1", c.ID, string(c.Key), c.Period,
		strconv.FormatInt(c.Deadline.Unix(), 10), strconv.FormatInt(c.Expires.Unix(), 10)} {
		fmt.Fprintf(h, "%d:%s|", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// ownerTokenPrefix starts an owner's page token (a version, and a shape no extension token
// has); the MAC's own label ("kustos-owner-v1", not "kustos-extend-v1") makes sure that neither
// kind of token ever verifies as the other.
const ownerTokenPrefix = "o1"

// OwnerClaim is what an owner's page token grants: reading the page of the owner whose
// lifecycle.OwnerID is Owner, until Expires.
type OwnerClaim struct {
	Owner   string
	Expires time.Time
}

// MintOwner makes a token for the page of the owner with id owner (lifecycle.OwnerID); it
// expires at expires. The token carries the id, never the owner: an email address does not
// appear in a URL.
func (s *Signer) MintOwner(owner string, expires time.Time) string {
	c := OwnerClaim{Owner: owner, Expires: expires.UTC().Truncate(time.Second)}
	return ownerTokenPrefix + "." + c.Owner + "." + strconv.FormatInt(c.Expires.Unix(), 10) + "." + s.ownerMAC(c)
}

// VerifyOwner checks an owner's page token at now, in constant time; every error wraps
// ErrMalformed, ErrForged or ErrExpired.
func (s *Signer) VerifyOwner(token string, now time.Time) (OwnerClaim, error) {
	parts := strings.Split(token, ".")
	if len(token) > 200 || len(parts) != 4 || parts[0] != ownerTokenPrefix || len(parts[1]) != 32 {
		return OwnerClaim{}, ErrMalformed
	}
	if _, err := hex.DecodeString(parts[1]); err != nil || strings.ToLower(parts[1]) != parts[1] {
		return OwnerClaim{}, ErrMalformed
	}
	e, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return OwnerClaim{}, ErrMalformed
	}
	c := OwnerClaim{Owner: parts[1], Expires: time.Unix(e, 0).UTC()}
	if !hmac.Equal([]byte(parts[3]), []byte(s.ownerMAC(c))) {
		return OwnerClaim{}, ErrForged
	}
	if !now.Before(c.Expires) {
		return c, fmt.Errorf("%w at %s", ErrExpired, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

func (s *Signer) ownerMAC(c OwnerClaim) string {
	h := hmac.New(sha256.New, s.key)
	for _, f := range []string{"kustos-owner-v1", c.Owner, strconv.FormatInt(c.Expires.Unix(), 10)} {
		fmt.Fprintf(h, "%d:%s|", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
