package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Client is the PR actuator's view of one repository on GitHub: go-github v60 over the
// credential transport and the resilience chain. Every error is an *APIError (see errors.go).
type Client struct {
	gh    *gh.Client
	creds credentials
	owner string
	repo  string
	// app and installationID describe GitHub App credentials (for CheckCredentials).
	app            bool
	installationID int64
	// pacer paces the client's writes (nil: not paced); clock is the chain's.
	pacer *writePacer
	clock Clock

	// defaultBranch is the repository's default branch as CheckCredentials read it, so that the
	// start-up check and the first PR read the repository once.
	mu            sync.Mutex
	defaultBranch string
}

// NewClient builds a Client for cfg.Repository ("owner/name").
func NewClient(cfg Config, opts ...Option) (*Client, error) {
	owner, repo, ok := strings.Cut(cfg.Repository, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("--git-repo: %q is not owner/name", cfg.Repository)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := defaultSettings()
	s.identity = cfg.identity()
	bundle, err := cfg.CABundle()
	if err != nil {
		return nil, err
	}
	if bundle != nil {
		s.base = caTransport(bundle)
	}
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	pacer := newWritePacer(s.writesPerMinute, s.writesPerHour)
	creds, err := newCredentials(cfg, s.chain(pacer), s.clock, s.credentialRecheck)
	if err != nil {
		return nil, err
	}
	api, _ := cfg.apiURL()
	c := gh.NewClient(&http.Client{Transport: creds})
	c.BaseURL = api
	c.UserAgent = "kustos"
	return &Client{gh: c, creds: creds, owner: owner, repo: repo, app: cfg.PrivateKeyFile != "", installationID: cfg.InstallationID,
		pacer: pacer, clock: s.clock}, nil
}

// Owner and Repo name the repository.
func (c *Client) Owner() string { return c.owner }

// Repo is the repository name without its owner.
func (c *Client) Repo() string { return c.repo }

func branchRef(branch string) string {
	return "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
}

// DefaultBranch returns the repository's default branch (read once per Client: a repository's
// default branch changes rarely, and a restart picks up a change).
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	c.mu.Lock()
	b := c.defaultBranch
	c.mu.Unlock()
	if b != "" {
		return b, nil
	}
	r, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", classify("get repository", err)
	}
	c.rememberDefaultBranch(r.GetDefaultBranch())
	return r.GetDefaultBranch(), nil
}

func (c *Client) rememberDefaultBranch(b string) {
	c.mu.Lock()
	c.defaultBranch = b
	c.mu.Unlock()
}

// GetRef returns refs/heads/<branch>; ErrNotFound if the branch does not exist.
func (c *Client) GetRef(ctx context.Context, branch string) (*gh.Reference, error) {
	r, _, err := c.gh.Git.GetRef(ctx, c.owner, c.repo, branchRef(branch))
	return r, classify("get ref "+branch, err)
}

// CreateRef creates branch at sha; ErrAlreadyExists (and ErrValidation) if it exists.
func (c *Client) CreateRef(ctx context.Context, branch, sha string) (*gh.Reference, error) {
	r, _, err := c.gh.Git.CreateRef(ctx, c.owner, c.repo, &gh.Reference{
		Ref: gh.String(branchRef(branch)), Object: &gh.GitObject{SHA: gh.String(sha)},
	})
	return r, classify("create ref "+branch, err)
}

// UpdateRef moves branch to sha; force allows a non-fast-forward (rebuilding on a new base).
func (c *Client) UpdateRef(ctx context.Context, branch, sha string, force bool) (*gh.Reference, error) {
	r, _, err := c.gh.Git.UpdateRef(ctx, c.owner, c.repo, &gh.Reference{
		Ref: gh.String(branchRef(branch)), Object: &gh.GitObject{SHA: gh.String(sha)},
	}, force)
	return r, classify("update ref "+branch, err)
}

// DeleteRef deletes branch; a branch that is already gone is not an error.
func (c *Client) DeleteRef(ctx context.Context, branch string) error {
	_, err := c.gh.Git.DeleteRef(ctx, c.owner, c.repo, branchRef(branch))
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && (er.Response.StatusCode == http.StatusNotFound ||
		(er.Response.StatusCode == http.StatusUnprocessableEntity && strings.Contains(er.Message, "does not exist"))) {
		return nil
	}
	return classify("delete ref "+branch, err)
}

