package github

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultAPIURL is the API root of github.com.
const DefaultAPIURL = "https://api.github.com/"

// Config says how to reach and authenticate to GitHub. Exactly one of PrivateKeyFile (GitHub App)
// or TokenFile must be set. The field comments name the command-line flags, which also appear in
// error messages so that an operator knows what to fix.
type Config struct {
	// APIURL is the REST API root (--github-api-url). Default https://api.github.com/;
	// GitHub Enterprise Server: https://HOST/api/v3/. Tests point it at a local server.
	APIURL string
	// AppID is the GitHub App ID (--github-app-id).
	AppID int64
	// InstallationID is the App's installation ID (--github-installation-id).
	InstallationID int64
	// PrivateKeyFile is the App's PEM private key, mounted from a Secret (--github-private-key-file).
	PrivateKeyFile string
	// TokenFile holds a token instead of App credentials (--github-token-file). It is re-read
	// whenever the file changes (a rotated Secret).
	TokenFile string
	// Repository is "owner/name" (--git-repo). Needed by NewClient, not by NewTransport.
	Repository string
	// CAFile is --github-ca-file: PEM certificates of the private CA that signs a GitHub
	// Enterprise Server's certificate, trusted besides the system's (NewClient only; see
	// CABundle for the Git clones). Empty: the system's CAs only.
	CAFile string
}

// apiURL returns the normalised API root with a trailing slash.
func (c Config) apiURL() (*url.URL, error) {
	raw := c.APIURL
	if raw == "" {
		raw = DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--github-api-url: %q is not an absolute http(s) URL", raw)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// Validate checks the configuration without reading any file.
func (c Config) Validate() error {
	if _, err := c.apiURL(); err != nil {
		return err
	}
	switch {
	case c.PrivateKeyFile != "" && c.TokenFile != "":
		return errors.New("--github-private-key-file and --github-token-file are mutually exclusive: set one")
	case c.PrivateKeyFile == "" && c.TokenFile == "":
		return errors.New("no GitHub credentials: set --github-private-key-file (with --github-app-id and --github-installation-id) or --github-token-file")
	case c.PrivateKeyFile != "":
		if c.AppID <= 0 {
			return errors.New("--github-app-id: required (a positive number) with --github-private-key-file")
		}
		if c.InstallationID <= 0 {
			return errors.New("--github-installation-id: required (a positive number) with --github-private-key-file")
		}
	}
	return nil
}

// identity is a stable, non-secret name for the credentials, used to key the ETag cache.
func (c Config) identity() string {
	if c.PrivateKeyFile != "" {
		return fmt.Sprintf("app/%d/installation/%d", c.AppID, c.InstallationID)
	}
	sum := sha256.Sum256([]byte(c.TokenFile))
	return "token-file/" + hex.EncodeToString(sum[:8])
}

// NewTransport returns a RoundTripper that authenticates every request with cfg's credentials
// and sends it through http.DefaultTransport. NewClient puts the resilience chain underneath
// it; use NewTransportWithBase for that composition yourself.
func NewTransport(cfg Config) (http.RoundTripper, error) {
	return NewTransportWithBase(cfg, nil)
}

// NewTransportWithBase is NewTransport sending through base (nil: http.DefaultTransport).
// GitHub App installation tokens are narrowed to cfg.Repository (when set) and to
// TokenPermissions; a refusal of the App's credentials is a *CredentialsError.
func NewTransportWithBase(cfg Config, base http.RoundTripper) (http.RoundTripper, error) {
	return newCredentials(cfg, base, realClock{}, DefaultCredentialRecheck)
}

// loadPrivateKey reads and parses an RSA key. Its errors describe the problem without ever
// quoting the file's contents or the parser's view of them.
func loadPrivateKey(path string) (*rsa.PrivateKey, error) {
	const flag = "--github-private-key-file"
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: cannot read %s: %w", flag, path, pe.Err)
		}
		return nil, fmt.Errorf("%s: cannot read %s", flag, path)
	}
	block, _ := pem.Decode(bytes.TrimSpace(data))
	if block == nil {
		return nil, fmt.Errorf("%s: %s holds no PEM block (expected the .pem file GitHub generated for the App)", flag, path)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return rk, nil
		}
		return nil, fmt.Errorf("%s: %s holds a PKCS#8 key that is not RSA (GitHub Apps use RSA keys)", flag, path)
	}
	return nil, fmt.Errorf("%s: %s: PEM block of type %q is not a PKCS#1 or PKCS#8 RSA private key", flag, path, safeBlockType(block.Type))
}

// safeBlockType keeps only a short, printable PEM type so a malformed file cannot smuggle
// content into an error.
func safeBlockType(t string) string {
	if len(t) > 40 {
		return "(unrecognised)"
	}
	for _, r := range t {
		if (r < 'A' || r > 'Z') && r != ' ' {
			return "(unrecognised)"
		}
	}
	return t
}

// tokenFileTransport adds "Authorization: Bearer <token>" from a file it re-reads whenever
// the file's size or modification time changes (Kubernetes swaps Secret volumes atomically).
type tokenFileTransport struct {
	path string
	next http.RoundTripper

	mu      sync.Mutex
	modTime time.Time
	size    int64
	cached  string
}

func (t *tokenFileTransport) token() (string, error) {
	const flag = "--github-token-file"
	fi, err := os.Stat(t.path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s: cannot read %s: %w", flag, t.path, pe.Err)
		}
		return "", fmt.Errorf("%s: cannot read %s", flag, t.path)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cached != "" && fi.ModTime().Equal(t.modTime) && fi.Size() == t.size {
		return t.cached, nil
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read %s", flag, t.path)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s: %s is empty", flag, t.path)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s: %s must hold a single token (it holds several words or lines)", flag, t.path)
	}
	t.cached, t.modTime, t.size = tok, fi.ModTime(), fi.Size()
	return tok, nil
}

// Token returns the file's token; an unusable file is a *CredentialsError.
func (t *tokenFileTransport) Token(context.Context) (string, error) {
	tok, err := t.token()
	if err != nil {
		return "", &CredentialsError{Hint: err.Error()}
	}
	return tok, nil
}

func (t *tokenFileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.Token(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.next.RoundTrip(r)
}
