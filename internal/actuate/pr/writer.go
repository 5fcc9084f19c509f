package pr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	gh "github.com/google/go-github/v60/github"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"

	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// GitHub is the part of *github.Client the Writer calls.
type GitHub interface {
	DefaultBranch(ctx context.Context) (string, error)
	GetRef(ctx context.Context, branch string) (*gh.Reference, error)
	CreateRef(ctx context.Context, branch, sha string) (*gh.Reference, error)
	UpdateRef(ctx context.Context, branch, sha string, force bool) (*gh.Reference, error)
	UpdateRefFrom(ctx context.Context, branch, from, sha string) error
	GetCommit(ctx context.Context, sha string) (*gh.Commit, error)
	CreateTree(ctx context.Context, baseTree string, entries []*gh.TreeEntry) (*gh.Tree, error)
	CreateCommit(ctx context.Context, message, tree string, parents []string) (*gh.Commit, error)
	FindOpenPR(ctx context.Context, head string) (*gh.PullRequest, error)
	FindPRs(ctx context.Context, head, state string) ([]*gh.PullRequest, error)
	CreatePR(ctx context.Context, p github.NewPR) (pr *gh.PullRequest, adopted bool, err error)
	GetPR(ctx context.Context, number int) (pr *gh.PullRequest, unchanged bool, err error)
	EditPR(ctx context.Context, number int, title, body string) (*gh.PullRequest, error)
	MergePR(ctx context.Context, number int, headSHA string, squash bool, title, message string) (*gh.PullRequestMergeResult, error)
	AddLabels(ctx context.Context, number int, labels ...string) error
}

var _ GitHub = (*github.Client)(nil)

// Errors of Propose besides the index's (index.ErrSourceNotFound, ErrSourceAmbiguous,
// ErrSourceNotEditable), yamledit's (yamledit.ErrConflict: Git no longer holds the value the
// detector saw) and the GitHub client's classified errors, all matchable with errors.Is. Each
// also matches its lifecycle kind (lifecycle.ErrInvalidChange, lifecycle.ErrProposalBlocked).
var (
	// ErrInvalidChange: the Change lacks what a PR needs (key, detector, target, edit).
	ErrInvalidChange = lifecycle.NewError("pr: invalid change", lifecycle.ErrInvalidChange)
	// ErrBranchTaken: an open PR from the key's branch carries another key's marker (two keys
	// sanitised to one branch name); nothing is touched.
	ErrBranchTaken = lifecycle.NewError("pr: branch belongs to another key", lifecycle.ErrProposalBlocked)
)

// Config configures a Writer. Every field maps to a flag of the PR mode.
type Config struct {
	// Cluster is --cluster-name: part of every branch name, so that instances serving several
	// clusters from one repository never share a branch. Empty: no cluster segment.
	Cluster string
	// BaseBranch is --git-base-branch; empty: the repository's default branch.
	BaseBranch string
	// Paths are the --git-path prefixes that limit the index; empty: the whole repository.
	Paths []string
	// Labels are added to every PR (--pr-labels).
	Labels []string
	// RecheckAfter is how soon MaybeMerge asks again when GitHub is still computing
	// mergeability or the head moved under a merge (default 5 s).
	RecheckAfter time.Duration
	// PendingAfter is how soon MaybeMerge asks again while checks run or are required
	// (mergeable_state blocked, unstable, behind, unknown; default 1 min).
	PendingAfter time.Duration
}

// ProposeOptions are per-target inputs of Propose that do not belong to the Change:
// lifecycle's ProposeOptions (GitPath is the namespace's resizer.io/git-path, a file or
// directory that replaces discovery under Config.Paths).
type ProposeOptions = lifecycle.ProposeOptions

