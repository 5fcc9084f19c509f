// Package githubtest is a test-only, GitHub-compatible server for the gitops package and the
// end-to-end tests. It owns everything under internal/gitops/githubtest/ and nothing else; the
// OpenAPI description it checks against is installed by hack/setup-openapi.sh (`make testbin`).
//
// # What it serves
//
// [New] starts an httptest.Server on 127.0.0.1 that serves, like GitHub Enterprise Server:
//
//   - the REST API under <url>/api/v3/ — [Server.URL] returns that prefix with a trailing slash,
//     ready for go-github's Client.BaseURL (or github.NewClient(nil).WithEnterpriseURLs(URL(),
//     URL())). The same endpoints are also answered without the /api/v3 prefix. ghinstallation's
//     BaseURL is [Server.APIURL] (no trailing slash).
//   - real bare Git repositories over smart HTTP at <url>/<owner>/<repo>.git
//     ([Server.GitURL]), through `git http-backend` run by net/http/cgi. Basic auth with an
//     installation token ("x-access-token:<token>") is required for fetch and push.
//
// Repositories are bare repositories under t.TempDir(), created by [Server.SeedRepo]. All Git
// object work (blobs, trees, commits, refs, squash merges, conflict detection with
// `git merge-tree --write-tree`) is done with real git plumbing on those repositories, so what a
// test clones is exactly what the REST API reported.
//
// # REST endpoints
//
//	GET    /repos/{owner}/{repo}
//	GET    /repos/{owner}/{repo}/git/ref/{ref}
//	POST   /repos/{owner}/{repo}/git/refs
//	PATCH  /repos/{owner}/{repo}/git/refs/{ref}            (force; non-fast-forward → 422)
//	DELETE /repos/{owner}/{repo}/git/refs/{ref}
//	GET    /repos/{owner}/{repo}/git/commits/{commit_sha}
//	POST   /repos/{owner}/{repo}/git/commits               (verification.verified: true)
//	POST   /repos/{owner}/{repo}/git/trees                 (base_tree, nested paths, sha: null deletes)
//	GET    /repos/{owner}/{repo}/contents/{path}?ref=
//	GET    /repos/{owner}/{repo}/pulls?state=&head=&base=&sort=&direction=&per_page=&page=
//	       (sort created or updated; a Link header with next/last/prev/first, as GitHub)
//	POST   /repos/{owner}/{repo}/pulls                     (422 "A pull request already exists for o:b.")
//	GET    /repos/{owner}/{repo}/pulls/{pull_number}       (mergeable null first, ETag/If-None-Match → 304)
//	PATCH  /repos/{owner}/{repo}/pulls/{pull_number}
//	PUT    /repos/{owner}/{repo}/pulls/{pull_number}/merge (squash or merge; sha mismatch → 409)
//	PUT    /repos/{owner}/{repo}/pulls/{pull_number}/update-branch (merges base into head, 202)
//	POST   /repos/{owner}/{repo}/issues/{issue_number}/labels
//	POST   /repos/{owner}/{repo}/issues/{issue_number}/comments
//	GET    /repos/{owner}/{repo}/commits/{ref}/status
//	GET    /repos/{owner}/{repo}/commits/{ref}/check-runs
//	POST   /app/installations/{installation_id}/access_tokens (RS256 app JWT; repositories,
//	       repository_ids, permissions)
//
// Every response carries x-ratelimit-{limit,remaining,reset,used,resource}; a 304 does not
// consume the limit. Authentication: REST calls need "Authorization: token|Bearer <token>"
// with a token the server issued ([Server.Token] or the access_tokens endpoint).
//
// Token scope: the access_tokens endpoint answers 401 to a JWT it cannot verify (unknown App
// ID, foreign key), 404 to another App's or installation's ID, and 422 to a request for a
// repository outside [Options].InstallationRepositories or a permission beyond
// [Options].AppPermissions, as GitHub does; [Server.TokenRequests] records what each request
// asked for. A token narrowed to repositories gets 404 from every other repository (REST and
// Git), and one narrowed to permissions gets 403 "Resource not accessible by integration" from
// an endpoint needing more (each route names the permissions it needs; fetching needs
// contents: read, pushing contents: write). [Server.Token] has all of the installation's.
//
// # Secondary rate limits
//
// The server enforces GitHub's secondary rate limits on REST calls ([SecondaryLimits], by
// default GitHub's numbers): at most 100 requests in progress at once, 80 content-creating
// requests (POST, PATCH, PUT, DELETE; the token exchange excepted) in any minute and 500 in any
// hour, and 900 points per endpoint (method and path template) in any minute, a read costing 1
// and a write 5. A request over a limit gets GitHub's answer: 403 with "You have exceeded a
// secondary rate limit…", its documentation_url and Retry-After (seconds until the window
// frees; 60 for concurrency), checked against the contract like any other error answer. It
// does nothing and is not counted in the windows.
// [Server.SecondaryLimited] and [Server.SecondaryLimitedBy] count them, and the request log
// names the limit (Request.Limited), so a test or a bench can assert that a client met none.
// The windows run on [Options].Now, which a test shares with a client's fake clock to pace
// hours of traffic in a second; the same clock stamps pull requests, statuses, check runs and
// comments (created_at, updated_at). Git over HTTP is not limited.
//
// # Contract checking
//
// Every request to and every response from a REST endpoint is validated with kin-openapi
// against the matching operation of GitHub's official description
// (@octokit/openapi, generated/api.github.com.json): path/query parameters, request body,
// status code (must be declared), content type and response body schema. A violation is
// reported with t.Errorf naming the operation, the status and the error. The spec is loaded once
// per process ([LoadContract]); its path is $GITHUBTEST_OPENAPI_SPEC or
// <repo root>/bin/openapi/node_modules/@octokit/openapi/generated/api.github.com.json, and a
// missing spec fails the test with "run make testbin".
//
// Cost: kin-openapi needs about 15-40 s to resolve every $ref of the full 13 MB description, so
// the description is pruned first (encoding/json, ~0.2 s) to the paths this server serves and
// the components they reference transitively, without media-type examples; the schemas of the
// kept operations are unchanged. Loading then takes ~0.3 s once per test binary, and checking
// one message costs well under a millisecond to a few milliseconds (full pull-request bodies).
//
// Relaxations (see contract.go): the document itself is not run through openapi3.T.Validate
// (slow, and irrelevant for checking messages); security requirements are not checked
// (authentication is enforced by the server itself); string formats are not checked
// (kin-openapi's default; GitHub uses formats such as "uri" and "repo.nwo"); responses injected
// as faults, and error statuses the description does not declare for an operation (401 is
// declared almost nowhere), are not validated — undeclared success statuses are violations. Two
// request bodies that GitHub accepts but the schema does not describe are normalised before
// validation: go-github's bare JSON array for "add labels" (validated as {"labels": [...]}) and
// ghinstallation's JSON null body for the token exchange (validated as no body).
//
// A call to an endpoint the fake does not implement is reported as a test error too (GitHub
// would have answered it), so a gap in the fake cannot pass silently.
//
// # Example
//
//	s := githubtest.New(t, githubtest.Options{})
//	s.SeedRepo("acme", "gitops", "main", map[string]string{"clusters/prod/quota.yaml": "..."})
//	gh, _ := github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
//	// clone: s.GitURL("acme", "gitops") with BasicAuth{"x-access-token", s.Token()}
//	s.SetRequiredChecks("acme", "gitops", "ci/validate")
//	... Kustos opens PR #1 ...
//	pr, _ := s.PR("acme", "gitops", 1)
//	s.SetCheck("acme", "gitops", pr.HeadSHA, "ci/validate", "success")
//
// # Test controls
//
// All take the repository (owner, name), since pull request numbers are per repository:
// [Server.SetRequiredChecks], [Server.SetCheck] (check runs), [Server.SetStatus] (commit
// statuses), [Server.SetRequireUpToDate] (branches must be up to date before merging),
// [Server.ClosePR], [Server.PushBaseCommit], [Server.PR] / [Server.PRs] (snapshots),
// [Server.BranchSHA], [Server.FileAt], [Server.Requests] / [Server.CountRequests] (log of
// method, path template, status), [Server.Inject] / [Server.ClearFaults] (per-endpoint faults:
// 5xx, 429 and 403 secondary rate limits with GitHub's body and Retry-After, delays),
// [Server.SetRateLimitRemaining] (primary rate limit), [Server.RevokeTokens]. For the App
// flow, [NewAppKey] makes a key and [Options].AppKey or [Server.RegisterAppKey] registers it;
// [Server.Token] hands out an installation token directly.
//
// Mergeability: after any change of head or base (API, push, PushBaseCommit), the first
// GET of the pull request answers mergeable null / mergeable_state "unknown" and starts the
// computation (`git merge-tree`); later reads wait for it and answer true/false with
// mergeable_state "dirty" (conflict), "draft", "behind" (SetRequireUpToDate and the head lacks
// commits of the base), "blocked" (a required context lacks a successful status or check run
// on the head) or "clean". Responses to POST and PATCH never
// start it. A merge (squash: one commit with the merged tree on top of the base, "merge": two
// parents) is refused with 409 when sha is not the head, 405 when closed, conflicting, draft,
// behind or blocked. update-branch writes a merge commit (parents: head, base) on the head
// branch before it answers 202; it answers 422 when expected_head_sha is not the head, when
// the head already has the base's commits, or when the base conflicts with the head.
package githubtest
