package e2e

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
)

// accessChecker checks the default sources through a (no exporter: both are "unavailable"
// when Prometheus answered).
func accessChecker(t *testing.T, a activity.Access) *activity.Checker {
	t.Helper()
	api, err := activity.NewAPI(a)
	if err != nil {
		t.Fatalf("NewAPI: %v", err)
	}
	srcs, err := activity.Compile(activity.DefaultSources())
	if err != nil {
		t.Fatal(err)
	}
	return &activity.Checker{API: api, Sources: srcs, Timeout: 10 * time.Second}
}

// checkOnce runs one check through a.
func checkOnce(t *testing.T, a activity.Access) activity.Result {
	t.Helper()
	return accessChecker(t, a).Check(context.Background(), time.Now(), time.Hour)
}

// answered says whether every source got an answer from Prometheus (ok or unavailable, not an
// error), and the first error's detail.
func answered(r activity.Result) (bool, string) {
	for _, s := range r.Sources {
		if s.Status == activity.StatusError {
			return false, s.Detail
		}
	}
	return true, ""
}

// TestPrometheusTLSAndBasicAuth reaches a real Prometheus serving TLS from a private CA and
// wanting a password (--web.config.file), as --prometheus-ca-file and a user in
// --prometheus-url do; without the CA, or with a wrong password, every source is an error that
// names the cause and never the password.
func TestPrometheusTLSAndBasicAuth(t *testing.T) {
	const password = "pr0m-s3cret"
	prom := promtest.Start(t, promtest.Options{Web: &promtest.Web{TLS: true, BasicAuth: map[string]string{"kustos": password}}})
	u, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	withUser := func(user, pw string) string {
		v := *u
		v.User = url.UserPassword(user, pw)
		return v.String()
	}

	for _, tc := range []struct {
		name   string
		access activity.Access
		detail string // "" when Prometheus must answer
		// status is every source's kustos_activity_queries_total status: "denied" (the
		// credentials alert) only for refused credentials.
		status string
	}{
		{"the CA and the password", activity.Access{URL: withUser("kustos", password), CAFile: prom.CAFile}, "", ""},
		{"no CA", activity.Access{URL: withUser("kustos", password)}, "certificate signed by unknown authority", "error"},
		{"a wrong password", activity.Access{URL: withUser("kustos", "wrong-"+password), CAFile: prom.CAFile}, "Prometheus refused the credentials (401 Unauthorized)", "denied"},
		{"no password", activity.Access{URL: prom.URL, CAFile: prom.CAFile}, "Prometheus refused the credentials (401 Unauthorized)", "denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkOnce(t, tc.access)
			ok, detail := answered(r)
			for _, s := range r.Sources {
				if tc.status != "" && s.QueryStatus() != tc.status {
					t.Errorf("source %s: query status %q, want %q", s.Name, s.QueryStatus(), tc.status)
				}
			}
			if tc.detail == "" {
				if !ok {
					t.Fatalf("a source is an error: %s", detail)
				}
				return
			}
			if ok {
				t.Fatalf("every source answered, want errors (%s)", tc.detail)
			}
			t.Logf("detail: %s", detail)
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q, want it to say %q", detail, tc.detail)
			}
			if strings.Contains(detail, password) {
				t.Errorf("detail %q shows the password", detail)
			}
		})
	}
}

// TestPrometheusBearerToken reaches a real Prometheus behind an authenticating proxy (what
// kube-rbac-proxy or OpenShift's thanos-querier are) with --prometheus-bearer-token-file: the
// token is read for every request, so a rotated token is used at the next check; a refused
// (401) or forbidden (403) query says which; a redirect is not followed, so the token never goes
// where the redirect points.
func TestPrometheusBearerToken(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	upstream, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Value // the token the proxy accepts now
	accepted.Store("token-1")
	var redirect, forbid atomic.Bool
	var elsewhere atomic.Int64 // requests that reached the redirect's target
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "not Prometheus", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	rp := httputil.NewSingleHostReverseProxy(upstream)
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+accepted.Load().(string) {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if forbid.Load() { // kube-rbac-proxy: the token is valid, its identity may not ask
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		if redirect.Load() {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})))
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "token-1\n") // a trailing newline, as `kubectl create secret --from-file` keeps it
	access := activity.Access{URL: proxy.URL, BearerTokenFile: tokenFile, CAFile: caFile}

	if ok, detail := answered(checkOnce(t, access)); !ok {
		t.Fatalf("with the token: %s", detail)
	}

	// The token rotates: the proxy takes only the new one, the file gets it.
	accepted.Store("token-2")
	c := accessChecker(t, access)
	if ok, detail := answered(c.Check(context.Background(), time.Now(), time.Hour)); ok {
		t.Fatal("the proxy took the old token")
	} else if !strings.Contains(detail, "Prometheus refused the credentials (401 Unauthorized)") {
		t.Errorf("the old token: detail %q", detail)
	}
	writeFile(t, tokenFile, "token-2")
	if ok, detail := answered(c.Check(context.Background(), time.Now(), time.Hour)); !ok {
		t.Fatalf("the same client after the rotation: %s", detail)
	}

	forbid.Store(true)
	fr := c.Check(context.Background(), time.Now(), time.Hour)
	if ok, detail := answered(fr); ok || !strings.Contains(detail, "Prometheus denied the query (403 Forbidden)") {
		t.Errorf("a forbidden identity: answered %v, detail %q", ok, detail)
	}
	for _, s := range fr.Sources {
		if s.QueryStatus() != "denied" {
			t.Errorf("a forbidden identity: source %s has query status %q, want denied", s.Name, s.QueryStatus())
		}
	}
	forbid.Store(false)

	redirect.Store(true)
	r := c.Check(context.Background(), time.Now(), time.Hour)
	if ok, _ := answered(r); ok {
		t.Error("a redirect elsewhere counted as Prometheus's answer")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests reached its target", n)
	}
	for _, s := range r.Sources {
		if strings.Contains(s.Detail, "token-2") {
			t.Errorf("detail %q shows the token", s.Detail)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
