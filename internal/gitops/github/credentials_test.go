package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

const (
	testAppID          = 7
	testInstallationID = 42
	tokenEndpoint      = "/app/installations/{installation_id}/access_tokens"
)

// appServer starts the GitHub-compatible server with App testAppID installed as
// testInstallationID and acme/gitops seeded; it returns the server, the App's key and the path
// of its PEM file.
func appServer(t *testing.T, opts githubtest.Options) (*githubtest.Server, *rsa.PrivateKey, string) {
	t.Helper()
	key, pemKey := githubtest.NewAppKey(t)
	opts.AppID, opts.InstallationID, opts.AppKey = testAppID, testInstallationID, &key.PublicKey
	s := githubtest.New(t, opts)
	s.SeedRepo("acme", "gitops", "main", map[string]string{"a.yaml": "a: 1\n"})
	return s, key, writeFile(t, "app.pem", string(pemKey))
}

func appConfig(s *githubtest.Server, keyFile string) Config {
	return Config{APIURL: s.URL(), AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: keyFile, Repository: "acme/gitops"}
}

// TestCheckCredentials: each wrong setting fails the start-up check with ErrCredentials and a
// message naming its flag; right settings pass.
func TestCheckCredentials(t *testing.T) {
	_, otherPEM := githubtest.NewAppKey(t)
	tests := []struct {
		name     string
		opts     githubtest.Options
		change   func(c *Config, s *githubtest.Server)
		wantFlag string // "" = no error
		wantMsg  string
	}{
		{"app: right settings", githubtest.Options{}, nil, "", ""},
		{"app: wrong installation ID", githubtest.Options{}, func(c *Config, _ *githubtest.Server) { c.InstallationID = 43 }, "--github-installation-id", "HTTP 404"},
		{"app: wrong App ID", githubtest.Options{}, func(c *Config, _ *githubtest.Server) { c.AppID = 8 }, "--github-app-id", "HTTP 401"},
		{"app: key of another App", githubtest.Options{}, func(c *Config, _ *githubtest.Server) {
			c.PrivateKeyFile = writeFile(t, "other.pem", string(otherPEM))
		}, "--github-private-key-file", "HTTP 401"},
		{"app: repository does not exist", githubtest.Options{}, func(c *Config, _ *githubtest.Server) { c.Repository = "acme/nothing" }, "--git-repo", "not accessible to installation 42"},
		{"app: repository not in the installation", githubtest.Options{InstallationRepositories: []string{"acme/other"}}, nil, "--git-repo", "not accessible to installation 42"},
		{"app: installation lacks issues: write", githubtest.Options{AppPermissions: map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"}}, nil,
			"", "lacks a permission Kustos asks for (contents: write, pull_requests: write, issues: write, metadata: read)"},
		{"token: right token", githubtest.Options{}, func(c *Config, s *githubtest.Server) {
			*c = Config{APIURL: s.URL(), TokenFile: writeFile(t, "token", s.Token()), Repository: "acme/gitops"}
		}, "", ""},
		{"token: unknown token", githubtest.Options{}, func(c *Config, s *githubtest.Server) {
			*c = Config{APIURL: s.URL(), TokenFile: writeFile(t, "token", "ghs_notIssuedByTheServer"), Repository: "acme/gitops"}
		}, "--github-token-file", "Bad credentials"},
		{"token: repository does not exist", githubtest.Options{}, func(c *Config, s *githubtest.Server) {
			*c = Config{APIURL: s.URL(), TokenFile: writeFile(t, "token", s.Token()), Repository: "acme/nothing"}
		}, "--git-repo", "acme/nothing does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, keyFile := appServer(t, tt.opts)
			cfg := appConfig(s, keyFile)
			if tt.change != nil {
				tt.change(&cfg, s)
			}
			c, err := NewClient(cfg, WithClock(newFakeClock()), WithJitter(noJitter))
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckCredentials(context.Background())
			if tt.wantFlag == "" && tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("CheckCredentials = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrCredentials) || errors.Is(err, ErrUnavailable) {
				t.Fatalf("CheckCredentials = %v, want ErrCredentials (and not ErrUnavailable)", err)
			}
			if !strings.Contains(err.Error(), tt.wantFlag) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("CheckCredentials = %q, want it to name %q and say %q", err, tt.wantFlag, tt.wantMsg)
			}
			if strings.Contains(err.Error(), s.Token()) || strings.Contains(err.Error(), "BEGIN") {
				t.Errorf("error leaks a credential: %v", err)
			}
		})
	}
}

