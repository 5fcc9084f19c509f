package group

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Options configure PR mode; every field is a flag of `kustos run`.
type Options struct {
	// GitHub holds --github-api-url, --github-app-id, --github-installation-id,
	// --github-private-key-file, --github-token-file and --git-repo (Repository).
	GitHub github.Config
	// BaseBranch is --git-base-branch (empty: the repository's default branch).
	BaseBranch string
	// Cluster is --cluster-name; Paths are the --git-path prefixes; Labels are --pr-labels.
	Cluster string
	Paths   []string
	Labels  []string
	// AutoMerge is --enable-auto-merge; PollInterval is --pr-poll-interval.
	AutoMerge    bool
	PollInterval time.Duration
	// Grouping is --group-by (per detector; nil: lifecycle.DefaultGrouping) and GroupWindow
	// --group-window.
	Grouping    map[string]lifecycle.GroupBy
	GroupWindow time.Duration
	// MaxOpenPRs is --max-open-prs and MaxNewPRsPerHour --max-new-prs-per-hour; 0: no limit.
	MaxOpenPRs, MaxNewPRsPerHour int
	// BudgetRefresh is how long GitHub's count of Kustos's pull requests is trusted (0: 30 s);
	// a waiting proposal asks again every half of it. Tests shorten it.
	BudgetRefresh time.Duration
	// CloneURL overrides the Git clone URL derived from the API URL (tests, unusual hosts).
	CloneURL string
	// ClientOptions tune the GitHub client (tests shorten its pauses and backoffs).
	ClientOptions []github.Option
	// AfterPropose is a test hook: it runs after a successful Propose and before the Lease
	// names the PR; an error stops the reconcile there (tests simulate a crash with it).
	AfterPropose func(key lifecycle.Key, res pr.Result) error
}

// Validate reports the first PR-mode flag that cannot work.
func (p Options) Validate() error {
	if p.GitHub.Repository == "" {
		return errors.New("--git-repo: required with --mode=pr (owner/name of the GitOps repository)")
	}
	owner, name, ok := strings.Cut(p.GitHub.Repository, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("--git-repo: %q is not owner/name", p.GitHub.Repository)
	}
	if err := p.GitHub.Validate(); err != nil {
		return err
	}
	if p.PollInterval <= 0 {
		return fmt.Errorf("--pr-poll-interval=%s: must be positive", lifecycle.FormatDuration(p.PollInterval))
	}
	switch {
	case p.GroupWindow < 0:
		return fmt.Errorf("--group-window=%s: must not be negative", lifecycle.FormatDuration(p.GroupWindow))
	case p.MaxOpenPRs < 0:
		return fmt.Errorf("--max-open-prs=%d: must not be negative (0: no limit)", p.MaxOpenPRs)
	case p.MaxNewPRsPerHour < 0:
		return fmt.Errorf("--max-new-prs-per-hour=%d: must not be negative (0: no limit)", p.MaxNewPRsPerHour)
	}
	for _, path := range p.Paths {
		// The same cleaning as a namespace's resizer.io/git-path, which must lie under these.
		if _, err := index.CleanPath(path); err != nil {
			return fmt.Errorf("--git-path=%q: want a path relative to the repository root: %w", path, err)
		}
	}
	return nil
}

// GroupingFor is what detector's Changes share in one pull request (--group-by).
func (p Options) GroupingFor(detector string) lifecycle.GroupBy {
	if b, ok := p.Grouping[detector]; ok {
		return b
	}
	return lifecycle.DefaultGrouping[detector]
}

// Mode is PR mode's part of Kustos: the Actuator (which is the pipeline's actuator and
// proposal follower), the pr.Writer under it, and the GitHub client, which also closes the pull
// request of a namespace gone (Release) and checks the credentials at start-up.
type Mode struct {
	Actuator *Actuator
	Writer   *pr.Writer
	GitHub   *github.Client
	// ByNamespace are the detectors whose Changes are grouped by namespace (--group-by): the
	// pull requests ReleaseNamespace looks for.
	ByNamespace []string
}