// Result says what Propose found and did.
type Result struct {
	// AlreadyInBase: the base branch already holds every proposed value (typically a merged PR
	// waiting for Argo CD/Flux to sync). Nothing was done; the Change counts as done.
	AlreadyInBase bool
	// Location is the manifest document that defines the target.
	Location index.Location
	// Fields are the field changes on the base (old → new), as the title states them.
	Fields []yamledit.FieldResult
	// Branch is the PR's head branch.
	Branch string
	// Number and URL identify the one PR of the key; HeadSHA is the branch head.
	Number  int
	URL     string
	HeadSHA string
	// Created: this call opened the PR. Adopted: it found the PR open (a crash or another
	// replica). Committed: it wrote a new commit to the branch; Rebuilt: that commit replaced one
	// on an older base or with other content. Edited: it updated the title or body.
	Created, Adopted, Committed, Rebuilt, Edited bool
	// KeptBranch is where the commit someone else had pushed onto the branch (of a closed pull
	// request) was kept before this proposal reused the branch ("" when there was none).
	KeptBranch string
}

// Reporter writes Events, deduplicated by id (observe.Recorder).
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// ReasonInvalidGitPath is the Warning Event of a resizer.io/git-path Kustos refused: the
// proposal goes to the file the default lookup finds, as if the annotation were absent.
const ReasonInvalidGitPath = "InvalidGitPath"

// Writer turns Changes into pull requests. It is safe for concurrent use; calls for one key
// must not overlap (the controller's Lease lock serialises them).
type Writer struct {
	gh   GitHub
	repo Repo
	cfg  Config

	// Reporter writes the InvalidGitPath Warning (nil: the log and the metric only); Log is
	// where the Writer says so; Now is the clock (default time.Now). Set them before the first
	// Propose.
	Reporter Reporter
	Log      logr.Logger
	Now      func() time.Time

	mu      sync.Mutex
	base    string
	ixSHA   string
	ixCache map[string]*index.Index // prefixes → index of snapshot ixSHA
	numbers map[lifecycle.Key]int   // the PR of each key Propose or Track saw
	own     *lru.Cache              // key and commit → whether Kustos wrote it (OwnCommit)
}

// NewWriter returns a Writer over a GitHub client and a reader of the base branch.
func NewWriter(g GitHub, r Repo, cfg Config) *Writer {
	if cfg.RecheckAfter <= 0 {
		cfg.RecheckAfter = 5 * time.Second
	}
	if cfg.PendingAfter <= 0 {
		cfg.PendingAfter = time.Minute
	}
	return &Writer{gh: g, repo: r, cfg: cfg, numbers: map[lifecycle.Key]int{}}
}

// Branch returns the head branch of a Change's PR:
// kustos/<cluster>/<detector>/<namespace>/<name>, each part sanitised to a valid ref component.
func (w *Writer) Branch(c lifecycle.Change) string {
	parts := []string{"kustos"}
	if w.cfg.Cluster != "" {
		parts = append(parts, refComponent(w.cfg.Cluster))
	}
	ns := c.Target.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	parts = append(parts, refComponent(c.Detector), refComponent(ns), refComponent(c.Target.Name))
	return strings.Join(parts, "/")
}

// BranchPrefix is what every branch of this Writer starts with, "kustos/<cluster>/": the
// pull requests it names are Kustos's own in this cluster.
func (w *Writer) BranchPrefix() string {
	if w.cfg.Cluster != "" {
		return "kustos/" + refComponent(w.cfg.Cluster) + "/"
	}
	return "kustos/"
}

// BaseBranch returns the configured base branch or, once, the repository's default branch.
func (w *Writer) BaseBranch(ctx context.Context) (string, error) {
	w.mu.Lock()
	b := w.base
	w.mu.Unlock()
	if b != "" {
		return b, nil
	}
	if w.cfg.BaseBranch != "" {
		b = w.cfg.BaseBranch
	} else {
		var err error
		if b, err = w.gh.DefaultBranch(ctx); err != nil {
			return "", fmt.Errorf("pr: base branch: %w", err)
		}
	}
	w.mu.Lock()
	w.base = b
	w.mu.Unlock()
	return b, nil
}

// Track records that key's PR is number (from the controller's Lease holderIdentity after a
// restart), so that Status and MaybeMerge find a PR that is no longer open.
func (w *Writer) Track(key lifecycle.Key, number int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.numbers[key] = number
}

func (w *Writer) tracked(key lifecycle.Key) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.numbers[key]
	return n, ok
}