// GetCommit returns a Git commit (its tree and parents).
func (c *Client) GetCommit(ctx context.Context, sha string) (*gh.Commit, error) {
	cm, _, err := c.gh.Git.GetCommit(ctx, c.owner, c.repo, sha)
	return cm, classify("get commit "+sha, err)
}

// CreateTree creates a tree from entries on top of baseTree.
func (c *Client) CreateTree(ctx context.Context, baseTree string, entries []*gh.TreeEntry) (*gh.Tree, error) {
	t, _, err := c.gh.Git.CreateTree(ctx, c.owner, c.repo, baseTree, entries)
	return t, classify("create tree", err)
}

// CreateCommit creates a commit; made by the App without author, GitHub signs and verifies it.
func (c *Client) CreateCommit(ctx context.Context, message, tree string, parents []string) (*gh.Commit, error) {
	cm := &gh.Commit{Message: gh.String(message), Tree: &gh.Tree{SHA: gh.String(tree)}}
	for _, p := range parents {
		cm.Parents = append(cm.Parents, &gh.Commit{SHA: gh.String(p)})
	}
	out, _, err := c.gh.Git.CreateCommit(ctx, c.owner, c.repo, cm, nil)
	return out, classify("create commit", err)
}

// GetFileContent returns a file's bytes and blob SHA at ref (files over 1 MB through the
// blob API).
func (c *Client) GetFileContent(ctx context.Context, path, ref string) ([]byte, string, error) {
	op := "get content " + path
	fc, _, _, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, path, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, "", classify(op, err)
	}
	if fc == nil || fc.GetType() != "file" {
		return nil, "", &APIError{Op: op, Message: "not a file", kinds: []error{ErrNotFound}}
	}
	if fc.GetEncoding() == "none" {
		b, _, err := c.gh.Git.GetBlobRaw(ctx, c.owner, c.repo, fc.GetSHA())
		return b, fc.GetSHA(), classify(op, err)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, "", &APIError{Op: op, Message: "undecodable content", kinds: []error{ErrValidation}, err: err}
	}
	return []byte(s), fc.GetSHA(), nil
}

// FindOpenPR returns the open pull request from head branch of this repository, or nil.
func (c *Client) FindOpenPR(ctx context.Context, head string) (*gh.PullRequest, error) {
	prs, err := c.FindPRs(ctx, head, "open")
	if err != nil || len(prs) == 0 {
		return nil, err
	}
	return prs[0], nil
}

// maxFindPRs bounds FindPRs: one page of GitHub's list.
const maxFindPRs = 100

// FindPRs returns the pull requests from head branch of this repository in state ("open",
// "closed" or "all"), newest first, at most 100. A closed one that is not merged (GetMerged
// false, MergedAt nil) was closed by a person or by ClosePR. The request is conditional (ETag),
// so polling an unchanged list spends no rate limit.
func (c *Client) FindPRs(ctx context.Context, head, state string) ([]*gh.PullRequest, error) {
	op := "find pull requests from " + head
	switch state {
	case "open", "closed", "all":
	default:
		return nil, &APIError{Op: op, Message: fmt.Sprintf("state %q is not open, closed or all", state), kinds: []error{ErrValidation}}
	}
	prs, _, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, &gh.PullRequestListOptions{
		State: state, Head: c.owner + ":" + head, Sort: "created", Direction: "desc",
		ListOptions: gh.ListOptions{PerPage: maxFindPRs},
	})
	if err != nil {
		return nil, classify(op, err)
	}
	out := prs[:0]
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head {
			out = append(out, pr)
		}
	}
	return out, nil
}

// maxListPages bounds the pages one listing reads (100 pull requests each), so that a server
// whose Link header never ends cannot hold a caller forever.
const maxListPages = 200

// OpenPullRequests returns every open pull request of the repository whose head branch starts
// with headPrefix and lives in the repository itself (not a fork), oldest first: what the PR
// budget counts as Kustos's open pull requests. It reads every page (100 a page, oldest
// first, so that a pull request opened meanwhile lands on a later page rather than moving the
// others); each page is a conditional request (ETag), so an unchanged list spends no rate
// limit.
func (c *Client) OpenPullRequests(ctx context.Context, headPrefix string) ([]*gh.PullRequest, error) {
	var out []*gh.PullRequest
	err := c.eachPullRequest(ctx, "list open pull requests from "+headPrefix+"*", "open", "asc",
		func(pr *gh.PullRequest) bool {
			if c.ours(pr, headPrefix) {
				out = append(out, pr)
			}
			return true
		})
	return out, err
}

