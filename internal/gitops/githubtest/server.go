package githubtest

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const apiPrefix = "/api/v3"

// Options configure a Server. The zero value is usable.
type Options struct {
	// AppID and InstallationID identify the GitHub App whose installation tokens the server
	// issues (defaults 1 and 1). Register the App's key with Server.RegisterAppKey or AppKey.
	AppID          int64
	InstallationID int64
	// AppKey is the public half of the App's private key (RS256); optional.
	AppKey *rsa.PublicKey
	// AppPermissions are the permissions the App's installation was granted (nil:
	// DefaultAppPermissions). A token request asking for more is refused with GitHub's 422.
	AppPermissions map[string]string
	// InstallationRepositories lists the repositories ("owner/name") the installation may
	// access; nil: all. Tokens reach no other repository, and a token request naming one is
	// refused with GitHub's 422.
	InstallationRepositories []string
	// AppSlug names the App's bot user ("<slug>[bot]"), default "kustos".
	AppSlug string
	// RateLimit is x-ratelimit-limit, default 5000 per hour.
	RateLimit int
	// TokenTTL is the lifetime of installation tokens, default 1h.
	TokenTTL time.Duration
	// ContractErrorf reports contract violations; default t.Errorf. Tests of the checker
	// replace it.
	ContractErrorf func(format string, args ...any)
	// Limits are the secondary rate limits the server enforces; the zero value is GitHub's
	// (see SecondaryLimits).
	Limits SecondaryLimits
	// Now is the server's clock for the windows of Limits and the times of pull requests,
	// statuses, check runs and comments (created_at, updated_at, …); default time.Now. A test
	// pacing a client on a fake clock gives the server the same clock. Installation tokens
	// expire by the real time.
	Now func() time.Time
}

// Request is one entry of the request log.
type Request struct {
	Method string
	// Path is the OpenAPI path template of a REST call (e.g.
	// "/repos/{owner}/{repo}/pulls/{pull_number}"), "/{owner}/{repo}.git/..." for Git smart
	// HTTP, or the raw path when nothing matched.
	Path string
	// URL is the request URI as received.
	URL    string
	Status int
	// Faulted is true when the response came from Inject.
	Faulted bool
	// Limited names the secondary limit that refused the request (LimitConcurrent, …), or "".
	Limited string
	// Git is true for smart HTTP (clone/fetch/push) requests.
	Git bool
}

// TB is the part of testing.TB the server uses; testing.TB satisfies it. A program that is not
// a test (cmd/kustos-demo) implements it to run the server. Fatalf must not return: testing.TB
// stops the goroutine, other implementations panic.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Server is a GitHub-compatible server for tests. See the package documentation.
type Server struct {
	t        TB
	opts     Options
	srv      *httptest.Server
	contract *Contract
	lim      *limiter
	root     string // GIT_PROJECT_ROOT
	backend  string // git-http-backend
	started  time.Time

	mu       sync.Mutex
	repos    map[string]*repo
	tokens   map[string]*grant
	appKeys  map[int64]*rsa.PublicKey
	requests []Request
	// tokenRequests logs the installation-token exchanges.
	tokenRequests []TokenRequest
	faults        []*fault
	nextID        int64
	token         string

	rateUsed      int
	rateRemaining int

	// mutateResponse, when set, may rewrite a response before it is checked (tests of the
	// contract checker).
	mutateResponse func(template string, status int, body []byte) (int, []byte)
}