// NewMode builds the PR writer over the GitHub client and a Git reader of the base branch.
func NewMode(c Options, now func() time.Time, log logr.Logger) (*Mode, error) {
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
	w = pr.NewWriter(gc, repo, pr.Config{Cluster: c.Cluster, BaseBranch: c.BaseBranch, Paths: c.Paths, Labels: c.Labels})
	w.Log, w.Now = log.WithName("pr"), now
	var budget *Budget
	if c.MaxOpenPRs > 0 || c.MaxNewPRsPerHour > 0 {
		budget = &Budget{Counter: gc, HeadPrefix: w.BranchPrefix(), MaxOpen: c.MaxOpenPRs, MaxPerHour: c.MaxNewPRsPerHour,
			Refresh: c.BudgetRefresh, Recheck: c.BudgetRefresh / 2, Now: now}
	}
	var byNamespace []string
	for d := range lifecycle.DefaultGrouping {
		if c.GroupingFor(d) == lifecycle.GroupByNamespace {
			byNamespace = append(byNamespace, d)
		}
	}
	sort.Strings(byNamespace)
	return &Mode{Actuator: &Actuator{Writer: w, Forge: gc, Budget: budget, AfterPropose: c.AfterPropose, Now: now,
		Log: log.WithName("proposals")}, GitHub: gc, Writer: w, ByNamespace: byNamespace}, nil
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
// why, before the sweep deletes the Lease: the one case where Kustos closes its own PR. One whose
// head a person pushed is not Kustos's to close: it stays open, left to people. It is
// state.NamespaceSweeper's Release.
func (m *Mode) Release(ctx context.Context, rec state.Record) error {
	n, ok := state.HolderNumber(rec.Holder)
	if !ok {
		// No PR holder; but a decision left pending by a replica that crashed may have opened
		// its PR before the Lease could name it, and nothing would ever close it.
		var err error
		if n, err = m.pendingPR(ctx, rec); err != nil || n == 0 {
			return err
		}
	}
	if own, err := m.ownHead(ctx, rec.Key, n); err != nil || !own {
		return err
	}
	_, ns, _ := state.SplitKey(rec.Key)
	comment := fmt.Sprintf("Kustos closes this pull request because namespace %q no longer exists in the cluster, so the change it proposes has no target. The branch is left as it is.", ns)
	if rec.Key.IsGroup() {
		comment = groupGoneComment
	}
	return m.GitHub.ClosePR(ctx, n, comment)
}

// ReleaseNamespace closes the open pull request of each namespace group of namespace (the
// detectors in ByNamespace) and of each of its Cleaners' groups, whatever the Leases say: the one a replica opened and could not
// record, because it crashed first or because the namespace's sweep had deleted the group's
// Lease in the meantime, has no Lease to be released by. It is state.NamespaceSweeper's
// ReleaseNamespace, called once the namespace is gone.
func (m *Mode) ReleaseNamespace(ctx context.Context, namespace string) error {
	var errs []error
	for _, d := range m.ByNamespace {
		g := lifecycle.GroupKey(d, string(lifecycle.GroupByNamespace), namespace)
		n, err := m.Writer.OpenForGroup(ctx, g)
		own := false
		if err == nil && n != 0 {
			own, err = m.ownHead(ctx, g, n) // a person's is left to people, as Release leaves it
		}
		if err == nil && own {
			err = m.GitHub.ClosePR(ctx, n, groupGoneComment)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("closing the pull request of group %s: %w", g, err))
		}
	}
	// The Cleaners' groups of the namespace, one per Cleaner: found by their branches.
	prefix := m.Writer.GroupBranch(lifecycle.GroupKey(lifecycle.CleanerGroupDetector, lifecycle.CleanerGroupBy, namespace)) + "/"
	prs, err := m.GitHub.OpenPullRequests(ctx, prefix)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing the Cleaners' pull requests of namespace %s: %w", namespace, err))...)
	}
	for _, p := range prs {
		name := strings.TrimPrefix(p.GetHead().GetRef(), prefix)
		if name == "" || strings.Contains(name, "/") {
			continue
		}
		g := lifecycle.CleanerGroupKey(namespace, name)
		own, err := m.ownHead(ctx, g, p.GetNumber())
		if err == nil && own {
			err = m.GitHub.ClosePR(ctx, p.GetNumber(), groupGoneComment)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("closing the pull request of group %s: %w", g, err))
		}
	}
	return errors.Join(errs...)
}

const groupGoneComment = "Kustos closes this pull request because the namespace of its targets no longer exists in the cluster, so the changes it proposes have no target. The branch is left as it is."

// ownHead reports whether pull request number may be closed for key: it is not open (closing
// it does nothing), or its head is a commit Kustos wrote for key. One a person pushed onto is
// left open to people, even with its target's namespace gone (false, no error: the sweep goes
// on without it).
func (m *Mode) ownHead(ctx context.Context, key lifecycle.Key, number int) (bool, error) {
	st, err := m.Writer.StatusOf(ctx, key, number)
	if err != nil || st.State != lifecycle.ProposalOpen {
		return err == nil, err
	}
	return m.Writer.OwnCommit(ctx, key, st.HeadSHA)
}

// pendingPR is the open PR of rec's pending decision (0: none pending, a group's, or none open).
func (m *Mode) pendingPR(ctx context.Context, rec state.Record) (int, error) {
	c, ok := rec.PendingChange()
	if !ok || rec.Key.IsGroup() {
		return 0, nil // none, or unreadable (a hand edit): nothing to find its PR by, and the Lease still goes
	}
	// A grouped member's decision opens its group's pull request, not one on its own branch:
	// none is found there, and the group Lease's release closes the group's.
	return m.Writer.OpenFor(ctx, c)
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