func validate(c lifecycle.Change) error {
	switch {
	case c.Key == "":
		return fmt.Errorf("%w: no key", ErrInvalidChange)
	case c.Detector == "":
		return fmt.Errorf("%w: %s: no detector", ErrInvalidChange, c.Key)
	case c.Target.Kind == "" || c.Target.Name == "":
		return fmt.Errorf("%w: %s: target without kind or name", ErrInvalidChange, c.Key)
	case c.Edit.Op == lifecycle.EditSetFields && len(c.Edit.Fields) == 0:
		return fmt.Errorf("%w: %s: SetFields without fields", ErrInvalidChange, c.Key)
	}
	return nil
}

// Propose makes sure exactly one open PR proposes c, as described in the package
// documentation. It is idempotent: calling it again with the same Change after any failure
// converges on the same PR with the same content, and calling it with a different Change for
// the same key updates that PR. Errors wrap the index's, yamledit's and the GitHub client's
// sentinels; none contains a credential.
func (w *Writer) Propose(ctx context.Context, c lifecycle.Change, opts ProposeOptions) (Result, error) {
	if err := validate(c); err != nil {
		return Result{}, err
	}
	res := Result{Branch: w.Branch(c)}
	base, snap, err := w.baseHead(ctx, c.Key)
	if err != nil {
		return res, err
	}

	// 1. Locate and edit the manifest at the base head.
	loc, err := w.locate(ctx, snap, c, opts.GitPath)
	if c.Edit.Op == lifecycle.EditDelete && errors.Is(err, index.ErrSourceNotFound) {
		res.AlreadyInBase = true // the manifest is gone: the deletion is done
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("pr: %s: %w", c.Key, err)
	}
	res.Location = loc
	content, err := fs.ReadFile(snap, loc.Path)
	if err != nil {
		return res, fmt.Errorf("pr: %s: read %s: %w", c.Key, loc.Path, err)
	}
	// The base holding every new value is done (a merged PR waiting for the GitOps tool to
	// sync), even though the file no longer holds the values the detector saw in the cluster.
	if done, err := yamledit.Edit(content, loc.Doc, withoutFrom(c.Edit)); err == nil && !done.Changed {
		res.AlreadyInBase = true
		return res, nil
	}
	ed, err := yamledit.Edit(content, loc.Doc, c.Edit)
	if err != nil {
		return res, fmt.Errorf("pr: %s: edit %s#%d: %w", c.Key, loc.Path, loc.Doc, err)
	}
	res.Fields = ed.Fields
	if !ed.Changed {
		res.AlreadyInBase = true
		return res, nil
	}
	files := []FileChange{{Path: loc.Path, Content: ed.Out}}
	if ed.Deleted && len(yamledit.Documents(ed.Out)) == 0 {
		// The file held only this object: delete the file, and take it out of the
		// kustomizations that list it, in the same commit.
		files[0].Content = nil
		unlisted, err := w.unlist(snap, loc.Path, nil)
		if err != nil {
			return res, fmt.Errorf("pr: %s: %w", c.Key, err)
		}
		files = append(files, unlisted...)
	}
	title := Title(c, ed)
	var also []string
	for _, f := range files[1:] {
		also = append(also, f.Path)
	}
	err = w.publish(ctx, &res, publication{
		key: c.Key, base: base, snap: snap, files: files, title: title,
		body: Body(c, ed, loc, w.cfg.Cluster, also...), head: opts.Head,
		message: func(title, tree string) string { return CommitMessage(c, title, tree) },
	})
	return res, err
}

// baseHead reads the base branch's head commit: the base's name and its snapshot.
func (w *Writer) baseHead(ctx context.Context, key lifecycle.Key) (string, Snapshot, error) {
	base, err := w.BaseBranch(ctx)
	if err != nil {
		return "", nil, err
	}
	ref, err := w.gh.GetRef(ctx, base)
	if err != nil {
		return base, nil, fmt.Errorf("pr: %s: read base %s: %w", key, base, err)
	}
	snap, err := w.repo.Snapshot(ctx, ref.GetObject().GetSHA())
	if err != nil {
		return base, nil, fmt.Errorf("pr: %s: read base %s: %w", key, base, err)
	}
	return base, snap, nil
}