// New starts a server on 127.0.0.1; it is closed when the test ends. The test fails (never
// skips) when GitHub's OpenAPI description is not installed.
func New(t TB, opts Options) *Server {
	t.Helper()
	if opts.AppID == 0 {
		opts.AppID = 1
	}
	if opts.InstallationID == 0 {
		opts.InstallationID = 1
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "kustos"
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 5000
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	c, err := LoadContract()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	backend, err := findHTTPBackend()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	s := &Server{
		t:             t,
		opts:          opts,
		contract:      c,
		lim:           newLimiter(opts.Limits),
		root:          t.TempDir(),
		backend:       backend,
		started:       time.Now(),
		repos:         map[string]*repo{},
		tokens:        map[string]*grant{},
		appKeys:       map[int64]*rsa.PublicKey{},
		nextID:        1000,
		rateRemaining: opts.RateLimit,
	}
	if opts.AppKey != nil {
		s.appKeys[opts.AppID] = opts.AppKey
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() { s.srv.Close() }

// URL is the REST API base URL, "<server>/api/v3/" (GitHub Enterprise layout), for go-github's
// BaseURL.
func (s *Server) URL() string { return s.srv.URL + apiPrefix + "/" }

// APIURL is URL without the trailing slash, e.g. for ghinstallation's Transport.BaseURL.
func (s *Server) APIURL() string { return s.srv.URL + apiPrefix }

// GitURL is the HTTPS-style clone URL of a repository, "<server>/<owner>/<repo>.git".
func (s *Server) GitURL(owner, repo string) string {
	return s.srv.URL + "/" + owner + "/" + repo + ".git"
}

// Client is the server's http.Client.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Contract returns the loaded OpenAPI description (its LoadDuration says what loading cost).
func (s *Server) Contract() *Contract { return s.contract }

// Token returns a valid installation token for the server's App installation, issued once per
// server, for tests that do not exercise the JWT exchange. It has all of the installation's
// permissions and repositories.
func (s *Server) Token() string {
	perms := s.installationPermissions()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" {
		g := &grant{perms: perms}
		if s.opts.InstallationRepositories != nil {
			g.repos = map[string]bool{}
			for _, r := range s.opts.InstallationRepositories {
				g.repos[r] = true
			}
		}
		s.token, _ = s.issueTokenLocked(g)
	}
	return s.token
}

// RegisterAppKey registers the public key that App appID signs its JWTs with.
func (s *Server) RegisterAppKey(appID int64, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appKeys[appID] = key
}

// SetRateLimitRemaining sets x-ratelimit-remaining; at 0 every REST call gets GitHub's primary
// rate-limit 403 until the remaining count is raised again.
func (s *Server) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateRemaining = n
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests counts logged REST requests with the method and path template; method "" or
// template "" matches any.
func (s *Server) CountRequests(method, template string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Git {
			continue
		}
		if (method == "" || r.Method == method) && (template == "" || r.Path == template) {
			n++
		}
	}
	return n
}

// ResetRequests clears the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) logRequest(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

func (s *Server) newID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// ---- HTTP plumbing -------------------------------------------------------------------------

// call is one REST request being served.
type call struct {
	s      *Server
	r      *http.Request
	p      map[string]string
	body   []byte
	header http.Header // response headers set by the handler
	repo   *repo
}

// reply is a handler's result: a status and a value encoded as JSON (nil: no body).
type reply struct {
	status int
	v      any
	// limited names the secondary limit that answered (for the request log).
	limited string
}

func ok(status int, v any) reply { return reply{status: status, v: v} }

// rawBody is a reply body sent as is (custom media types such as application/vnd.github.raw).
type rawBody struct {
	contentType string
	data        []byte
}

// wantsRaw reports whether the client asked for the raw media type.
func wantsRaw(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), ".raw")
}

const docsBase = "https://docs.github.com/rest"

func ghError(status int, message, doc string) reply {
	if doc == "" {
		doc = docsBase
	}
	return reply{status: status, v: map[string]any{"message": message, "documentation_url": doc, "status": strconv.Itoa(status)}}
}

func notFound() reply { return ghError(404, "Not Found", docsBase) }

