// Package github owns Kustos's connection to the GitHub REST API: credentials (a GitHub App
// installation through ghinstallation, or a token file that is re-read when a Secret rotates),
// a resilient http.RoundTripper chain (per-attempt timeout, retries with capped exponential
// backoff and jitter, primary and secondary rate-limit handling, serialized mutations,
// conditional GETs with an ETag cache), the Prometheus metrics of that traffic, and a thin
// Client over go-github v60 that exposes exactly the calls the PR actuator needs, with errors
// classified as ErrNotFound, ErrConflict, ErrValidation, ErrRateLimited and friends. A refusal
// of the configured credentials is ErrCredentials naming the flag to fix (see
// Client.CheckCredentials); a GitHub App's installation tokens are narrowed to the one
// repository and TokenPermissions, and Client.GitToken hands the same token to Git.
//
// It knows nothing about quotas, YAML or Leases; the PR writer in package gitops composes these
// calls. Secret material (private keys, tokens) never appears in errors, logs or metrics.
package github
