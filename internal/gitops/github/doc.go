// Package github owns Kustos's connection to the GitHub REST API: credentials (a GitHub App
// installation through ghinstallation, or a token file that is re-read when a Secret rotates),
// a resilient http.RoundTripper chain (per-attempt timeout, retries with capped exponential
// backoff and jitter, primary and secondary rate-limit handling, serialized mutations,
// conditional GETs with an ETag cache), the Prometheus metrics of that traffic, and a thin
// Client over go-github v60 that exposes exactly the calls the PR actuator and the PR budget
// need (OpenPullRequests and PullRequestsCreatedSince list Kustos's own pull requests), with
// errors classified as ErrNotFound, ErrConflict, ErrValidation, ErrRateLimited and friends.
//
// The chain keeps Kustos under GitHub's secondary limits on its own: content-creating requests
// are paced (WithWriteRate: 60 a minute with a burst of 15, 450 an hour, below GitHub's 80 and
// 500), at most WithMaxInFlight requests are on the wire at once (8, GitHub allows 100), and
// a secondary-limit answer pauses every request of the client (reads, writes and the App's
// token exchange alike) until its Retry-After, or a minute and doubling when it names none; a
// later, shorter answer never shortens the pause. A wait longer than WithMaxRateLimitWait,
// the hourly budget's included, is not slept: the request fails with a *RateLimitError whose
// Reset says when to come back, so the caller requeues without holding a worker. A refusal
// of the configured credentials is ErrCredentials naming the flag to fix (see
// Client.CheckCredentials); a GitHub App's installation tokens are narrowed to the one
// repository and TokenPermissions, and Client.GitToken hands the same token to Git.
//
// It knows nothing about quotas, YAML or Leases; the PR writer in package gitops composes these
// calls. Secret material (private keys, tokens) never appears in errors, logs or metrics.
package github
