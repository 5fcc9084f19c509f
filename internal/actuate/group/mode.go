package group

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// ModeConfig is what PR mode is built from (the --github-*, --git-* and --pr-* flags).
type ModeConfig struct {
	GitHub        github.Config
	ClientOptions []github.Option
	// CloneURL overrides the Git clone URL derived from the API URL (CloneURL).
	CloneURL string
	PR       pr.Config
	// MaxOpen and MaxPerHour are the budget (0: no limit); BudgetRefresh how long GitHub's count
	// is trusted.
	MaxOpen, MaxPerHour int
	BudgetRefresh       time.Duration
	// AfterPropose is the Actuator's test hook.
	AfterPropose func(key lifecycle.Key, res pr.Result) error
	Now          func() time.Time
	Log          logr.Logger
}

// Mode is PR mode's part of Kustos: the Actuator (which is the pipeline's actuator and
// proposal follower), the pr.Writer under it, and the GitHub client, which also closes the pull
// request of a namespace gone (Release) and checks the credentials at start-up.
type Mode struct {
	Actuator *Actuator
	Writer   *pr.Writer
	GitHub   *github.Client
}

// NewMode builds the PR writer over the GitHub client and a Git reader of the base branch.
func NewMode(c ModeConfig) (*Mode, error) {
	gc, err := github.NewClient(c.GitHub, c.ClientOptions...)
	if err != nil {
		return nil, err
	}
	cloneURL := c.CloneURL
	if cloneURL == "" {
		if cloneURL, err = CloneURL(c.GitHub.APIURL, c.GitHub.Repository); err != nil {
			return nil, err
		}
	}
	var w *pr.Writer
	// Git uses the client's own token (one ghinstallation transport for REST and Git, inside the
	// client's retries, rate limits and metrics).
	bundle, err := c.GitHub.CABundle()
	if err != nil {
		return nil, err
	}
	repo := &baseRepo{url: cloneURL, branch: func(ctx context.Context) (string, error) { return w.BaseBranch(ctx) }, token: gc.GitToken, caBundle: bundle}
	w = pr.NewWriter(gc, repo, c.PR)
	w.Log, w.Now = c.Log.WithName("pr"), c.Now
	var budget *Budget
	if c.MaxOpen > 0 || c.MaxPerHour > 0 {
		budget = &Budget{Counter: gc, HeadPrefix: w.BranchPrefix(), MaxOpen: c.MaxOpen, MaxPerHour: c.MaxPerHour,
			Refresh: c.BudgetRefresh, Recheck: c.BudgetRefresh / 2, Now: c.Now}
	}
	return &Mode{Actuator: &Actuator{Writer: w, Forge: gc, Budget: budget, AfterPropose: c.AfterPropose, Now: c.Now,
		Log: c.Log.WithName("proposals")}, GitHub: gc, Writer: w}, nil
}

// CloneURL is the HTTPS clone URL of repository (owner/name) for the API at apiURL ("":
// github.DefaultAPIURL): github.com for api.github.com, the same host for GitHub Enterprise
// (API at /api/v3/).
func CloneURL(apiURL, repository string) (string, error) {
	if apiURL == "" {
		apiURL = github.DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return "", fmt.Errorf("--github-api-url: %w", err)
	}
	if u.Host == "api.github.com" {
		return "https://github.com/" + repository + ".git", nil
	}
	prefix := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3")
	return u.Scheme + "://" + u.Host + prefix + "/" + repository + ".git", nil
}

// baseRepo is a pr.GitRepo of the base branch, which it learns from the Writer (configured, or
// the repository's default branch read once) on first use.
type baseRepo struct {
	url    string
	branch func(context.Context) (string, error)
	token  func(context.Context) (string, error)
	// caBundle is --github-ca-file's certificates, trusted by the clones besides the system's.
	caBundle []byte

	mu   sync.Mutex
	repo *pr.GitRepo
}

func (b *baseRepo) Snapshot(ctx context.Context, sha string) (pr.Snapshot, error) {
	b.mu.Lock()
	if b.repo == nil {
		branch, err := b.branch(ctx)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.repo = &pr.GitRepo{URL: b.url, Branch: branch, Token: b.token, CABundle: b.caBundle}
	}
	r := b.repo
	b.mu.Unlock()
	return r.Snapshot(ctx, sha)
}

// Release closes the open PR of a state Lease whose namespace was deleted, with a comment saying
// why, before the sweep deletes the Lease: the one case where Kustos closes its own PR. It is
// state.NamespaceSweeper's Release.
func (m *Mode) Release(ctx context.Context, rec state.Record) error {
	n, ok := state.HolderNumber(rec.Holder)
	if !ok {
		return nil // not a PR holder: nothing to close
	}
	_, ns, _ := state.SplitKey(rec.Key)
	comment := fmt.Sprintf("Kustos closes this pull request because namespace %q no longer exists in the cluster, so the change it proposes has no target. The branch is left as it is.", ns)
	if rec.Key.IsGroup() {
		comment = "Kustos closes this pull request because the namespace of its targets no longer exists in the cluster, so the changes it proposes have no target. The branch is left as it is."
	}
	return m.GitHub.ClosePR(ctx, n, comment)
}

// credentialCheckTimeout bounds the start-up check of the GitHub credentials.
const credentialCheckTimeout = 30 * time.Second

// CheckCredentials asks GitHub once at start-up whether the credentials reach the repository. A
// configuration fault (wrong App ID, key, installation, repository, or a token that may not
// push) stops Kustos with a message naming the flag; an outage or a rate limit is only logged,
// so that a GitHub incident does not keep Kustos from starting.
func (m *Mode) CheckCredentials(ctx context.Context, log logr.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, credentialCheckTimeout)
	defer cancel()
	err := m.GitHub.CheckCredentials(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, github.ErrCredentials):
		return fmt.Errorf("--mode=pr: %w", err)
	}
	log.Error(err, "could not check the GitHub credentials at start-up; going on, PR mode retries on its own")
	return nil
}
