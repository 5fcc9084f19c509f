package github

import (
	"encoding/pem"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGitHubCAFile: a GitHub Enterprise Server whose certificate a private CA signs is reached
// with --github-ca-file naming that CA, and refused without it (the certificate is unknown);
// a file without a certificate is a clear error at start.
func TestGitHubCAFile(t *testing.T) {
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"default_branch": "trunk"})
	}))
	t.Cleanup(hs.Close)
	caFile := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})))
	cfg := Config{APIURL: hs.URL + "/api/v3/", TokenFile: writeFile(t, "token", testToken), Repository: "acme/gitops"}
	opts := []Option{WithClock(newFakeClock()), WithMaxRetries(0), WithJitter(noJitter)}

	t.Run("without the CA", func(t *testing.T) {
		c, err := NewClient(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.DefaultBranch(t.Context())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("DefaultBranch = %v; want a certificate error", err)
		}
	})
	t.Run("with the CA", func(t *testing.T) {
		cfg := cfg
		cfg.CAFile = caFile
		c, err := NewClient(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := c.DefaultBranch(t.Context()); err != nil || b != "trunk" {
			t.Fatalf("DefaultBranch = %q, %v; want trunk", b, err)
		}
		bundle, err := cfg.CABundle()
		if err != nil || !strings.Contains(string(bundle), "BEGIN CERTIFICATE") {
			t.Errorf("CABundle = %q, %v", bundle, err)
		}
	})
	t.Run("not a certificate", func(t *testing.T) {
		cfg := cfg
		cfg.CAFile = writeFile(t, "bad.pem", "hello")
		_, err := NewClient(cfg, opts...)
		if err == nil || !strings.Contains(err.Error(), "--github-ca-file") {
			t.Fatalf("NewClient = %v; want an error naming --github-ca-file", err)
		}
		cfg.CAFile = "/nonexistent/ca.pem"
		if _, err = NewClient(cfg, opts...); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("NewClient with a missing file = %v", err)
		}
	})
}