// validationFailed is GitHub's 422 body with one error entry.
func validationFailed(doc string, e map[string]any) reply {
	return reply{status: 422, v: map[string]any{
		"message":           "Validation Failed",
		"errors":            []any{e},
		"documentation_url": doc,
		"status":            "422",
	}}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if isGitPath(p) {
		s.serveGit(w, r)
		return
	}
	p = strings.TrimPrefix(p, apiPrefix)
	rt, params := matchRoute(r.Method, p)
	if rt == nil {
		// Kustos called an endpoint this fake does not implement: GitHub would have answered,
		// so the test cannot be trusted. Add the endpoint here.
		s.contractErrorf("githubtest: %s %s is not implemented by the fake GitHub server", r.Method, p)
		s.logRequest(Request{Method: r.Method, Path: p, URL: r.URL.RequestURI(), Status: 404})
		s.writeREST(w, r, "", nil, ghError(404, "Not Found", docsBase), nil)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()

	// Secondary limits come first: GitHub's front end answers before the application does.
	if reason, wait := s.lim.admit(r.Method, rt.template, s.now()); reason != "" {
		res, hdr := s.secondaryLimitReply(reason, wait)
		s.writeREST(w, r, rt.template, params, res, hdr)
		return
	}
	defer s.lim.done()

	// Then faults, for the same reason.
	if f := s.takeFault(r.Method, rt.template, p); f != nil {
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
			}
		}
		if f.Status != 0 {
			status, hdr, b := f.response()
			for k, v := range hdr {
				w.Header()[k] = v
			}
			s.rateHeaders(w.Header(), true)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			s.logRequest(Request{Method: r.Method, Path: rt.template, URL: r.URL.RequestURI(), Status: status, Faulted: true})
			w.WriteHeader(status)
			_, _ = w.Write(b)
			return
		}
	}

	// Contract: the request as sent by the client.
	vreq := r.Clone(r.Context())
	vreq.URL.Path = p
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	if err := s.contract.CheckRequest(vreq, rt.template, params); err != nil {
		s.contractErrorf("githubtest: request %s %s (%s) violates GitHub's OpenAPI description: %s", r.Method, rt.template, r.URL.RequestURI(), shortErr(err))
	}

	c := &call{s: s, r: r, p: params, body: body, header: http.Header{}}
	var res reply
	if s.rateExhausted() {
		res = ghError(403, "API rate limit exceeded for installation ID "+strconv.FormatInt(s.opts.InstallationID, 10)+".", "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit")
	} else if g, res2, authed := s.authenticate(c, rt); !authed {
		res = res2
	} else if rp, ok := params["repo"]; ok && rt.template != "/app/installations/{installation_id}/access_tokens" {
		rep := s.repo(params["owner"], rp)
		switch {
		case rep == nil || !g.reaches(params["owner"]+"/"+rp):
			res = notFound()
		case !g.allows(rt.perms):
			res = ghError(403, "Resource not accessible by integration", docsBase)
		default:
			c.repo = rep
			res = rt.handler(c)
		}
	} else {
		res = rt.handler(c)
	}
	s.writeREST(w, r, rt.template, params, res, c.header)
}

// writeREST encodes a reply, applies ETag / If-None-Match, checks it against the contract, and
// writes it with rate-limit headers.
func (s *Server) writeREST(w http.ResponseWriter, r *http.Request, template string, params map[string]string, res reply, extra http.Header) {
	var body []byte
	raw, isRaw := res.v.(rawBody)
	if isRaw {
		body = raw.data
	} else if res.v != nil {
		var err error
		body, err = json.Marshal(res.v)
		if err != nil {
			s.t.Errorf("githubtest: encoding %s %s: %v", r.Method, template, err)
			res = ghError(500, "Server Error", "")
			body, _ = json.Marshal(res.v)
		}
	}
	status := res.status
	hdr := http.Header{}
	for k, v := range extra {
		hdr[k] = v
	}
	if isRaw {
		hdr.Set("Content-Type", raw.contentType)
	} else if body != nil {
		hdr.Set("Content-Type", "application/json; charset=utf-8")
	}
	if r.Method == http.MethodGet && status == 200 {
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:]) + `"`
		hdr.Set("ETag", etag)
		hdr.Set("Cache-Control", "private, max-age=60, s-maxage=60")
		hdr.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
			status = http.StatusNotModified
			body = nil
			hdr.Del("Content-Type")
		}
	}
	if s.mutateResponse != nil && template != "" {
		status, body = s.mutateResponse(template, status, body)
	}
	switch {
	case template == "":
	case isRaw:
		// Custom media types (application/vnd.github.raw) are not described: check the status.
		if !s.contract.Declares(r.Method, template, status) {
			s.contractErrorf("githubtest: response %s %s: status %d is not declared by GitHub's OpenAPI description", r.Method, template, status)
		}
	default:
		s.checkResponse(r, template, params, status, hdr, body)
	}
	s.rateHeaders(hdr, status != http.StatusNotModified)
	hdr.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	hdr.Set("X-GitHub-Media-Type", "github.v3; format=json")
	hdr.Set("X-GitHub-Request-Id", fmt.Sprintf("%X:%X", time.Now().UnixNano()&0xffffff, s.newID()))
	// Logged before the client can see the response, so a test counting calls right after a
	// call returns sees it.
	if template != "" {
		s.logRequest(Request{Method: r.Method, Path: template, URL: r.URL.RequestURI(), Status: status, Limited: res.limited})
	}
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	if body != nil {
		_, _ = w.Write(body)
	}
}

