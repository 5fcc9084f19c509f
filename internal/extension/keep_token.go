package extension

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// keepTokenPrefix starts a keep token (a version, and a shape neither an extension token nor an
// owner's page token has); the MAC's own label ("kustos-keep-v1") makes sure that no other kind
// of token ever verifies as a keep token, nor a keep token as another kind.
const keepTokenPrefix = "k1"

// KeepClaim is what a keep token grants: keeping Key (an inactivity target) for Period, to the
// owner whose lifecycle.OwnerID is Owner (noOwner: a target without one), in answer to the
// inactivity alert sent at AlertAt about the idle period that began at IdleSince; valid until
// Expires.
type KeepClaim struct {
	ID        string
	Key       lifecycle.Key
	Owner     string
	Period    string
	IdleSince time.Time
	AlertAt   time.Time
	Expires   time.Time
}

// noOwner stands for the owner of a target that has none in a keep token.
const noOwner = "-"

// KeepOwner is the owner part of a keep claim for owner as recorded.
func KeepOwner(owner string) string {
	if owner == "" {
		return noOwner
	}
	return lifecycle.OwnerID(owner)
}

// MintKeep makes a one-time token for keeping key for period, issued to owner (as recorded),
// answering the alert sent at alertAt about the idle period since idleSince; it expires at
// expires. The id is random: the target's Lease records used ids, so each token works once. The
// token carries the owner's id, never the owner.
func (s *Signer) MintKeep(key lifecycle.Key, owner, period string, idleSince, alertAt, expires time.Time) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	c := KeepClaim{ID: hex.EncodeToString(b[:]), Key: key, Owner: KeepOwner(owner), Period: period,
		IdleSince: idleSince.UTC().Truncate(time.Second), AlertAt: alertAt.UTC().Truncate(time.Second), Expires: expires.UTC().Truncate(time.Second)}
	return strings.Join([]string{keepTokenPrefix, c.ID, c.Owner, unix(c.IdleSince), unix(c.AlertAt), unix(c.Expires), s.keepMAC(c)}, "."), nil
}

// VerifyKeep checks a keep token against the key and period of its link at now, in constant
// time; every error wraps ErrMalformed, ErrForged or ErrExpired.
func (s *Signer) VerifyKeep(token string, key lifecycle.Key, period string, now time.Time) (KeepClaim, error) {
	parts := strings.Split(token, ".")
	if len(token) > 240 || len(parts) != 7 || parts[0] != keepTokenPrefix || len(parts[1]) != 16 {
		return KeepClaim{}, ErrMalformed
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return KeepClaim{}, ErrMalformed
	}
	if o := parts[2]; o != noOwner {
		if _, err := hex.DecodeString(o); err != nil || len(o) != 32 || strings.ToLower(o) != o {
			return KeepClaim{}, ErrMalformed
		}
	}
	var ts [3]time.Time
	for i, p := range parts[3:6] {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return KeepClaim{}, ErrMalformed
		}
		ts[i] = time.Unix(n, 0).UTC()
	}
	c := KeepClaim{ID: parts[1], Key: key, Owner: parts[2], Period: period, IdleSince: ts[0], AlertAt: ts[1], Expires: ts[2]}
	if !hmac.Equal([]byte(parts[6]), []byte(s.keepMAC(c))) {
		return KeepClaim{}, ErrForged
	}
	if !now.Before(c.Expires) {
		return c, fmt.Errorf("%w at %s", ErrExpired, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

func (s *Signer) keepMAC(c KeepClaim) string {
	h := hmac.New(sha256.New, s.key)
	// Length-prefixed fields: no two claims share an encoding.
	for _, f := range []string{"kustos-keep-v1", c.ID, string(c.Key), c.Owner, c.Period, unix(c.IdleSince), unix(c.AlertAt), unix(c.Expires)} {
		fmt.Fprintf(h, "%d:%s|", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
