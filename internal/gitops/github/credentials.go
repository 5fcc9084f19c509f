package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"
)

// DefaultCredentialRecheck is how long a rejection of the App's credentials by the token
// endpoint is remembered: within it, every request that needs an installation token fails at
// once with the same *CredentialsError instead of asking GitHub again.
const DefaultCredentialRecheck = time.Minute

// CredentialsError says that GitHub refused the configured credentials and which setting is
// likely wrong. It is a configuration fault: retrying without changing the configuration cannot
// succeed, so the client does not retry it and remembers it for DefaultCredentialRecheck.
// errors.Is(err, ErrCredentials) is true. It never contains a key, JWT or token.
type CredentialsError struct {
	// StatusCode is GitHub's answer (0 when no request was made, e.g. an unreadable token
	// file).
	StatusCode int
	// GitHubMessage is GitHub's message, e.g. "Not Found" or "A JSON web token could not be
	// decoded".
	GitHubMessage string
	// Hint names what is likely wrong and the flags that set it.
	Hint string
}

func (e *CredentialsError) Error() string {
	var b strings.Builder
	b.WriteString(ErrCredentials.Error())
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	b.WriteString(": " + e.detail())
	return b.String()
}

// detail is the hint and GitHub's message, without the class and status.
func (e *CredentialsError) detail() string {
	if e.GitHubMessage == "" {
		return e.Hint
	}
	return fmt.Sprintf("%s (GitHub: %q)", e.Hint, e.GitHubMessage)
}

// Is makes errors.Is(err, ErrCredentials) hold.
func (e *CredentialsError) Is(target error) bool { return target == ErrCredentials }

// tokenPermissions are the permissions Kustos asks for in its installation tokens: those the
// Client's calls need and no more.
//
//   - contents: write — Git refs, commits, trees, blobs and contents; the Git clone of the base
//     branch; merging a pull request; updating a pull request's branch.
//   - pull_requests: write — listing, opening, reading, editing, closing, merging and updating
//     pull requests.
//   - issues: write — AddLabels (labels live on the issue behind a pull request; adding an
//     unknown label creates it) and the comment ClosePR leaves.
//   - metadata: read — reading the repository (its default branch); GitHub grants it to every
//     token anyway.
//
// Checks and statuses are not requested: the client reads a pull request's mergeable_state,
// which GitHub computes from them, and calls neither API.
func tokenPermissions() *gh.InstallationPermissions {
	return &gh.InstallationPermissions{
		Contents:     gh.String("write"),
		PullRequests: gh.String("write"),
		Issues:       gh.String("write"),
		Metadata:     gh.String("read"),
	}
}

// TokenPermissions returns the permissions of the installation tokens Kustos requests, by
// GitHub's permission name (e.g. "contents": "write"), for documentation and tests.
func TokenPermissions() map[string]string {
	p := tokenPermissions()
	return map[string]string{
		"contents": p.GetContents(), "pull_requests": p.GetPullRequests(),
		"issues": p.GetIssues(), "metadata": p.GetMetadata(),
	}
}

// credentials authenticates requests and yields the token that Git over HTTPS uses.
type credentials interface {
	http.RoundTripper
	Token(ctx context.Context) (string, error)
}

// newCredentials builds cfg's credentials over base. For a GitHub App, the installation
// tokens are narrowed to cfg.Repository (when set) and tokenPermissions, and the token
// exchange goes through a tokenGate (then base), like every other request.
func newCredentials(cfg Config, base http.RoundTripper, clock Clock, recheck time.Duration) (credentials, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	api, _ := cfg.apiURL()
	if cfg.TokenFile != "" {
		t := &tokenFileTransport{path: cfg.TokenFile, next: base}
		if _, err := t.token(); err != nil { // fail fast at start-up
			return nil, err
		}
		return t, nil
	}
	key, err := loadPrivateKey(cfg.PrivateKeyFile)
	if err != nil {
		return nil, err
	}
	_, repo, _ := strings.Cut(cfg.Repository, "/")
	gate := &tokenGate{next: base, clock: clock, recheck: recheck, appID: cfg.AppID, installationID: cfg.InstallationID, repo: cfg.Repository}
	atr := ghinstallation.NewAppsTransportFromPrivateKey(gate, cfg.AppID, key)
	atr.BaseURL = strings.TrimSuffix(api.String(), "/")
	itr := ghinstallation.NewFromAppsTransport(atr, cfg.InstallationID)
	itr.BaseURL = atr.BaseURL
	opts := &gh.InstallationTokenOptions{Permissions: tokenPermissions()}
	if repo != "" {
		opts.Repositories = []string{repo}
	}
	itr.InstallationTokenOptions = opts
	return itr, nil
}