// publication is what publish writes: one commit of files on the base, on the key's branch,
// and the PR that proposes it.
type publication struct {
	key     lifecycle.Key
	base    string
	snap    Snapshot
	files   []FileChange
	title   string
	body    string
	head    string
	message func(title, tree string) string
}

// publish makes sure exactly one open PR of the key proposes p's files on the base head: the
// open one is adopted (unless a human's commit heads it), its branch rewritten when its tree or
// base differ, and its title, body and labels brought up to date.
func (w *Writer) publish(ctx context.Context, res *Result, p publication) error {
	key, branch := p.key, res.Branch
	wantTree, err := p.snap.TreeAfter(p.files...)
	if err != nil {
		return fmt.Errorf("pr: %s: %w", key, err)
	}

	// The one open PR of the key, if any, and whether its branch is already right.
	pr, err := w.gh.FindOpenPR(ctx, branch)
	if err != nil {
		return fmt.Errorf("pr: %s: %w", key, err)
	}
	if pr != nil {
		if err := checkMarker(pr, key); err != nil {
			return err
		}
		res.Adopted = true
	}
	upToDate := false
	if pr != nil {
		head := pr.GetHead().GetSHA()
		cm, err := w.gh.GetCommit(ctx, head)
		if err != nil {
			return fmt.Errorf("pr: %s: read head of #%d: %w", key, pr.GetNumber(), err)
		}
		// A human's commit on the branch (pushed while the Lease did not name the PR yet, or
		// since the pipeline last looked) is never overwritten by a force-push.
		if head != p.head && !IsOwnCommit(cm, key) {
			return &ForeignHeadError{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), err: fmt.Errorf("%w: pull request #%d (%s) has head %s; Kustos leaves it to people", ErrForeignHead,
				pr.GetNumber(), pr.GetHTMLURL(), head)}
		}
		upToDate = cm.GetTree().GetSHA() == wantTree && len(cm.Parents) == 1 && cm.Parents[0].GetSHA() == p.snap.Commit()
		res.HeadSHA = head
	}

	// Commit on the base head and point the branch at it.
	if !upToDate {
		sha, err := w.commit(ctx, p.snap, p.files, p.title, p.message)
		if err != nil {
			return fmt.Errorf("pr: %s: %w", key, err)
		}
		if pr != nil {
			// Only from the head just checked: a person's commit pushed since is kept, and the
			// next look finds it (GitHub's REST API has no compare-and-set for a branch; the
			// client reads it again right before the update, see github.ErrRefMoved).
			if err := w.gh.UpdateRefFrom(ctx, branch, res.HeadSHA, sha); err != nil {
				if errors.Is(err, github.ErrRefMoved) && !w.headIsOwn(ctx, branch, key) {
					return &ForeignHeadError{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), err: fmt.Errorf("%w: pull request #%d (%s) moved while Kustos rebuilt it: %w; Kustos leaves it to people",
						ErrForeignHead, pr.GetNumber(), pr.GetHTMLURL(), err)}
				}
				return fmt.Errorf("pr: %s: %w", key, err) // moved by Kustos itself: look again
			}
			res.Rebuilt = true
		} else if _, err := w.gh.CreateRef(ctx, branch, sha); err != nil {
			if !errors.Is(err, github.ErrAlreadyExists) {
				return fmt.Errorf("pr: %s: %w", key, err)
			}
			// Left by a crash before the PR, or by a PR closed earlier: our commit replaces it,
			// after a commit someone else pushed there is kept on a branch of its own.
			head, kept, err := w.keepForeignHead(ctx, branch, key)
			if err != nil {
				return fmt.Errorf("pr: %s: %w", key, err)
			}
			if err := w.gh.UpdateRefFrom(ctx, branch, head, sha); err != nil {
				return fmt.Errorf("pr: %s: %w", key, err)
			}
			res.Rebuilt, res.KeptBranch = true, kept
		}
		res.Committed, res.HeadSHA = true, sha
	}

	// Open the PR, or bring the open one up to date.
	if pr == nil {
		var adopted bool
		pr, adopted, err = w.gh.CreatePR(ctx, github.NewPR{Title: p.title, Body: p.body, Head: branch, Base: p.base})
		if err != nil {
			return fmt.Errorf("pr: %s: %w", key, err)
		}
		if adopted {
			if err := checkMarker(pr, key); err != nil {
				return err
			}
		}
		res.Created, res.Adopted = !adopted, adopted
	}
	w.Track(key, pr.GetNumber())
	res.Number, res.URL = pr.GetNumber(), pr.GetHTMLURL()
	if pr.GetTitle() != p.title || pr.GetBody() != p.body {
		if _, err := w.gh.EditPR(ctx, pr.GetNumber(), p.title, p.body); err != nil {
			return fmt.Errorf("pr: %s: %w", key, err)
		}
		res.Edited = true
	}
	if missing := missingLabels(pr, w.cfg.Labels); len(missing) > 0 {
		if err := w.gh.AddLabels(ctx, pr.GetNumber(), missing...); err != nil {
			return fmt.Errorf("pr: %s: %w", key, err)
		}
	}
	return nil
}

