package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// DefaultAppPermissions are the permissions of the test App's installation when
// Options.AppPermissions is nil.
var DefaultAppPermissions = map[string]string{
	"contents": "write", "pull_requests": "write", "issues": "write",
	"checks": "read", "statuses": "read", "metadata": "read",
}

// TokenRequest is what one call of the installation-token exchange asked for.
type TokenRequest struct {
	InstallationID int64
	// Status is the server's answer (201 when a token was issued).
	Status int
	// Repositories and RepositoryIDs narrow the token to those repositories (names without
	// the owner); both empty: every repository of the installation.
	Repositories  []string
	RepositoryIDs []int64
	// Permissions narrow the token's permissions (e.g. "contents": "write"); nil: all of
	// the installation's.
	Permissions map[string]string
}

// TokenRequests returns the installation-token requests the server received, oldest first.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]TokenRequest(nil), s.tokenRequests...)
}

// grant is what an issued token may do. repos nil: every repository of the installation.
type grant struct {
	expires time.Time
	repos   map[string]bool // "owner/name"
	perms   map[string]string
}

// may reports whether the grant holds permission at level ("read" or "write").
func (g *grant) may(permission, level string) bool {
	have := g.perms[permission]
	return have == "write" || (have == "read" && level == "read")
}

func (c *call) createAccessToken() reply {
	const doc = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	inst, _ := strconv.ParseInt(c.p["installation_id"], 10, 64)
	var in struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if len(c.body) > 0 && strings.TrimSpace(string(c.body)) != "null" {
		if err := json.Unmarshal(c.body, &in); err != nil {
			return badJSON(err)
		}
	}
	res := c.issueAccessToken(doc, inst, in.Repositories, in.RepositoryIDs, in.Permissions)
	c.s.mu.Lock()
	c.s.tokenRequests = append(c.s.tokenRequests, TokenRequest{
		InstallationID: inst, Status: res.status, Repositories: in.Repositories,
		RepositoryIDs: in.RepositoryIDs, Permissions: in.Permissions,
	})
	c.s.mu.Unlock()
	return res
}

func (c *call) issueAccessToken(doc string, inst int64, repoNames []string, repoIDs []int64, perms map[string]string) reply {
	_, raw, _ := strings.Cut(c.r.Header.Get("Authorization"), " ")
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
	if appID != c.s.opts.AppID || inst != c.s.opts.InstallationID {
		return ghError(404, "Not Found", doc)
	}

	installed := c.s.installationPermissions()
	g := &grant{perms: installed}
	if perms != nil {
		g.perms = map[string]string{"metadata": "read"} // GitHub always grants metadata: read
		for p, level := range perms {
			if level != "read" && level != "write" {
				return validationFailed(doc, map[string]any{"resource": "Integration", "field": "permissions", "code": "invalid"})
			}
			if have := installed[p]; have != "write" && (have != "read" || level != "read") {
				return ghError(422, "The permissions requested are not granted to this installation.", doc)
			}
			g.perms[p] = level
		}
	}
	var repos []*repo
	if len(repoNames) > 0 || len(repoIDs) > 0 {
		g.repos = map[string]bool{}
		for _, n := range repoNames {
			r := c.s.installedRepo(func(r *repo) bool { return r.name == n })
			if r == nil {
				return ghError(422, "There is at least one repository that does not exist or is not accessible to the parent installation.", doc)
			}
			repos = append(repos, r)
		}
		for _, id := range repoIDs {
			r := c.s.installedRepo(func(r *repo) bool { return r.id == id })
			if r == nil {
				return ghError(422, "There is at least one repository that does not exist or is not accessible to the parent installation.", doc)
			}
			repos = append(repos, r)
		}
		for _, r := range repos {
			g.repos[r.owner+"/"+r.name] = true
		}
	}

	c.s.mu.Lock()
	tok, exp := c.s.issueTokenLocked(g)
	c.s.mu.Unlock()
	out := map[string]any{
		"token":                tok,
		"expires_at":           ts(exp),
		"permissions":          g.perms,
		"repository_selection": "all",
	}
	if g.repos != nil {
		out["repository_selection"] = "selected"
		list := []any{}
		for _, r := range repos {
			list = append(list, c.s.repoJSON(r, false))
		}
		out["repositories"] = list
	}
	return ok(201, out)
}

// installationPermissions returns a copy of the permissions the installation was granted.
func (s *Server) installationPermissions() map[string]string {
	src := s.opts.AppPermissions
	if src == nil {
		src = DefaultAppPermissions
	}
	out := make(map[string]string, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}

// installedRepo returns the first seeded repository the installation can access that match
// accepts.
func (s *Server) installedRepo(match func(*repo) bool) *repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.repos))
	for k := range s.repos {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := s.repos[k]
		if s.opts.InstallationRepositories != nil && !contains(s.opts.InstallationRepositories, k) {
			continue
		}
		if match(r) {
			return r
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