// tokenGate watches the App's installation-token exchange (other requests pass through).
// A refusal that no retry can fix (401, 403 that is not a rate limit, 404, 422) becomes a
// *CredentialsError naming the likely wrong flag, and is remembered for recheck so that a
// caller retrying in a loop does not send the exchange again and again. Any other non-2xx
// answer becomes go-github's typed error (so classify sees rate limits and 5xx), with its
// body closed: ghinstallation leaves the body of a failed exchange open.
type tokenGate struct {
	next           http.RoundTripper
	clock          Clock
	recheck        time.Duration
	appID          int64
	installationID int64
	repo           string

	mu       sync.Mutex
	rejected *CredentialsError
	until    time.Time
}

func (g *tokenGate) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isTokenExchange(req) {
		return g.next.RoundTrip(req)
	}
	g.mu.Lock()
	rejected, until := g.rejected, g.until
	g.mu.Unlock()
	if rejected != nil && g.clock.Now().Before(until) {
		closeBody(req)
		return nil, rejected
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		g.mu.Lock()
		g.rejected = nil
		g.mu.Unlock()
		return resp, nil
	}
	defer drain(resp)
	if resp.StatusCode == http.StatusTooManyRequests || resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != "" {
		// A rate limit the retry layer gave up waiting for.
		return nil, g.rateLimit(resp)
	}
	cerr := gh.CheckResponse(resp)
	var er *gh.ErrorResponse
	if !errors.As(cerr, &er) { // a rate limit: classify knows when to retry
		return nil, cerr
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
	default:
		return nil, cerr
	}
	ce := &CredentialsError{StatusCode: resp.StatusCode, GitHubMessage: truncate(errorMessage(er), 300), Hint: g.hint(resp.StatusCode, errorMessage(er))}
	g.mu.Lock()
	g.rejected, g.until = ce, g.clock.Now().Add(g.recheck)
	g.mu.Unlock()
	return nil, ce
}

// rateLimit is the *RateLimitError of a rate-limited token exchange.
func (g *tokenGate) rateLimit(resp *http.Response) *RateLimitError {
	now := g.clock.Now()
	if sec, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return &RateLimitError{Reset: time.Unix(sec, 0), Resource: resp.Header.Get("X-RateLimit-Resource")}
	}
	d, ok := retryAfter(resp.Header, now)
	if !ok {
		d = DefaultSecondaryRetryAfter
	}
	return &RateLimitError{Reset: now.Add(d), Secondary: true}
}

// hint names the setting GitHub's refusal of the token exchange most likely points at.
func (g *tokenGate) hint(code int, msg string) string {
	switch code {
	case http.StatusNotFound:
		return fmt.Sprintf("GitHub App %d has no installation %d: check --github-installation-id (the number at the end of the installation's settings URL) and that the App is installed on the account that owns %s",
			g.appID, g.installationID, g.repoOrDefault())
	case http.StatusUnauthorized:
		return fmt.Sprintf("GitHub did not accept the App's signed JWT: check --github-app-id (%d) and --github-private-key-file (it must hold a current private key of that App)", g.appID)
	case http.StatusForbidden:
		return fmt.Sprintf("GitHub refused installation %d a token (the installation or the App may be suspended): check --github-installation-id and the installation's settings", g.installationID)
	}
	lm := strings.ToLower(msg)
	switch {
	case strings.Contains(lm, "permission"):
		return fmt.Sprintf("installation %d lacks a permission Kustos asks for (%s): grant it in the App's settings and accept it on the installation", g.installationID, permissionList())
	case strings.Contains(lm, "repositor"):
		return fmt.Sprintf("repository %s is not accessible to installation %d: check --git-repo and that the installation includes the repository", g.repoOrDefault(), g.installationID)
	}
	return fmt.Sprintf("GitHub refused the token request of installation %d for %s: check --git-repo, --github-installation-id and the App's permissions (%s)", g.installationID, g.repoOrDefault(), permissionList())
}