func (s *Server) checkResponse(r *http.Request, template string, params map[string]string, status int, hdr http.Header, body []byte) {
	if !s.contract.Declares(r.Method, template, status) {
		if status >= 400 || status == http.StatusNotModified {
			// GitHub's description leaves many error statuses undeclared (401 almost
			// everywhere, 404 on several operations); those bodies are GitHub's basic-error.
			return
		}
		s.contractErrorf("githubtest: response %s %s: status %d is not declared by GitHub's OpenAPI description", r.Method, template, status)
		return
	}
	vreq := r.Clone(r.Context())
	vreq.URL.Path = strings.TrimPrefix(vreq.URL.Path, apiPrefix)
	vreq.Body = http.NoBody
	if err := s.contract.CheckResponse(vreq, template, params, status, hdr, body); err != nil {
		s.contractErrorf("githubtest: response %s %s status %d violates GitHub's OpenAPI description: %s", r.Method, template, status, shortErr(err))
	}
}

func (s *Server) contractErrorf(format string, args ...any) {
	if s.opts.ContractErrorf != nil {
		s.opts.ContractErrorf(format, args...)
		return
	}
	s.t.Errorf(format, args...)
}

func etagMatch(inm, etag string) bool {
	for _, part := range strings.Split(inm, ",") {
		part = strings.TrimSpace(part)
		if part == "*" || strings.TrimPrefix(part, "W/") == etag {
			return true
		}
	}
	return false
}

func (s *Server) rateExhausted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateRemaining <= 0
}

// rateHeaders sets x-ratelimit-*; consume is false for 304 responses, which GitHub does not
// count.
func (s *Server) rateHeaders(h http.Header, consume bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if consume && s.rateRemaining > 0 {
		s.rateRemaining--
		s.rateUsed++
	}
	reset := s.started.Add(time.Hour).Unix()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(s.rateRemaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	h.Set("X-RateLimit-Used", strconv.Itoa(s.rateUsed))
	h.Set("X-RateLimit-Resource", "core")
}

// ---- routing ---------------------------------------------------------------------------------

type route struct {
	method   string
	template string // OpenAPI path template
	handler  func(*call) reply
	// perms are the installation-token permissions the endpoint needs, all of them, as
	// "permission:level" (GitHub's "Permissions required for GitHub Apps"; where GitHub
	// accepts one of several, the fake asks for the one Kustos requests).
	perms  []string
	segs   []string
	greedy int // index of the parameter that may span several segments, or -1
}

var routes []*route

func init() {
	add := func(method, template string, h func(*call) reply, perms ...string) {
		rt := &route{method: method, template: template, handler: h, perms: perms, segs: strings.Split(strings.Trim(template, "/"), "/"), greedy: -1}
		for i, sg := range rt.segs {
			if sg == "{ref}" || sg == "{path}" {
				rt.greedy = i
			}
		}
		routes = append(routes, rt)
	}
	const (
		metaR     = "metadata:read"
		contentsR = "contents:read"
		contentsW = "contents:write"
		pullsR    = "pull_requests:read"
		pullsW    = "pull_requests:write"
		issuesW   = "issues:write"
	)
	add("GET", "/repos/{owner}/{repo}", (*call).getRepo, metaR)
	add("GET", "/repos/{owner}/{repo}/git/ref/{ref}", (*call).getRef, contentsR)
	add("POST", "/repos/{owner}/{repo}/git/refs", (*call).createRef, contentsW)
	add("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", (*call).updateRef, contentsW)
	add("DELETE", "/repos/{owner}/{repo}/git/refs/{ref}", (*call).deleteRef, contentsW)
	add("GET", "/repos/{owner}/{repo}/git/commits/{commit_sha}", (*call).getCommit, contentsR)
	add("POST", "/repos/{owner}/{repo}/git/commits", (*call).createCommit, contentsW)
	add("POST", "/repos/{owner}/{repo}/git/trees", (*call).createTree, contentsW)
	add("GET", "/repos/{owner}/{repo}/git/blobs/{file_sha}", (*call).getBlob, contentsR)
	add("GET", "/repos/{owner}/{repo}/contents/{path}", (*call).getContents, contentsR)
	add("GET", "/repos/{owner}/{repo}/pulls", (*call).listPulls, pullsR)
	add("POST", "/repos/{owner}/{repo}/pulls", (*call).createPull, pullsW)
	add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", (*call).getPull, pullsR)
	add("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}", (*call).updatePull, pullsW)
	add("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge", (*call).mergePull, contentsW, pullsW)
	add("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch", (*call).updateBranch, contentsW, pullsW)
	add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels", (*call).addLabels, issuesW)
	add("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", (*call).createComment, issuesW)
	add("GET", "/repos/{owner}/{repo}/commits/{ref}/status", (*call).combinedStatus, "statuses:read")
	add("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", (*call).listCheckRuns, "checks:read")
	add("POST", "/app/installations/{installation_id}/access_tokens", (*call).createAccessToken)
}

func matchRoute(method, path string) (*route, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range routes {
		if rt.method != method {
			continue
		}
		if p, ok := rt.match(segs); ok {
			return rt, p
		}
	}
	return nil, nil
}

func (rt *route) match(segs []string) (map[string]string, bool) {
	params := map[string]string{}
	bind := func(t, v string) bool {
		if strings.HasPrefix(t, "{") {
			if v == "" {
				return false
			}
			params[strings.Trim(t, "{}")] = v
			return true
		}
		return t == v
	}
	if rt.greedy < 0 {
		if len(segs) != len(rt.segs) {
			return nil, false
		}
		for i, t := range rt.segs {
			if !bind(t, segs[i]) {
				return nil, false
			}
		}
		return params, true
	}
	suffix := rt.segs[rt.greedy+1:]
	if len(segs) < len(rt.segs) {
		return nil, false
	}
	for i := 0; i < rt.greedy; i++ {
		if !bind(rt.segs[i], segs[i]) {
			return nil, false
		}
	}
	for i, t := range suffix {
		if !bind(t, segs[len(segs)-len(suffix)+i]) {
			return nil, false
		}
	}
	mid := strings.Join(segs[rt.greedy:len(segs)-len(suffix)], "/")
	if mid == "" {
		return nil, false
	}
	params[strings.Trim(rt.segs[rt.greedy], "{}")] = mid
	return params, true
}

// ---- authentication ------------------------------------------------------------------------

// authenticate checks the Authorization header and returns what the token may do (nil for
// the token exchange, whose JWT the handler checks).
func (s *Server) authenticate(c *call, rt *route) (*grant, reply, bool) {
	auth := c.r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(auth, " ")
	if rt.template == "/app/installations/{installation_id}/access_tokens" {
		if !strings.EqualFold(scheme, "bearer") {
			return nil, ghError(401, "A JSON web token could not be decoded", "https://docs.github.com/rest"), false
		}
		return nil, reply{}, true // the JWT itself is checked by the handler
	}
	if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer") {
		return nil, ghError(401, "Requires authentication", "https://docs.github.com/rest"), false
	}
	g := s.tokenGrant(cred)
	if g == nil {
		return nil, ghError(401, "Bad credentials", "https://docs.github.com/rest"), false
	}
	return g, reply{}, true
}