// TestWrongInstallationIsNotRetriedInALoop: a wrong installation ID is a configuration error
// on every call (never "github unavailable"), and callers retrying it in a tight loop send the
// token exchange once per DefaultCredentialRecheck, not once per call.
func TestWrongInstallationIsNotRetriedInALoop(t *testing.T) {
	s, _, keyFile := appServer(t, githubtest.Options{})
	cfg := appConfig(s, keyFile)
	cfg.InstallationID = 4242
	clk := newFakeClock()
	c, err := NewClient(cfg, WithClock(clk), WithJitter(noJitter))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := c.DefaultBranch(ctx); return err },
		func() error { _, err := c.GitToken(ctx); return err },
		func() error { _, err := c.FindOpenPR(ctx, "kustos/x"); return err },
		func() error {
			_, err := c.CreateRef(ctx, "kustos/x", "0123456789012345678901234567890123456789")
			return err
		},
	}
	for round := range 3 {
		for i := range 20 {
			err := calls[i%len(calls)]()
			if !errors.Is(err, ErrCredentials) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "--github-installation-id") {
				t.Fatalf("round %d call %d: err = %v, want ErrCredentials naming --github-installation-id", round, i, err)
			}
		}
		if got := s.CountRequests("POST", tokenEndpoint); got != round+1 {
			t.Fatalf("after round %d: %d token requests, want %d (one per recheck interval)", round, got, round+1)
		}
		if n := s.CountRequests("", "") - s.CountRequests("POST", tokenEndpoint); n != 0 {
			t.Fatalf("%d REST calls sent without a token", n)
		}
		_ = clk.Sleep(ctx, DefaultCredentialRecheck) // the next round is after the recheck interval
	}
}

// TestInstallationTokenIsNarrowed: the App asks for a token for the one repository with the
// permissions the client uses, and that token cannot reach another repository.
func TestInstallationTokenIsNarrowed(t *testing.T) {
	s, _, keyFile := appServer(t, githubtest.Options{})
	s.SeedRepo("acme", "other", "main", map[string]string{"b.yaml": "b: 1\n"})
	c, err := NewClient(appConfig(s, keyFile), WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.CheckCredentials(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := s.TokenRequests()
	if len(reqs) != 1 {
		t.Fatalf("token requests %+v, want 1", reqs)
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "metadata": "read"}
	if !reflect.DeepEqual(reqs[0].Repositories, []string{"gitops"}) || len(reqs[0].RepositoryIDs) != 0 ||
		!reflect.DeepEqual(reqs[0].Permissions, want) || !reflect.DeepEqual(TokenPermissions(), want) {
		t.Errorf("token request %+v, want repositories [gitops] and permissions %v", reqs[0], want)
	}
	other, err := NewClient(Config{APIURL: s.URL(), TokenFile: writeFile(t, "tok", mustToken(t, c)), Repository: "acme/other"}, WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.DefaultBranch(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("the narrowed token reads acme/other: err = %v, want ErrNotFound", err)
	}
}

func mustToken(t *testing.T, c *Client) string {
	t.Helper()
	tok, err := c.GitToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestGitTokenSharesTheClientsTransport: the Git token is the installation token of the REST
// calls (one exchange for both), the exchange is counted in the client's metrics, and the
// token clones the repository.
func TestGitTokenSharesTheClientsTransport(t *testing.T) {
	s, _, keyFile := appServer(t, githubtest.Options{})
	c, err := NewClient(appConfig(s, keyFile), WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	before := counterValue(t, "/app/installations/:number/access_tokens", "POST", "201")
	ctx := context.Background()
	if _, err := c.DefaultBranch(ctx); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, c)
	if n := s.CountRequests("POST", tokenEndpoint); n != 1 {
		t.Errorf("%d token exchanges for REST and Git, want 1", n)
	}
	if d := counterValue(t, "/app/installations/:number/access_tokens", "POST", "201") - before; d != 1 {
		t.Errorf("kustos_github_api_calls_total of the token exchange grew by %v, want 1", d)
	}
	if _, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: s.GitURL("acme", "gitops"), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: tok},
	}); err != nil {
		t.Fatalf("clone with GitToken: %v", err)
	}
}

// TestTokenFileGitToken: with a token file, GitToken is the file's token, and an emptied file
// is a configuration error.
func TestTokenFileGitToken(t *testing.T) {
	c, _ := newTestClient(t, http.NotFoundHandler())
	if tok := mustToken(t, c); tok != testToken {
		t.Fatalf("GitToken = %q", tok)
	}
	f := writeFile(t, "token", "x")
	c2, err := NewClient(Config{APIURL: "http://127.0.0.1:1/", TokenFile: f, Repository: "acme/gitops"})
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := osWriteFileTime(f, "  \n", future); err != nil {
		t.Fatal(err)
	}
	_, err = c2.GitToken(context.Background())
	if !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "--github-token-file") {
		t.Fatalf("GitToken with an empty token file: %v, want ErrCredentials naming --github-token-file", err)
	}
	_, err = c2.DefaultBranch(context.Background())
	if !errors.Is(err, ErrCredentials) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("REST call with an empty token file: %v, want ErrCredentials", err)
	}
}

// TestCheckCredentialsReadOnlyToken: a token that may read but not push the repository fails
// the start-up check, naming --github-token-file.
func TestCheckCredentialsReadOnlyToken(t *testing.T) {
	tests := []struct {
		name    string
		perms   map[string]bool
		wantErr bool
	}{
		{"read-only token", map[string]bool{"pull": true, "push": false}, true},
		{"token that may push", map[string]bool{"pull": true, "push": true}, false},
		{"no permissions in the answer", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{"default_branch": "main", "permissions": tt.perms})
			}))
			err := c.CheckCredentials(context.Background())
			if tt.wantErr != (err != nil) {
				t.Fatalf("CheckCredentials = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "--github-token-file") || !strings.Contains(err.Error(), "not push")) {
				t.Errorf("CheckCredentials = %v, want ErrCredentials naming --github-token-file", err)
			}
		})
	}
}