// PullRequestsCreatedSince counts the pull requests of the repository, in any state, whose
// head branch starts with headPrefix (in the repository itself) and that were created at or
// after since: what the PR budget counts as new pull requests of the last hour, whatever
// became of them. It reads the list newest first and stops at the first pull request created
// before since.
func (c *Client) PullRequestsCreatedSince(ctx context.Context, headPrefix string, since time.Time) (int, error) {
	n := 0
	err := c.eachPullRequest(ctx, "count pull requests from "+headPrefix+"* created since "+since.UTC().Format(time.RFC3339), "all", "desc",
		func(pr *gh.PullRequest) bool {
			if pr.GetCreatedAt().Before(since) {
				return false
			}
			if c.ours(pr, headPrefix) {
				n++
			}
			return true
		})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// eachPullRequest calls fn with the pull requests in state, sorted by creation in direction,
// page after page (each once, even if the list moves between pages), until fn returns false
// or the list ends.
func (c *Client) eachPullRequest(ctx context.Context, op, state, direction string, fn func(*gh.PullRequest) bool) error {
	opts := &gh.PullRequestListOptions{State: state, Sort: "created", Direction: direction, ListOptions: gh.ListOptions{PerPage: maxFindPRs}}
	seen := map[int]bool{}
	for range maxListPages {
		prs, resp, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, opts)
		if err != nil {
			return classify(op, err)
		}
		for _, pr := range prs {
			if seen[pr.GetNumber()] {
				continue
			}
			seen[pr.GetNumber()] = true
			if !fn(pr) {
				return nil
			}
		}
		if resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
	return &APIError{Op: op, Message: fmt.Sprintf("more than %d pages", maxListPages), kinds: []error{ErrValidation}}
}

// ours reports a pull request from a branch of this repository whose name starts with
// headPrefix. A fork's branch of the same name is someone else's; a pull request whose head
// repository was deleted has none.
func (c *Client) ours(pr *gh.PullRequest, headPrefix string) bool {
	head := pr.GetHead()
	return strings.HasPrefix(head.GetRef(), headPrefix) &&
		strings.EqualFold(head.GetRepo().GetFullName(), c.owner+"/"+c.repo)
}

// NewPR describes a pull request to open.
type NewPR struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// CreatePR opens a pull request. If GitHub answers that one already exists for the head
// branch (a crash between creating it and recording it), the existing one is returned with
// adopted = true: one PR per key, ever.
func (c *Client) CreatePR(ctx context.Context, p NewPR) (pr *gh.PullRequest, adopted bool, err error) {
	pr, _, err = c.gh.PullRequests.Create(ctx, c.owner, c.repo, &gh.NewPullRequest{
		Title: gh.String(p.Title), Body: gh.String(p.Body), Head: gh.String(p.Head),
		Base: gh.String(p.Base), Draft: gh.Bool(p.Draft),
	})
	if err == nil {
		return pr, false, nil
	}
	cerr := classify("create pull request from "+p.Head, err)
	if ae := (*APIError)(nil); errors.As(cerr, &ae) && ae.StatusCode == http.StatusUnprocessableEntity &&
		strings.Contains(strings.ToLower(ae.Message), "a pull request already exists") {
		existing, ferr := c.FindOpenPR(ctx, p.Head)
		if ferr != nil {
			return nil, false, ferr
		}
		if existing != nil {
			return existing, true, nil
		}
	}
	return nil, false, cerr
}

// GetPR returns a pull request. The request is conditional: unchanged is true when GitHub
// answered 304 and the cached copy was returned (no rate limit spent). mergeable may be nil
// while GitHub computes it.
func (c *Client) GetPR(ctx context.Context, number int) (pr *gh.PullRequest, unchanged bool, err error) {
	pr, resp, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return nil, false, classify(fmt.Sprintf("get pull request #%d", number), err)
	}
	return pr, resp != nil && resp.Header.Get(CacheHeader) == "hit", nil
}

// EditPR sets a pull request's title and body (empty strings leave them unchanged).
func (c *Client) EditPR(ctx context.Context, number int, title, body string) (*gh.PullRequest, error) {
	upd := &gh.PullRequest{}
	if title != "" {
		upd.Title = gh.String(title)
	}
	if body != "" {
		upd.Body = gh.String(body)
	}
	pr, _, err := c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, upd)
	return pr, classify(fmt.Sprintf("edit pull request #%d", number), err)
}

