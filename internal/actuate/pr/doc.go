// Package pr is the PR writer of the PR actuator: it turns one lifecycle.Change into exactly one
// pull request in the GitOps repository, idempotently, so that any step can fail or crash and be
// retried by calling it again.
//
// Writer.Propose locates the target's manifest at the head of the base branch (package index,
// honouring a resizer.io/git-path override that the same index accepts: clean, under --git-path,
// naming objects of the target's namespace only; a refused one is an InvalidGitPath Warning and
// the default lookup), applies the edit there (package yamledit), and —
// unless the base already holds the new values (AlreadyInBase: a merged PR waiting for Argo CD
// or Flux to sync) — makes sure that the deterministic branch
// kustos/<cluster>/<detector>/<namespace>/<name> holds exactly one commit on top of the current
// base with that edit, and that exactly one open pull request from it carries the current title,
// body and labels. Commits go through the Git Data API (tree with base_tree, commit, ref), so a
// GitHub App's commits are signed by GitHub and no push credential exists. The state lives in
// GitHub, not in the Writer: an open PR from the branch is adopted, a branch left by a crash is
// overwritten with the equivalent commit, a branch behind or in conflict with a moved base is
// rebuilt on the new base (force-updated), and "A pull request already exists" is adoption, not
// an error. Writer.Status reads the PR with conditional requests; Writer.MaybeMerge squash-merges
// it only when it is open, mergeable and clean, pinned to the head SHA that was checked.
//
// The Writer consumes two small interfaces declared here: GitHub (the methods of
// *github.Client it calls) and Repo (read the base branch's files at a commit). GitRepo
// implements Repo with go-git: an in-memory, single-branch, depth-1 clone over HTTPS with the
// installation token, made again only when the base head moved. Reading the base through Git
// instead of the contents API keeps the REST budget for the PR itself (the index needs every
// manifest under --git-path, which would cost one REST call per file), and the local object
// database lets the Writer compute the tree SHA its commit must have, so "is the branch already
// right?" is one GetCommit, not a diff.
//
// Locks (the Lease holderIdentity), the cooldown after a human closed a PR, the check that the
// head is the commit Kustos wrote and the auto-merge policy are the pipeline's
// (internal/pipeline); the Writer only reports (Status, ClosedSince) and acts when told
// (Propose, MergeIfReady).
//
// The title, body and commit message are pure functions of the Change (render.go,
// render_group.go); chart.go draws a quota's usage window, carried in its evidence, as a
// Mermaid chart built from parsed values only, so that tenant text cannot escape it, and
// activity.go likewise an inactivity pause's last activity per source against its timeout.
package pr
