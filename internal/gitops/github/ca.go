package github

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// CABundle reads --github-ca-file: PEM certificates that sign the GitHub Enterprise Server's
// certificate (a private CA), trusted besides the system's; nil without the flag. The Git
// clones of the base branch trust the same bundle.
func (c Config) CABundle() ([]byte, error) {
	if c.CAFile == "" {
		return nil, nil
	}
	pemData, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--github-ca-file: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("--github-ca-file=%s: no PEM certificate in it", c.CAFile)
	}
	return pemData, nil
}

// caTransport is http.DefaultTransport trusting bundle besides the system's CAs.
func caTransport(bundle []byte) http.RoundTripper {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool() // no system pool (a scratch image without CA certificates)
	}
	pool.AppendCertsFromPEM(bundle)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t
}