// ClosePR closes an open pull request without merging it, first leaving comment (when not
// empty) to say why. A pull request that is already closed or merged is left alone, comment
// included, so that calling ClosePR again after it succeeded does nothing. The comment is not
// retried by the client (a repeat would post it twice); closing is.
func (c *Client) ClosePR(ctx context.Context, number int, comment string) error {
	op := fmt.Sprintf("close pull request #%d", number)
	pr, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return classify(op, err)
	}
	if pr.GetState() != "open" {
		return nil
	}
	if comment != "" {
		if _, _, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, number, &gh.IssueComment{Body: gh.String(comment)}); err != nil {
			return classify(fmt.Sprintf("comment on pull request #%d", number), err)
		}
	}
	_, _, err = c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, &gh.PullRequest{State: gh.String("closed")})
	return classify(op, err)
}

// UpdateBranch merges the base branch into the head of pull request number, as GitHub's
// "Update branch" button does, for a pull request that is "behind" where branch protection
// requires branches to be up to date. It is refused with ErrConflict when the head is no
// longer expectedHeadSHA (someone pushed: re-read the pull request), and with ErrNotMergeable
// when the base does not merge cleanly into the head (rebuild the branch instead). A head that
// already has every commit of the base is not an error. GitHub finishes the merge in the
// background: the pull request shows the new head shortly after. Not retried on 5xx: re-read
// the pull request instead.
func (c *Client) UpdateBranch(ctx context.Context, number int, expectedHeadSHA string) error {
	op := fmt.Sprintf("update branch of pull request #%d", number)
	var opts *gh.PullRequestBranchUpdateOptions
	if expectedHeadSHA != "" {
		opts = &gh.PullRequestBranchUpdateOptions{ExpectedHeadSHA: gh.String(expectedHeadSHA)}
	}
	_, _, err := c.gh.PullRequests.UpdateBranch(ctx, c.owner, c.repo, number, opts)
	var accepted *gh.AcceptedError
	if err == nil || errors.As(err, &accepted) {
		return nil // 202: GitHub is updating the branch
	}
	cerr := classify(op, err)
	var ae *APIError
	if !errors.As(cerr, &ae) || ae.StatusCode != http.StatusUnprocessableEntity {
		return cerr
	}
	switch lm := strings.ToLower(ae.Message); {
	case strings.Contains(lm, "no new commits"):
		return nil
	case strings.Contains(lm, "expected head sha"):
		ae.kinds = append(ae.kinds, ErrConflict)
		ae.Message = "head moved: " + ae.Message
	case strings.Contains(lm, "conflict"):
		ae.kinds = append(ae.kinds, ErrNotMergeable)
	}
	return ae
}

// MergePR merges a pull request only if its head is still headSHA. A moved head (409) is
// ErrConflict; a PR GitHub will not merge (405: checks, conflicts, already merged) is
// ErrNotMergeable. The merge is not retried on 5xx: re-read the PR instead.
func (c *Client) MergePR(ctx context.Context, number int, headSHA string, squash bool, title, message string) (*gh.PullRequestMergeResult, error) {
	method := "merge"
	if squash {
		method = "squash"
	}
	res, _, err := c.gh.PullRequests.Merge(ctx, c.owner, c.repo, number, message, &gh.PullRequestOptions{
		CommitTitle: title, SHA: headSHA, MergeMethod: method,
	})
	if err != nil {
		err = classify(fmt.Sprintf("merge pull request #%d", number), err)
		if ae := (*APIError)(nil); errors.As(err, &ae) && ae.StatusCode == http.StatusConflict {
			ae.Message = "head moved: " + ae.Message
		}
		return nil, err
	}
	return res, nil
}

// AddLabels adds labels to a pull request (creating unknown labels, as GitHub does).
func (c *Client) AddLabels(ctx context.Context, number int, labels ...string) error {
	if len(labels) == 0 {
		return nil
	}
	_, _, err := c.gh.Issues.AddLabelsToIssue(ctx, c.owner, c.repo, number, labels)
	return classify(fmt.Sprintf("add labels to #%d", number), err)
}

// CommentPR adds comment to pull request number's conversation (why Kustos changed it).
func (c *Client) CommentPR(ctx context.Context, number int, comment string) error {
	_, _, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, number, &gh.IssueComment{Body: gh.String(comment)})
	return classify(fmt.Sprintf("comment on pull request #%d", number), err)
}
