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

// resumeTokenPrefix starts a resume token; the MAC's own label ("kustos-resume-v1") makes sure
// that no other kind of token ever verifies as a resume token, nor a resume token as another kind.
const resumeTokenPrefix = "r1"

// expiryResumeTokenPrefix starts the resume token of an expiry pause, which is an extension by
// Period too: its MAC's label ("kustos-expiry-resume-v1") covers the period of its link, so
// neither a longer period nor an inactivity resume token verifies in its place.
const expiryResumeTokenPrefix = "r2"

// ResumeClaim is what a resume token grants: resuming Key (an inactivity or expiry target) from
// the pause Kustos decided at PausedAt, to the owner whose lifecycle.OwnerID is Owner (noOwner:
// a target without one); valid until Expires. Period is the extension an expiry resume grants
// with it (empty for an inactivity resume).
type ResumeClaim struct {
	ID       string
	Key      lifecycle.Key
	Owner    string
	Period   string
	PausedAt time.Time
	Expires  time.Time
}

// MintResume makes a one-time token for resuming key from the pause decided at pausedAt, issued
// to owner (as recorded); it expires at expires. The id is random: the target's Lease records
// used ids. The token carries the owner's id, never the owner.
func (s *Signer) MintResume(key lifecycle.Key, owner string, pausedAt, expires time.Time) (string, error) {
	return s.mintResume(key, owner, "", pausedAt, expires)
}

// MintExpiryResume makes a one-time token for resuming key from the expiry pause decided at
// pausedAt and extending it by period (the link names the period; the token's MAC covers it).
func (s *Signer) MintExpiryResume(key lifecycle.Key, owner, period string, pausedAt, expires time.Time) (string, error) {
	return s.mintResume(key, owner, period, pausedAt, expires)
}

func (s *Signer) mintResume(key lifecycle.Key, owner, period string, pausedAt, expires time.Time) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	c := ResumeClaim{ID: hex.EncodeToString(b[:]), Key: key, Owner: KeepOwner(owner), Period: period,
		PausedAt: pausedAt.UTC().Truncate(time.Second), Expires: expires.UTC().Truncate(time.Second)}
	return strings.Join([]string{resumePrefix(period), c.ID, c.Owner, unix(c.PausedAt), unix(c.Expires), s.resumeMAC(c)}, "."), nil
}

func resumePrefix(period string) string {
	if period != "" {
		return expiryResumeTokenPrefix
	}
	return resumeTokenPrefix
}

// VerifyResume checks a resume token against the key of its link at now, in constant time;
// every error wraps ErrMalformed, ErrForged or ErrExpired.
func (s *Signer) VerifyResume(token string, key lifecycle.Key, now time.Time) (ResumeClaim, error) {
	return s.verifyResume(token, key, "", now)
}

// VerifyExpiryResume is VerifyResume for the token of an expiry pause's link of period.
func (s *Signer) VerifyExpiryResume(token string, key lifecycle.Key, period string, now time.Time) (ResumeClaim, error) {
	if period == "" {
		return ResumeClaim{}, ErrMalformed
	}
	return s.verifyResume(token, key, period, now)
}

func (s *Signer) verifyResume(token string, key lifecycle.Key, period string, now time.Time) (ResumeClaim, error) {
	parts := strings.Split(token, ".")
	if len(token) > 200 || len(parts) != 6 || parts[0] != resumePrefix(period) || len(parts[1]) != 16 {
		return ResumeClaim{}, ErrMalformed
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return ResumeClaim{}, ErrMalformed
	}
	if o := parts[2]; o != noOwner {
		if _, err := hex.DecodeString(o); err != nil || len(o) != 32 || strings.ToLower(o) != o {
			return ResumeClaim{}, ErrMalformed
		}
	}
	var ts [2]time.Time
	for i, p := range parts[3:5] {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return ResumeClaim{}, ErrMalformed
		}
		ts[i] = time.Unix(n, 0).UTC()
	}
	c := ResumeClaim{ID: parts[1], Key: key, Owner: parts[2], Period: period, PausedAt: ts[0], Expires: ts[1]}
	if !hmac.Equal([]byte(parts[5]), []byte(s.resumeMAC(c))) {
		return ResumeClaim{}, ErrForged
	}
	if !now.Before(c.Expires) {
		return c, fmt.Errorf("%w at %s", ErrExpired, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

func (s *Signer) resumeMAC(c ResumeClaim) string {
	h := hmac.New(sha256.New, s.key)
	// Length-prefixed fields: no two claims share an encoding.
	fields := []string{"kustos-resume-v1", c.ID, string(c.Key), c.Owner, unix(c.PausedAt), unix(c.Expires)}
	if c.Period != "" {
		fields = append([]string{"kustos-expiry-resume-v1", c.Period}, fields[1:]...)
	}
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s|", len(f), f)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
