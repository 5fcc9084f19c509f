package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// Client is the PR actuator's view of one repository on GitHub: go-github v60 over the
// credential transport and the resilience chain. Every error is an *APIError (see errors.go).
type Client struct {
	gh    *gh.Client
	owner string
	repo  string
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
	for _, o := range opts {
		o(&s)
	}
	rt, err := NewTransportWithBase(cfg, s.chain())
	if err != nil {
		return nil, err
	}
	api, _ := cfg.apiURL()
	c := gh.NewClient(&http.Client{Transport: rt})
	c.BaseURL = api
	c.UserAgent = "kustos"
	return &Client{gh: c, owner: owner, repo: repo}, nil
}

// Owner and Repo name the repository.
func (c *Client) Owner() string { return c.owner }

// Repo is the repository name without its owner.
func (c *Client) Repo() string { return c.repo }

func branchRef(branch string) string {
	return "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
}

// DefaultBranch returns the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", classify("get repository", err)
	}
	return r.GetDefaultBranch(), nil
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
	prs, _, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, &gh.PullRequestListOptions{
		State: "open", Head: c.owner + ":" + head, ListOptions: gh.ListOptions{PerPage: 10},
	})
	if err != nil {
		return nil, classify("find pull request from "+head, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head {
			return pr, nil
		}
	}
	return nil, nil
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
	if ae, ok := cerr.(*APIError); ok && ae.StatusCode == http.StatusUnprocessableEntity &&
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

// ClosePR closes a pull request without merging.
func (c *Client) ClosePR(ctx context.Context, number int) error {
	_, _, err := c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, &gh.PullRequest{State: gh.String("closed")})
	return classify(fmt.Sprintf("close pull request #%d", number), err)
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
		if ae, ok := err.(*APIError); ok && ae.StatusCode == http.StatusConflict {
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

// CombinedStatus returns the combined commit status of ref.
func (c *Client) CombinedStatus(ctx context.Context, ref string) (*gh.CombinedStatus, error) {
	st, _, err := c.gh.Repositories.GetCombinedStatus(ctx, c.owner, c.repo, ref, &gh.ListOptions{PerPage: 100})
	return st, classify("get combined status of "+ref, err)
}

// maxCheckRunPages bounds CheckRuns (10 × 100 runs).
const maxCheckRunPages = 10

// CheckRuns returns the check runs of ref.
func (c *Client) CheckRuns(ctx context.Context, ref string) ([]*gh.CheckRun, error) {
	opts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var all []*gh.CheckRun
	for page := 0; page < maxCheckRunPages; page++ {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, ref, opts)
		if err != nil {
			return nil, classify("list check runs of "+ref, err)
		}
		all = append(all, res.CheckRuns...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return all, nil
}
