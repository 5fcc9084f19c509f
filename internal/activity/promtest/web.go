package promtest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// Web secures the server as Prometheus's --web.config.file does, for tests of how Kustos
// reaches a Prometheus that wants TLS or a password.
type Web struct {
	// TLS serves https with a self-signed certificate for 127.0.0.1: Server.CAFile is the
	// PEM a client must trust.
	TLS bool
	// BasicAuth are users and their passwords, every request (/-/ready too) must give one.
	BasicAuth map[string]string
}

// writeWebConfig writes dir/web.yml for w and returns its path, and the CA file (TLS only).
func writeWebConfig(t TB, dir string, w *Web) (path, caFile string) {
	t.Helper()
	cfg := map[string]any{}
	if w.TLS {
		cert, key, err := testenv.SelfSignedCert(dir, "promtest")
		if err != nil {
			t.Fatalf("promtest: %v", err)
		}
		cfg["tls_server_config"] = map[string]string{"cert_file": cert, "key_file": key}
		caFile = cert
	}
	if len(w.BasicAuth) > 0 {
		users := map[string]string{}
		for u, p := range w.BasicAuth {
			// Prometheus keeps only bcrypt hashes; the lowest cost keeps the test quick.
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				t.Fatalf("promtest: %v", err)
			}
			users[u] = string(h)
		}
		cfg["basic_auth_users"] = users
	}
	b, err := json.Marshal(cfg) // YAML is a superset of JSON
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	path = filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("promtest: %v", err)
	}
	return path, caFile
}

// webClient is the HTTP client the helpers' own requests (readiness, Server.API) use: it
// trusts caFile and gives one of the BasicAuth users (any will do).
func webClient(t TB, w *Web, caFile string) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatalf("promtest: %v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	for u, p := range w.BasicAuth {
		rt = basicAuth{user: u, password: p, next: tr}
		break
	}
	return &http.Client{Transport: rt}
}

type basicAuth struct {
	user, password string
	next           http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}
