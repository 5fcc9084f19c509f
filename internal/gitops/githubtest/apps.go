package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// NewAppKey generates an RSA key for a test GitHub App and returns it with its PKCS#1 PEM
// encoding (the format GitHub hands out, and what ghinstallation reads).
func NewAppKey(t interface{ Fatalf(string, ...any) }) (*rsa.PrivateKey, []byte) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("githubtest: generating key: %v", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// AppJWT signs an App JWT as ghinstallation does (RS256, iss = app ID, iat 60s in the past,
// exp in 10 minutes), for tests that call the token exchange directly.
func AppJWT(appID int64, key *rsa.PrivateKey) (string, error) {
	now := time.Now()
	claims := jwt.RegisteredClaims{
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(10 * time.Minute)),
		Issuer:    strconv.FormatInt(appID, 10),
	}
	return jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
}

func (c *call) createAccessToken() reply {
	const doc = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	_, raw, _ := cutScheme(c.r.Header.Get("Authorization"))
	var claims jwt.RegisteredClaims
	var appID int64
	_, err := jwt.ParseWithClaims(raw, &claims, func(tok *jwt.Token) (any, error) {
		if tok.Method != jwt.SigningMethodRS256 {
			return nil, fmt.Errorf("unexpected signing method %v", tok.Header["alg"])
		}
		id, err := strconv.ParseInt(claims.Issuer, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("iss %q is not an App ID", claims.Issuer)
		}
		c.s.mu.Lock()
		key := c.s.appKeys[id]
		c.s.mu.Unlock()
		if key == nil {
			return nil, fmt.Errorf("no key registered for App %d", id)
		}
		appID = id
		return key, nil
	})
	if err != nil {
		return ghError(401, "A JSON web token could not be decoded", doc)
	}
	if claims.ExpiresAt == nil || claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 11*time.Minute {
		return ghError(401, "'Expiration time' claim ('exp') is too far in the future", doc)
	}
	inst, err := strconv.ParseInt(c.p["installation_id"], 10, 64)
	if err != nil || appID != c.s.opts.AppID || inst != c.s.opts.InstallationID {
		return ghError(404, "Not Found", doc)
	}
	c.s.mu.Lock()
	tok, exp := c.s.issueTokenLocked()
	c.s.mu.Unlock()
	return ok(201, map[string]any{
		"token":      tok,
		"expires_at": ts(exp),
		"permissions": map[string]any{
			"contents": "write", "pull_requests": "write", "checks": "read", "statuses": "read", "metadata": "read",
		},
		"repository_selection": "all",
	})
}

func cutScheme(h string) (string, string, bool) {
	for i := 0; i < len(h); i++ {
		if h[i] == ' ' {
			return h[:i], h[i+1:], true
		}
	}
	return h, "", false
}
