package github

// Narrow unit tests of the client's error paths with go-github-mock: each case scripts the
// answers of one or two endpoints and checks how the whole chain (retries, rate limits,
// classification) turns them into errors. The contract-checked githubtest server covers the
// happy paths and GitHub's behaviour; this file covers answers that server does not produce.
//
// go-github-mock v1.0.0 is built against go-github v61 (no release uses v60; v0.0.23 uses
// v59). It only routes requests to handlers by GitHub's endpoint patterns and serves what
// the handlers write, so the v60 client is unaffected; mock.WriteError is the only helper
// that touches go-github types, and the JSON it writes is the same in every version.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/migueleliasweb/go-github-mock/src/mock"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// answer is one scripted HTTP answer.
type answer struct {
	code   int
	header map[string]string
	body   string // JSON; "" = GitHub's {"message": http.StatusText}
}

func (a answer) write(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if a.body == "" {
		mock.WriteError(w, a.code, http.StatusText(a.code))
		return
	}
	w.WriteHeader(a.code)
	_, _ = w.Write([]byte(a.body))
}

// script answers the requests of one endpoint in order (the last answer repeats) and counts
// them.
type script struct {
	ep      mock.EndpointPattern
	answers []answer
	calls   atomic.Int32
}

func (s *script) option() mock.MockBackendOption {
	return mock.WithRequestMatchHandler(s.ep, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := int(s.calls.Add(1)) - 1
		s.answers[min(n, len(s.answers)-1)].write(w)
	}))
}