// reaches reports whether the token may see repository "owner/name".
func (g *grant) reaches(fullName string) bool { return g.repos == nil || g.repos[fullName] }

// allows reports whether the token holds every "permission:level" of perms.
func (g *grant) allows(perms []string) bool {
	for _, p := range perms {
		perm, level, _ := strings.Cut(p, ":")
		if !g.may(perm, level) {
			return false
		}
	}
	return true
}

// tokenGrant returns what a valid, unexpired token may do, or nil.
func (s *Server) tokenGrant(tok string) *grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.tokens[tok]
	if g == nil || !time.Now().Before(g.expires) {
		return nil
	}
	return g
}

func (s *Server) validToken(tok string) bool { return s.tokenGrant(tok) != nil }

func (s *Server) issueTokenLocked(g *grant) (string, time.Time) {
	s.nextID++
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d-%d-%p", time.Now().UnixNano(), s.nextID, s)))
	tok := "ghs_" + hex.EncodeToString(sum[:])[:36]
	exp := time.Now().Add(s.opts.TokenTTL).UTC().Truncate(time.Second)
	g.expires = exp
	s.tokens[tok] = g
	return tok, exp
}

// RevokeTokens invalidates every issued installation token (e.g. to test re-authentication).
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]*grant{}
	s.token = ""
}

// ---- helpers --------------------------------------------------------------------------------

func (c *call) decode(v any) error {
	if len(c.body) == 0 {
		return fmt.Errorf("empty body")
	}
	return json.Unmarshal(c.body, v)
}

func badJSON(err error) reply {
	return ghError(400, "Problems parsing JSON: "+err.Error(), docsBase)
}

func findHTTPBackend() (string, error) {
	out, err := runGit("", nil, nil, "--exec-path")
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(out), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("git-http-backend not found: %w", err)
	}
	return p, nil
}
