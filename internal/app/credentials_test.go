package app

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/actuate/group"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// TestStartupCredentialCheck: PR mode refuses to start with credentials GitHub rejects, and
// says which flag to fix.
func TestStartupCredentialCheck(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := githubtest.New(t, githubtest.Options{AppID: 11, InstallationID: 22, AppKey: &key.PublicKey})
	s.SeedRepo("acme", "gitops", "main", map[string]string{"README.md": "# GitOps\n"})

	cases := []struct {
		name             string
		app, inst        int64
		repo             string
		wantErr, wantNot string
	}{
		{"right credentials", 11, 22, "acme/gitops", "", ""},
		{"wrong installation", 11, 23, "acme/gitops", "--github-installation-id", ""},
		{"wrong app id", 12, 22, "acme/gitops", "--github-app-id", ""},
		{"wrong repository", 11, 22, "acme/other", "--git-repo", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := validPR()
			o.PR.GitHub = github.Config{APIURL: s.URL(), AppID: tc.app, InstallationID: tc.inst, PrivateKeyFile: keyFile, Repository: tc.repo}
			m, err := group.NewMode(o.PR, o.Now, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			err = m.CheckCredentials(t.Context(), logr.Discard())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("check failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("check = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