// mockClient is a token-file Client whose requests go to go-github-mock handlers, with a fake
// clock, no jitter and no pause between mutations.
func mockClient(t *testing.T, cfg Config, scripts []*script, opts ...Option) (*Client, *fakeClock) {
	t.Helper()
	var mo []mock.MockBackendOption
	for _, s := range scripts {
		mo = append(mo, s.option())
	}
	hc := mock.NewMockedHTTPClient(mo...)
	clk := newFakeClock()
	if cfg.TokenFile == "" && cfg.PrivateKeyFile == "" {
		cfg.TokenFile = writeFile(t, "token", testToken)
	}
	if cfg.Repository == "" {
		cfg.Repository = "acme/gitops"
	}
	opts = append([]Option{WithBaseTransport(hc.Transport), WithClock(clk), WithJitter(noJitter), WithMutationInterval(0)}, opts...)
	c, err := NewClient(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

const (
	secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	abuseBody     = `{"message":"You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#abuse-rate-limits"}`
	primaryBody   = `{"message":"API rate limit exceeded for installation ID 42.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`
)

var patchRef = mock.EndpointPattern{Pattern: "/repos/{owner}/{repo}/git/refs/{ref:.+}", Method: "PATCH"}

func TestErrorPathsWithMock(t *testing.T) {
	epoch := newFakeClock().Now()
	resetIn := func(d time.Duration) string { return strconv.FormatInt(epoch.Add(d).Unix(), 10) }
	ok := func(body string) answer { return answer{code: 200, body: body} }
	const prJSON = `{"number":5,"state":"open","head":{"ref":"kustos/x","sha":"h1"}}`

	tests := []struct {
		name    string
		scripts []*script
		call    func(c *Client) error
		opts    []Option
		// want are the classes the error must match (nil: success); notWant must not match.
		want, notWant []error
		wantMsg       string
		wantCalls     []int32 // per script
		wantSleeps    []time.Duration
		wantRetryAt   time.Duration // > 0: RetryAt must be epoch + this (give or take the sleeps)
	}{
		{
			name:    "422 Reference already exists",
			scripts: []*script{{ep: mock.PostReposGitRefsByOwnerByRepo, answers: []answer{{code: 422, body: `{"message":"Reference already exists"}`}}}},
			call:    func(c *Client) error { _, err := c.CreateRef(context.Background(), "kustos/x", "abc"); return err },
			want:    []error{ErrValidation, ErrAlreadyExists}, notWant: []error{ErrConflict},
			wantMsg: "create ref kustos/x", wantCalls: []int32{1},
		},
		{
			name: "422 A pull request already exists, none open: the error stays",
			scripts: []*script{
				{ep: mock.PostReposPullsByOwnerByRepo, answers: []answer{{code: 422, body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:kustos/x."}]}`}}},
				{ep: mock.GetReposPullsByOwnerByRepo, answers: []answer{ok(`[]`)}},
			},
			call: func(c *Client) error {
				_, _, err := c.CreatePR(context.Background(), NewPR{Title: "t", Head: "kustos/x", Base: "main"})
				return err
			},
			want: []error{ErrValidation, ErrAlreadyExists}, wantMsg: "A pull request already exists", wantCalls: []int32{1, 1},
		},
		{
			name: "422 A pull request already exists, open one adopted",
			scripts: []*script{
				{ep: mock.PostReposPullsByOwnerByRepo, answers: []answer{{code: 422, body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:kustos/x."}]}`}}},
				{ep: mock.GetReposPullsByOwnerByRepo, answers: []answer{ok(`[` + prJSON + `]`)}},
			},
			call: func(c *Client) error {
				pr, adopted, err := c.CreatePR(context.Background(), NewPR{Title: "t", Head: "kustos/x", Base: "main"})
				if err == nil && (!adopted || pr.GetNumber() != 5) {
					return errors.New("not adopted")
				}
				return err
			},
			wantCalls: []int32{1, 1},
		},
		{
			name:    "409 merge: head moved",
			scripts: []*script{{ep: mock.PutReposPullsMergeByOwnerByRepoByPullNumber, answers: []answer{{code: 409, body: `{"message":"Head branch was modified. Review and try the merge again."}`}}}},
			call: func(c *Client) error {
				_, err := c.MergePR(context.Background(), 5, "h1", true, "t", "m")
				return err
			},
			want: []error{ErrConflict}, wantMsg: "head moved", wantCalls: []int32{1},
		},
		{
			name:    "409 ref update: conflict, not retried",
			scripts: []*script{{ep: patchRef, answers: []answer{{code: 409, body: `{"message":"Reference update failed"}`}, ok(`{}`)}}},
			call: func(c *Client) error {
				_, err := c.UpdateRef(context.Background(), "kustos/x", "abc", false)
				return err
			},
			want: []error{ErrConflict}, wantMsg: "update ref kustos/x", wantCalls: []int32{1},
		},
		{
			name:    "422 not a fast forward: conflict",
			scripts: []*script{{ep: patchRef, answers: []answer{{code: 422, body: `{"message":"Update is not a fast forward"}`}}}},
			call: func(c *Client) error {
				_, err := c.UpdateRef(context.Background(), "kustos/x", "abc", false)
				return err
			},
			want: []error{ErrConflict, ErrValidation}, wantCalls: []int32{1},
		},
		{
			name:    "422 update-branch with a moved head: conflict",
			scripts: []*script{{ep: mock.PutReposPullsUpdateBranchByOwnerByRepoByPullNumber, answers: []answer{{code: 422, body: `{"message":"expected head sha didn't match current head ref."}`}}}},
			call:    func(c *Client) error { return c.UpdateBranch(context.Background(), 5, "h1") },
			want:    []error{ErrConflict}, wantMsg: "head moved", wantCalls: []int32{1},
		},
		{
			name:    "404 pull request",
			scripts: []*script{{ep: mock.GetReposPullsByOwnerByRepoByPullNumber, answers: []answer{{code: 404}}}},
			call:    func(c *Client) error { _, _, err := c.GetPR(context.Background(), 5); return err },
			want:    []error{ErrNotFound}, notWant: []error{ErrUnavailable}, wantMsg: "get pull request #5", wantCalls: []int32{1},
		},
		{
			name:    "404 repository",
			scripts: []*script{{ep: mock.GetReposByOwnerByRepo, answers: []answer{{code: 404}}}},
			call:    func(c *Client) error { _, err := c.DefaultBranch(context.Background()); return err },
			want:    []error{ErrNotFound}, wantCalls: []int32{1},
		},
		{
			name:       "secondary rate limit message without Retry-After: 60 s, then the call goes through",
			scripts:    []*script{{ep: mock.PostReposGitTreesByOwnerByRepo, answers: []answer{{code: 403, body: secondaryBody}, {code: 201, body: `{"sha":"t1"}`}}}},
			call:       func(c *Client) error { _, err := c.CreateTree(context.Background(), "base", nil); return err },
			wantCalls:  []int32{2},
			wantSleeps: []time.Duration{DefaultSecondaryRetryAfter},
		},
		{
			name:    "secondary rate limit longer than the allowed wait: ErrRateLimited with the time to retry",
			scripts: []*script{{ep: mock.PostReposGitTreesByOwnerByRepo, answers: []answer{{code: 403, body: secondaryBody}}}},
			call:    func(c *Client) error { _, err := c.CreateTree(context.Background(), "base", nil); return err },
			opts:    []Option{WithMaxRateLimitWait(10 * time.Second)},
			want:    []error{ErrRateLimited}, notWant: []error{ErrUnauthorized, ErrCredentials},
			wantCalls: []int32{1}, wantRetryAt: DefaultSecondaryRetryAfter,
		},
		{
			name:       "abuse Retry-After honoured",
			scripts:    []*script{{ep: mock.GetReposPullsByOwnerByRepoByPullNumber, answers: []answer{{code: 403, header: map[string]string{"Retry-After": "30"}, body: abuseBody}, ok(prJSON)}}},
			call:       func(c *Client) error { _, _, err := c.GetPR(context.Background(), 5); return err },
			wantCalls:  []int32{2},
			wantSleeps: []time.Duration{30 * time.Second},
		},
		{
			name:    "abuse Retry-After beyond the allowed wait",
			scripts: []*script{{ep: mock.GetReposPullsByOwnerByRepoByPullNumber, answers: []answer{{code: 403, header: map[string]string{"Retry-After": "600"}, body: abuseBody}}}},
			call:    func(c *Client) error { _, _, err := c.GetPR(context.Background(), 5); return err },
			want:    []error{ErrRateLimited}, wantCalls: []int32{1}, wantRetryAt: 10 * time.Minute,
		},
		{
			name:    "429 with Retry-After left after the retries: ErrRateLimited",
			scripts: []*script{{ep: mock.GetReposByOwnerByRepo, answers: []answer{{code: 429, header: map[string]string{"Retry-After": "5"}}}}},
			call:    func(c *Client) error { _, err := c.DefaultBranch(context.Background()); return err },
			opts:    []Option{WithMaxRetries(1)},
			want:    []error{ErrRateLimited}, wantCalls: []int32{2}, wantSleeps: []time.Duration{5 * time.Second},
		},
		{
			name: "primary rate limit: wait until reset, then the call goes through",
			scripts: []*script{{ep: mock.PostReposPullsByOwnerByRepo, answers: []answer{
				{code: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": resetIn(40 * time.Second), "X-RateLimit-Limit": "5000"}, body: primaryBody},
				{code: 201, body: `{"number":9}`},
			}}},
			call: func(c *Client) error {
				_, _, err := c.CreatePR(context.Background(), NewPR{Title: "t", Head: "kustos/x", Base: "main"})
				return err
			},
			wantCalls: []int32{1 + 1}, wantSleeps: []time.Duration{41 * time.Second},
		},
		{
			name: "primary rate limit an hour away: ErrRateLimited until the reset, nothing more sent",
			scripts: []*script{{ep: mock.GetReposByOwnerByRepo, answers: []answer{
				{code: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": resetIn(time.Hour), "X-RateLimit-Resource": "core"}, body: primaryBody},
			}}},
			call: func(c *Client) error {
				_, err := c.DefaultBranch(context.Background())
				if err == nil {
					return nil
				}
				// A second call does not reach GitHub before the reset.
				if _, err2 := c.DefaultBranch(context.Background()); !errors.Is(err2, ErrRateLimited) {
					return err2
				}
				return err
			},
			want: []error{ErrRateLimited}, notWant: []error{ErrUnauthorized}, wantCalls: []int32{1}, wantRetryAt: time.Hour,
		},
		{
			name:    "plain 403 is a permission problem, not a rate limit",
			scripts: []*script{{ep: mock.PostReposIssuesLabelsByOwnerByRepoByIssueNumber, answers: []answer{{code: 403, body: `{"message":"Resource not accessible by integration"}`}}}},
			call:    func(c *Client) error { return c.AddLabels(context.Background(), 5, "kustos") },
			want:    []error{ErrUnauthorized}, notWant: []error{ErrRateLimited}, wantMsg: "Resource not accessible by integration", wantCalls: []int32{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := mockClient(t, Config{}, tt.scripts, tt.opts...)
			err := tt.call(c)
			if tt.want == nil && err != nil {
				t.Fatalf("err = %v, want success", err)
			}
			for _, k := range tt.want {
				if !errors.Is(err, k) {
					t.Errorf("err = %v, want it to match %v", err, k)
				}
			}
			for _, k := range tt.notWant {
				if errors.Is(err, k) {
					t.Errorf("err = %v matches %v", err, k)
				}
			}
			if err != nil && (!strings.Contains(err.Error(), tt.wantMsg) || strings.Contains(err.Error(), testToken)) {
				t.Errorf("err = %q, want it to say %q (and no token)", err, tt.wantMsg)
			}
			if tt.wantRetryAt > 0 {
				at, ok := RetryAt(err)
				if d := at.Sub(epoch); !ok || d < tt.wantRetryAt-time.Second || d > tt.wantRetryAt+time.Second {
					t.Errorf("RetryAt = %v, %v; want epoch + %v", at, ok, tt.wantRetryAt)
				}
			}
			for i, s := range tt.scripts {
				if got := s.calls.Load(); i < len(tt.wantCalls) && got != tt.wantCalls[i] {
					t.Errorf("%s %s: %d calls, want %d", s.ep.Method, s.ep.Pattern, got, tt.wantCalls[i])
				}
			}
			if got := clk.Sleeps(); !equalDurations(got, tt.wantSleeps) {
				t.Errorf("sleeps = %v, want %v", got, tt.wantSleeps)
			}
		})
	}
}

// TestTokenEndpointErrorsWithMock: the App's token exchange refused with 401/403/404/422 is a
// configuration error naming the flag to fix, sent once; a rate limit or an outage on it is not.
func TestTokenEndpointErrorsWithMock(t *testing.T) {
	_, pemKey := githubtest.NewAppKey(t)
	tests := []struct {
		name       string
		answer     answer
		want       error
		notWant    error
		wantMsg    string
		wantTokens int32
	}{
		{"404 installation", answer{code: 404}, ErrCredentials, ErrUnavailable, "--github-installation-id", 1},
		{"401 JWT", answer{code: 401, body: `{"message":"A JSON web token could not be decoded"}`}, ErrCredentials, ErrUnavailable, "--github-private-key-file", 1},
		{"403 suspended", answer{code: 403, body: `{"message":"This installation has been suspended"}`}, ErrCredentials, ErrRateLimited, "suspended", 1},
		{"422 repository", answer{code: 422, body: `{"message":"There is at least one repository that does not exist or is not accessible to the parent installation."}`}, ErrCredentials, ErrValidation, "--git-repo", 1},
		{"403 secondary rate limit", answer{code: 403, header: map[string]string{"Retry-After": "3600"}, body: secondaryBody}, ErrRateLimited, ErrCredentials, "rate limit", 1},
		{"502 after retries", answer{code: 502}, ErrUnavailable, ErrCredentials, "502", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens := &script{ep: mock.PostAppInstallationsAccessTokensByInstallationId, answers: []answer{tt.answer}}
			repo := &script{ep: mock.GetReposByOwnerByRepo, answers: []answer{{code: 200, body: `{"default_branch":"main"}`}}}
			c, _ := mockClient(t, Config{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: writeFile(t, "k.pem", string(pemKey))},
				[]*script{tokens, repo}, WithMaxRetries(2))
			for range 3 {
				_, err := c.DefaultBranch(context.Background())
				if !errors.Is(err, tt.want) || errors.Is(err, tt.notWant) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %v, want %v (not %v) saying %q", err, tt.want, tt.notWant, tt.wantMsg)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY") {
					t.Fatalf("error leaks the key: %v", err)
				}
				if errors.Is(tt.want, ErrUnavailable) {
					break // an outage is retried by the client, then by the caller
				}
			}
			if got := tokens.calls.Load(); got != tt.wantTokens {
				t.Errorf("token requests = %d, want %d", got, tt.wantTokens)
			}
			if repo.calls.Load() != 0 {
				t.Errorf("REST call sent without a token")
			}
		})
	}
}
