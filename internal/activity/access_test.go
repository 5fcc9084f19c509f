package activity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAccessValidate(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		access Access
		want   string // "" when valid
	}{
		{"a plain URL", Access{URL: "http://prometheus:9090"}, ""},
		{"https, a CA, a token", Access{URL: "https://prometheus:9090", CAFile: "/ca.crt", BearerTokenFile: token}, ""},
		{"basic auth in the URL", Access{URL: "https://kustos:pw@prometheus:9090"}, ""},
		{"no URL", Access{}, "--prometheus-url is required"},
		{"not http", Access{URL: "ftp://prometheus"}, "want an http or https URL"},
		{"no host", Access{URL: "http:///api"}, "want an http or https URL"},
		{"a bad URL hides its password", Access{URL: "ftp://kustos:pw-secret@prometheus"}, "://***@prometheus"},
		{"a CA for http", Access{URL: "http://prometheus:9090", CAFile: "/ca.crt"}, "is not https"},
		{"a token and a user", Access{URL: "https://kustos:pw@prometheus:9090", BearerTokenFile: token}, "give one"},
		{"a missing token file", Access{URL: "https://prometheus:9090", BearerTokenFile: filepath.Join(dir, "nope")}, "no such file"},
		{"an empty token file", Access{URL: "https://prometheus:9090", BearerTokenFile: empty}, "the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.access.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "s3cret-token") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// TestNewAPIBadCA: a CA file that is not there, or holds no certificate, is refused at start
// and named.
func TestNewAPIBadCA(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{notPEM, filepath.Join(t.TempDir(), "missing.crt")} {
		_, err := NewAPI(Access{URL: "https://prometheus:9090", CAFile: ca})
		if err == nil || !strings.Contains(err.Error(), "--prometheus-ca-file="+ca) {
			t.Errorf("NewAPI with CA %s = %v, want an error naming it", ca, err)
		}
	}
}