func (g *tokenGate) repoOrDefault() string {
	if g.repo == "" {
		return "the repository"
	}
	return g.repo
}

// permissionList is TokenPermissions as "contents: write, issues: write, ...".
func permissionList() string {
	p := TokenPermissions()
	names := []string{"contents", "pull_requests", "issues", "metadata"}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+": "+p[n])
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// GitToken returns a token for Git over HTTPS (user "x-access-token") to the repository: the
// token file's token, or the installation token the client's REST calls use. For a GitHub App
// it comes from the same ghinstallation transport as the REST calls, so the exchange goes
// through the client's retries, rate limits and metrics, and Git and REST share one token. Its
// errors are *APIError values (ErrCredentials when GitHub refuses the credentials).
func (c *Client) GitToken(ctx context.Context) (string, error) {
	tok, err := c.creds.Token(ctx)
	if err != nil {
		return "", classify("request installation token", err)
	}
	return tok, nil
}

// CheckCredentials verifies at start-up that the configured credentials reach the repository:
// for a GitHub App it requests an installation token (App ID, key, installation, and the
// token's narrowing to the repository and permissions) and then reads the repository; for a
// token file it reads the repository and, when GitHub says, checks that the token may push.
// A configuration fault matches ErrCredentials and names the flag to fix (--github-app-id,
// --github-private-key-file, --github-installation-id, --github-token-file or --git-repo); an
// outage or a rate limit matches ErrUnavailable or ErrRateLimited instead.
func (c *Client) CheckCredentials(ctx context.Context) error {
	if c.app {
		if _, err := c.GitToken(ctx); err != nil {
			return err
		}
	}
	r, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err == nil {
		c.rememberDefaultBranch(r.GetDefaultBranch())
		if !c.app && r.Permissions != nil && !r.Permissions["push"] {
			return &APIError{Op: "check credentials", Message: fmt.Sprintf("--github-token-file: the token may read %s/%s but not push to it (it needs contents: write, pull_requests: write and issues: write)", c.owner, c.repo),
				kinds: []error{ErrCredentials}}
		}
		return nil
	}
	cerr := classify("check credentials", err)
	var ae *APIError
	if !errors.As(cerr, &ae) || errors.Is(cerr, ErrCredentials) {
		return cerr
	}
	full := c.owner + "/" + c.repo
	who := "the token in --github-token-file"
	if c.app {
		who = fmt.Sprintf("installation %d (--github-installation-id)", c.installationID)
	}
	var msg string
	switch ae.StatusCode {
	case http.StatusNotFound:
		msg = fmt.Sprintf("--git-repo: repository %s does not exist or %s cannot see it", full, who)
	case http.StatusUnauthorized:
		msg = "--github-token-file: GitHub rejected the token"
		if c.app {
			msg = "GitHub rejected the installation token it had just issued: check --github-api-url"
		}
	case http.StatusForbidden:
		msg = fmt.Sprintf("%s may not read %s: check --git-repo and the credentials' permissions (%s)", who, full, permissionList())
	default:
		return cerr
	}
	if ae.Message != "" {
		msg += fmt.Sprintf(" (GitHub: %q)", ae.Message)
	}
	return &APIError{Op: "check credentials", StatusCode: ae.StatusCode, Message: msg, kinds: append([]error{ErrCredentials}, ae.kinds...), err: err}
}
