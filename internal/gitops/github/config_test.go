package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"app ok", Config{AppID: 1, InstallationID: 2, PrivateKeyFile: "/k"}, ""},
		{"token ok", Config{TokenFile: "/t", APIURL: "https://ghe.example.com/api/v3"}, ""},
		{"neither", Config{}, "--github-private-key-file"},
		{"both", Config{AppID: 1, InstallationID: 2, PrivateKeyFile: "/k", TokenFile: "/t"}, "mutually exclusive"},
		{"no app id", Config{InstallationID: 2, PrivateKeyFile: "/k"}, "--github-app-id"},
		{"no installation id", Config{AppID: 1, PrivateKeyFile: "/k"}, "--github-installation-id"},
		{"bad url", Config{TokenFile: "/t", APIURL: "ghe.example.com"}, "--github-api-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestPrivateKeyErrorsNeverContainSecret(t *testing.T) {
	const secret = "TOPSECRETKEYMATERIAL0123456789"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret + secret))
	tests := []struct {
		name, content, want string
	}{
		{"not pem", secret, "no PEM block"},
		{"garbage in pem", "-----BEGIN RSA PRIVATE KEY-----\n" + b64 + "\n-----END RSA PRIVATE KEY-----\n", "not a PKCS#1 or PKCS#8 RSA private key"},
		{"secret in block type", "-----BEGIN " + secret + "-----\n" + b64 + "\n-----END " + secret + "-----\n", "(unrecognised)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "key.pem", tt.content)
			_, err := NewTransport(Config{AppID: 1, InstallationID: 2, PrivateKeyFile: p})
			if err == nil {
				t.Fatal("want error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "--github-private-key-file: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want flag prefix and %q", msg, tt.want)
			}
			for _, s := range []string{secret, b64, b64[:16]} {
				if strings.Contains(msg, s) {
					t.Errorf("error leaks key material: %q", msg)
				}
			}
		})
	}
	_, err := NewTransport(Config{AppID: 1, InstallationID: 2, PrivateKeyFile: "/nonexistent/key.pem"})
	if err == nil || !strings.Contains(err.Error(), "--github-private-key-file: cannot read /nonexistent/key.pem") {
		t.Errorf("missing file: %v", err)
	}
}

func TestTokenFileErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"empty", "  \n", "is empty"},
		{"several words", "ghp_secretvalue another", "single token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTransport(Config{TokenFile: writeFile(t, "token", tt.content)})
			if err == nil || !strings.HasPrefix(err.Error(), "--github-token-file: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "ghp_secretvalue") {
				t.Fatalf("error leaks token: %v", err)
			}
		})
	}
}

func TestTokenFileIsReReadWhenRotated(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"default_branch":"main"}`))
	}))
	defer srv.Close()
	p := writeFile(t, "token", "token-one\n")
	rt, err := NewTransport(Config{TokenFile: p})
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/repos/o/r", http.NoBody)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	get()
	if err := os.WriteFile(p, []byte("token-two-rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	get()
	want := []string{"Bearer token-one", "Bearer token-one", "Bearer token-two-rotated"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("Authorization headers %v, want %v", seen, want)
	}
}

// TestAppCredentialsUseAPIURL checks that both the installation-token exchange and the API
// calls go to --github-api-url (GitHub Enterprise / tests), with the installation token.
func TestAppCredentialsUseAPIURL(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	var exchanges int
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/app/installations/42/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		exchanges++
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			t.Errorf("token exchange without JWT: %q", r.Header.Get("Authorization"))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"token": "ghs_installation", "expires_at": time.Now().Add(time.Hour)})
	})
	mux.HandleFunc("GET /api/v3/repos/acme/gitops", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "token ghs_installation" {
			t.Errorf("Authorization %q", got)
		}
		_, _ = w.Write([]byte(`{"default_branch":"trunk"}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := NewClient(Config{
		APIURL: srv.URL + "/api/v3", AppID: 7, InstallationID: 42,
		PrivateKeyFile: writeFile(t, "key.pem", string(pemKey)), Repository: "acme/gitops",
	}, WithCacheEntries(0))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b, err := c.DefaultBranch(context.Background())
		if err != nil || b != "trunk" {
			t.Fatalf("DefaultBranch = %q, %v", b, err)
		}
	}
	if exchanges != 1 {
		t.Errorf("token exchanges = %d, want 1 (token cached)", exchanges)
	}
}

func TestNewClientRepository(t *testing.T) {
	for _, repo := range []string{"", "acme", "acme/", "/x", "a/b/c"} {
		_, err := NewClient(Config{TokenFile: "/t", Repository: repo})
		if err == nil || !strings.Contains(err.Error(), "--git-repo") {
			t.Errorf("repo %q: error %v", repo, err)
		}
	}
}