// KeptBranch is where Kustos keeps a commit someone else pushed onto branch (head sha) before
// its next proposal reuses the branch: branch-kept-<the commit's first 12 hex digits>.
func KeptBranch(branch, sha string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return branch + "-kept-" + sha
}

// keepForeignHead reads the head of branch, which no open pull request holds (the branch of
// a closed one, or left by a crash before the pull request), and, when it is not a commit
// Kustos wrote for key, keeps it on KeptBranch first: the proposal about to reuse the branch
// must not take a person's commits off every branch (the closed pull request still shows
// them, but nothing would lead to them). It returns the head read and the branch kept ("" for
// Kustos's own head).
func (w *Writer) keepForeignHead(ctx context.Context, branch string, key lifecycle.Key) (head, kept string, err error) {
	head, own, err := w.branchHead(ctx, branch, key)
	if err != nil || own {
		return head, "", err
	}
	kept = KeptBranch(branch, head)
	if _, err := w.gh.CreateRef(ctx, kept, head); err != nil && !errors.Is(err, github.ErrAlreadyExists) {
		return "", "", fmt.Errorf("keeping the commit %s someone else pushed onto %s: %w", head, branch, err)
	}
	return head, kept, nil
}

// headIsOwn reports whether branch's head is a commit Kustos wrote for key (false when it
// cannot be read: a person's commit is then assumed, and left alone).
func (w *Writer) headIsOwn(ctx context.Context, branch string, key lifecycle.Key) bool {
	_, own, err := w.branchHead(ctx, branch, key)
	return err == nil && own
}

// branchHead reads branch's head commit and whether Kustos wrote it for key (OwnCommit).
func (w *Writer) branchHead(ctx context.Context, branch string, key lifecycle.Key) (head string, own bool, err error) {
	ref, err := w.gh.GetRef(ctx, branch)
	if err != nil {
		return "", false, err
	}
	head = ref.GetObject().GetSHA()
	own, err = w.OwnCommit(ctx, key, head)
	return head, own, err
}

// commit creates one tree on the base's tree holding every file change (a deleted file is an
// entry without content or SHA) and the commit of that tree whose parent is the base head.
func (w *Writer) commit(ctx context.Context, snap Snapshot, files []FileChange, title string, message func(title, tree string) string) (string, error) {
	entries := make([]*gh.TreeEntry, 0, len(files))
	for _, f := range files {
		mode := "100644"
		if fi, err := fs.Stat(snap, f.Path); err == nil && fi.Mode()&0o111 != 0 {
			mode = "100755"
		}
		e := &gh.TreeEntry{Path: gh.String(f.Path), Mode: gh.String(mode), Type: gh.String("blob")}
		if f.Content != nil {
			e.Content = gh.String(string(f.Content))
		}
		entries = append(entries, e)
	}
	t, err := w.gh.CreateTree(ctx, snap.Tree(), entries)
	if err != nil {
		return "", err
	}
	cm, err := w.gh.CreateCommit(ctx, message(title, t.GetSHA()), t.GetSHA(), []string{snap.Commit()})
	if err != nil {
		return "", err
	}
	return cm.GetSHA(), nil
}

// locate finds c's target under the --git-path prefixes, or below the namespace's
// resizer.io/git-path (gitPath) on the same index: the files the check reads are the files the
// edit changes. A git-path the index refuses (index.ErrGitPathRefused: not clean, outside
// --git-path, or naming objects of another namespace) is reported (an InvalidGitPath Warning
// on the target, a log line, kustos_invalid_input_total{kind="git_path"}) and the target is
// looked up as if the annotation were absent.
func (w *Writer) locate(ctx context.Context, snap Snapshot, c lifecycle.Change, gitPath string) (index.Location, error) {
	ix, err := w.index(snap, w.cfg.Paths)
	if err != nil {
		return index.Location{}, err
	}
	if gitPath != "" {
		loc, err := ix.LocateIn(gitPath, c.Target)
		if !errors.Is(err, index.ErrGitPathRefused) {
			return loc, err
		}
		w.refusedGitPath(ctx, c, err)
	}
	return ix.Locate(c.Target)
}

// refusedGitPath reports a refused git-path: the Event once while it lives (its id names the
// key and the message, which names the path and the reason); a failed Event write is logged,
// not returned: the proposal goes on without the override either way.
func (w *Writer) refusedGitPath(ctx context.Context, c lifecycle.Change, err error) {
	metrics.InvalidInput.WithLabelValues(lifecycle.DetectorLabel(c.Detector), "git_path").Inc()
	msg := err.Error() + "; the manifest is looked up as if the annotation were absent"
	w.Log.Info("resizer.io/git-path refused", "key", string(c.Key), "namespace", c.Target.Namespace, "reason", msg)
	if w.Reporter == nil {
		return
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	ref := corev1.ObjectReference{APIVersion: c.Target.APIVersion(), Kind: c.Target.Kind, Namespace: c.Target.Namespace, Name: c.Target.Name}
	id := "invalid-git-path|" + string(c.Key) + "|" + msg
	if rerr := w.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, ReasonInvalidGitPath, msg, id, now()); rerr != nil {
		w.Log.Error(rerr, "writing the InvalidGitPath Event", "key", string(c.Key))
	}
}

// index returns the index of snap under prefixes, built once per base commit.
func (w *Writer) index(snap Snapshot, prefixes []string) (*index.Index, error) {
	key := strings.Join(prefixes, "\x00")
	w.mu.Lock()
	if w.ixSHA != snap.Commit() {
		w.ixSHA, w.ixCache = snap.Commit(), map[string]*index.Index{}
	}
	ix := w.ixCache[key]
	w.mu.Unlock()
	if ix != nil {
		return ix, nil
	}
	ix, err := index.Build(snap, prefixes)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.ixSHA == snap.Commit() && len(w.ixCache) < 64 {
		w.ixCache[key] = ix
	}
	w.mu.Unlock()
	return ix, nil
}

// checkMarker refuses a PR whose body names another key.
func checkMarker(pr *gh.PullRequest, key lifecycle.Key) error {
	if k, ok := MarkerKey(pr.GetBody()); ok && k != key {
		return fmt.Errorf("%w: PR #%d from %s is for %s, not %s", ErrBranchTaken, pr.GetNumber(), pr.GetHead().GetRef(), k, key)
	}
	return nil
}

func missingLabels(pr *gh.PullRequest, want []string) []string {
	var have []string
	for _, l := range pr.Labels {
		have = append(have, strings.ToLower(l.GetName()))
	}
	var out []string
	for _, l := range want {
		if l != "" && !slices.Contains(have, strings.ToLower(l)) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// withoutFrom drops the values the detector observed, leaving only the target values.
func withoutFrom(e lifecycle.Edit) lifecycle.Edit {
	out := lifecycle.Edit{Op: e.Op, Annotations: e.Annotations}
	for _, f := range e.Fields {
		f.From = ""
		out.Fields = append(out.Fields, f)
	}
	return out
}
