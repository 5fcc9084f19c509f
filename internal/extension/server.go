package extension

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/state"
)

// Store is the Lease store as the extension server uses it (*state.Store reading the API
// server, not a cache: a token used on another replica a moment ago must be seen).
type Store interface {
	Get(ctx context.Context, key lifecycle.Key) (state.Record, error)
	SetBag(ctx context.Context, rec state.Record, bag map[string]string) (state.Record, error)
}

var _ Store = (*state.Store)(nil)

// Period is one extension offered in the links: its name as written (3d) and its length.
type Period struct {
	Name string
	D    time.Duration
}

// ParsePeriods parses --extension-periods ("3d,1w,2w") and checks them against max.
func ParsePeriods(list []string, longest time.Duration) ([]Period, error) {
	var out []Period
	for _, p := range list {
		d, err := lifecycle.ParseDuration(p)
		if err != nil {
			return nil, err
		}
		if d <= 0 || d > longest {
			return nil, fmt.Errorf("period %s is not within (0, %s] (--extension-max)", p, longest)
		}
		out = append(out, Period{Name: p, D: d})
	}
	if len(out) == 0 {
		return nil, errors.New("no extension periods")
	}
	return out, nil
}

// Link is one extension link of a warning.
type Link struct {
	Period string `json:"period"`
	URL    string `json:"url"`
}

// Server serves the extension links: GET shows what the link would do and a button; only
// POST changes anything (mail scanners prefetch GET links).
type Server struct {
	Signer  *Signer
	Periods []Period
	// Max is --extension-max: no period longer is honoured, whatever a token says.
	Max time.Duration
	// BaseURL is --extension-url, the public root the links start with.
	BaseURL string
	Store   Store
	Now     func() time.Time
	// WriteBack: the mode writes an extension back where the environment is declared (pr,
	// direct); in observer mode Kustos only remembers it.
	WriteBack bool
	// PerMinute is how many requests one client address may make per minute (0: 30).
	PerMinute int
	// LinkPerMinute is how many requests one link may get per minute, from any address (0: 10).
	LinkPerMinute int
	// TrustedProxies are --trusted-proxies, whose X-Forwarded-For names the client.
	TrustedProxies TrustedProxies
	// Owners, when set, serves the owner's page (/environment/): one owner's environments by
	// the owner's id.
	Owners OwnerLister
	// OwnerPageTTL is --owner-page-link-ttl: the longest an owner's page link works after the
	// notice that carries it (0: DefaultOwnerPageTTL).
	OwnerPageTTL time.Duration
	Log          logr.Logger

	// Reporter writes the OwnerExtended Event on an environment extended through a link (nil:
	// none); Mapper names the version of its kind in it (nil: the reference names the group).
	Reporter EventReporter
	Mapper   KindMapper

	// Keep, when set, serves the keep links of inactivity alerts (KeepPath).
	Keep *Keeper
	// Resume, when set, serves the resume links of inactivity pauses (ResumePath); only in a mode
	// that pauses (pr, direct).
	Resume *Resumer

	limitOnce      sync.Once
	clients, links *limiter
}

// Links are the extension links for a Key whose deadline is deadline; they work until expires
// (when the environment would go) and once each.
func (s *Server) Links(key lifecycle.Key, deadline, expires time.Time) ([]Link, error) {
	var out []Link
	for _, p := range s.Periods {
		tok, err := s.Signer.Mint(key, p.Name, deadline, expires)
		if err != nil {
			return nil, err
		}
		q := url.Values{"key": {string(key)}, "period": {p.Name}, "token": {tok}}
		out = append(out, Link{Period: p.Name, URL: s.BaseURL + "/extend?" + q.Encode()})
	}
	return out, nil
}

// ServeHTTP answers /extend (GET: the page; POST: extend), /environment/ (the owner's page,
// GET only) and /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the token is in the URL
	w.Header().Set("X-Frame-Options", "DENY")
	switch r.URL.Path {
	case "/healthz":
		_, _ = w.Write([]byte("ok\n"))
		return
	case "/extend":
	case KeepPath:
		if s.Keep == nil {
			http.NotFound(w, r)
			return
		}
	case ResumePath:
		if s.Resume == nil {
			http.NotFound(w, r)
			return
		}
	case OwnerPagePath:
		if s.Owners == nil {
			http.NotFound(w, r)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	// The access log: never the query or the form (they hold the token), only the link's id
	// once its token is verified.
	rec := &recorder{ResponseWriter: w, code: http.StatusOK}
	w = rec
	c := s.client(r)
	defer func() {
		s.Log.V(1).Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.code, "client", c.Key(), "link", rec.link)
	}()
	// Per client first (a flood costs no HMAC), then per link once the token is verified (only
	// a link's holder can spend its bucket; see linkLimited).
	clients, _ := s.limiters()
	if s.limited(w, clients, "client", c.Key()) {
		return
	}
	if r.URL.Path == OwnerPagePath {
		s.ownerPage(w, r)
		return
	}
	// Every link: GET shows what it would do, POST does it.
	get, post := s.get, s.post
	switch r.URL.Path {
	case KeepPath:
		get, post = s.keepGet, s.keepPost
	case ResumePath:
		get, post = s.resumeGet, s.resumePost
	}
	switch r.Method {
	case http.MethodGet:
		get(w, r)
	case http.MethodPost:
		post(w, r, c)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// link is a request's key, period and token, checked.
type link struct {
	key    lifecycle.Key
	period Period
	token  string
	claim  Claim
}

// check verifies a link's token and period; the error is what the page says.
func (s *Server) check(q url.Values) (link, int, error) {
	l := link{key: lifecycle.Key(q.Get("key")), token: q.Get("token")}
	name := q.Get("period")
	if l.key == "" || name == "" || l.token == "" {
		return l, http.StatusBadRequest, errors.New("the link is incomplete: it needs key, period and token")
	}
	if p, ok := l.key.Parts(); !ok || p.Detector != expiry.DetectorName {
		return l, http.StatusBadRequest, errors.New("the link does not name an environment Kustos manages")
	}
	c, err := s.Signer.Verify(l.token, l.key, name, s.Now())
	switch {
	case errors.Is(err, ErrExpired):
		return l, http.StatusGone, errors.New("this link has expired: the environment's deadline passed a week ago")
	case err != nil:
		return l, http.StatusForbidden, errors.New("this link is not valid: it was changed or is not from Kustos (a longer period cannot be chosen by editing the link)")
	}
	d, err := lifecycle.ParseDuration(name)
	if err != nil || d <= 0 || d > s.Max {
		return l, http.StatusForbidden, fmt.Errorf("an extension by %s is more than allowed (at most %s)", name, s.Max)
	}
	l.period, l.claim = Period{Name: name, D: d}, c
	return l, 0, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	l, code, err := s.check(r.URL.Query())
	if err != nil {
		s.page(w, code, pageData{Title: "Cannot extend", Message: err.Error()})
		return
	}
	if s.linkLimited(w, l) {
		return
	}
	rec, err := s.linkLease(r.Context(), l.key)
	if err != nil {
		s.page(w, http.StatusServiceUnavailable, pageData{Title: retryTitle, Message: readRetryMessage})
		return
	}
	if gone(rec, l) {
		s.page(w, http.StatusGone, pageData{Title: "Cannot extend", Message: goneMessage})
		return
	}
	p, _ := l.key.Parts()
	st, _ := expiry.ParseState(rec.Bag)
	title := p.Name
	if st.Label != "" {
		title = st.Label
	}
	s.page(w, http.StatusOK, pageData{
		Title:       "Extend " + title,
		Environment: describe(l.key, st),
		Deadline:    l.claim.Deadline.Format(time.RFC3339),
		NewDeadline: newDeadline(l.claim.Deadline, l.period.D, s.Now()).Format(time.RFC3339),
		Period:      l.period.Name,
		Key:         string(l.key), Token: l.token,
	})
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, c Client) {
	// The form is a key, a period and a token: a few hundred bytes, not ParseForm's 10 MB.
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, pageData{Title: "Cannot extend", Message: "the form could not be read"})
		return
	}
	l, code, err := s.check(r.PostForm)
	if err != nil {
		s.page(w, code, pageData{Title: "Cannot extend", Message: err.Error()})
		return
	}
	if s.linkLimited(w, l) {
		return
	}
	until, st, err := s.extend(r.Context(), l)
	switch {
	case errors.Is(err, errUsed):
		s.page(w, http.StatusConflict, pageData{Title: "Already used", Message: "This link was already used; each link works once. Use another link from the message, or extend in Git (kustos.io/expires-at)."})
		return
	case errors.Is(err, errGone):
		s.page(w, http.StatusGone, pageData{Title: "Cannot extend", Message: goneMessage})
		return
	case errors.Is(err, errExtended):
		s.page(w, http.StatusConflict, pageData{Title: "Already extended", Message: extendedMessage})
		return
	case err != nil:
		// Never log the token or the link: the key is enough to find the environment, and the
		// token's id (useless without its MAC) names the link.
		s.Log.Error(err, "extension failed", "key", string(l.key), "period", l.period.Name, "link", l.claim.ID)
		s.page(w, http.StatusServiceUnavailable, pageData{Title: retryTitle, Message: "Kustos could not record the extension just now; the link still works."})
		return
	}
	s.Log.Info("environment extended", "key", string(l.key), "period", l.period.Name, "link", l.claim.ID, "client", c.Key(), "until", until.Format(time.RFC3339))
	ownerActions.WithLabelValues("extend").Inc()
	s.extendedEvent(r.Context(), l, until)
	// A lifetime Kustos keeps itself (a VM's) is not written back anywhere.
	s.page(w, http.StatusOK, pageData{Title: "Extended", Environment: describe(l.key, st), NewDeadline: until.Format(time.RFC3339), Done: true, WriteBack: s.WriteBack && st.Kept.IsZero()})
}

var (
	errUsed     = errors.New("token already used")
	errGone     = errors.New("environment removed")
	errExtended = errors.New("already extended for this warning")
)

// extendedMessage is the page of a link that would take an environment more than
// --extension-max past the deadline its owner was warned about.
const extendedMessage = "this environment was already extended for this warning; a new warning comes before the new deadline, with new links"

// goneMessage is the page of a link whose environment went: a link works past the deadline
// (its removal may wait for room or for a reviewer), but not after the removal it warned about.
// retryTitle and readRetryMessage are a link page's answer when Kustos cannot read or write the
// environment's Lease just now: nothing was spent, the link works later.
const (
	retryTitle       = "Please try again"
	readRetryMessage = "Kustos could not read the environment just now; the link still works."
)

// linkLease reads the Lease a link acts on. A legacy Lease that several targets could claim
// (state.ErrUnclaimedLease) is no failure: Get gives the Key's usable record under its
// alternate name beside it, which the detector uses too.
func (s *Server) linkLease(ctx context.Context, key lifecycle.Key) (state.Record, error) {
	rec, err := s.Store.Get(ctx, key)
	if errors.Is(err, state.ErrUnclaimedLease) {
		err = nil
	}
	return rec, err
}

const goneMessage = "this link no longer extends anything: the environment was removed (or paused) at the deadline it names"

// gone reports that the removal (or pause) l warned about has happened: the detector told the
// owner so for l's deadline or a later one, or no longer keeps any state for the environment.
func gone(rec state.Record, l link) bool {
	if len(rec.Bag) == 0 && rec.LastModified.IsZero() {
		return true // swept with its target: a warned environment's state names its warning
	}
	st, _ := expiry.ParseState(rec.Bag)
	return !st.NotifiedFor.IsZero() && !st.NotifiedFor.Before(l.claim.Deadline)
}

// linkLimited limits one verified link, from whatever addresses it comes: a leaked or
// forwarded link hammered by many clients costs at most LinkPerMinute API-server reads a
// minute. The bucket is keyed by the token's id, which only a valid token carries, so made-up
// tokens neither spend an owner's bucket nor fill the limiter's memory; each of an owner's
// links has its own. (Guessing a token is bounded by its 256-bit MAC, not by a rate: a limit
// per environment that also stopped valid tokens would let anyone lock its owner out.)
func (s *Server) linkLimited(w http.ResponseWriter, l link) bool {
	return s.tokenLimited(w, "", l.key, l.claim.ID)
}

// tokenLimited is linkLimited for any kind of link: the token id named kind (extension links
// have none) in the access log, and its own bucket.
func (s *Server) tokenLimited(w http.ResponseWriter, kind string, key lifecycle.Key, id string) bool {
	if rec, ok := w.(*recorder); ok {
		rec.link = kind + id
	}
	_, links := s.limiters()
	return s.limited(w, links, "link", string(key)+"#"+id)
}

// extend records the extension in the Key's Lease: the new deadline and the token's id, in
// one write conditional on the version read, so a token works once even when two replicas
// receive it at the same time.
func (s *Server) extend(ctx context.Context, l link) (time.Time, expiry.State, error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.linkLease(ctx, l.key)
		if err != nil {
			return time.Time{}, expiry.State{}, err
		}
		st, _ := expiry.ParseState(rec.Bag)
		if slices.Contains(st.UsedTokens, l.claim.ID) {
			return time.Time{}, expiry.State{}, errUsed
		}
		if gone(rec, l) {
			return time.Time{}, expiry.State{}, errGone
		}
		now := s.Now()
		until := newDeadline(l.claim.Deadline, l.period.D, now)
		if beyondCycle(st, l.claim.Deadline, until, s.Max, now) {
			return time.Time{}, expiry.State{}, errExtended
		}
		if st.ExtendedUntil.After(until) {
			until = st.ExtendedUntil // another link extended it further: keep that
		}
		st.ExtendedUntil, st.ExtendedAt = until, now
		st.UsedTokens = append(st.UsedTokens, l.claim.ID)
		_, err = s.Store.SetBag(ctx, rec, st.Bag())
		if err == nil {
			return until, st, nil
		}
		if !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) || attempt >= 4 {
			return time.Time{}, expiry.State{}, err
		}
	}
}

// beyondCycle reports that an extension to until, by a link minted for deadline, would take an
// environment already extended in this warning cycle more than max past the deadline its owner
// was warned about (st.WarningFor; the link's deadline when that is earlier): one warning
// cycle gets at most --extension-max, whichever of its links (mail or owner's page, or links
// minted for an extended deadline by an earlier release's page) are used, in whatever order.
// A link that adds nothing to the extension already recorded is not refused (it keeps that).
func beyondCycle(st expiry.State, deadline, until time.Time, maxExt time.Duration, now time.Time) bool {
	if st.WarningFor.IsZero() || !st.ExtendedUntil.After(st.WarningFor) || !until.After(st.ExtendedUntil) {
		return false
	}
	base := st.WarningFor
	if deadline.Before(base) {
		base = deadline
	}
	return until.After(newDeadline(base, maxExt, now))
}

// newDeadline extends deadline by d; an environment already past its deadline (warned, not
// yet removed) gets d from now.
func newDeadline(deadline time.Time, d time.Duration, now time.Time) time.Time {
	if deadline.Before(now) {
		deadline = now
	}
	return deadline.Add(d).UTC().Truncate(time.Second)
}

// describe names the environment of k on a page: by its label when it has one (a VM's name,
// not its UUID).
func describe(k lifecycle.Key, st expiry.State) string {
	if st.Label != "" {
		return st.Label
	}
	p, _ := k.Parts()
	if p.Namespace == "" {
		return p.KindGroup + " " + p.Name
	}
	return p.KindGroup + " " + p.Name + " in namespace " + p.Namespace
}

// Bounds of the rate limiter's memory: at most this many clients and links are remembered
// (least recently used first out; about 100 bytes each). A forgotten bucket starts full.
const (
	maxClients = 10000
	maxLinks   = 10000
)

func (s *Server) limiters() (clients, links *limiter) {
	s.limitOnce.Do(func() {
		perMinute, linkPerMinute := s.PerMinute, s.LinkPerMinute
		if perMinute <= 0 {
			perMinute = 30
		}
		if linkPerMinute <= 0 {
			linkPerMinute = 10
		}
		s.clients, s.links = newLimiter(perMinute, maxClients), newLimiter(linkPerMinute, maxLinks)
	})
	return s.clients, s.links
}

// client is whom r is counted against: its peer, or behind trusted proxies the client they
// name. A malformed X-Forwarded-For from a trusted proxy is counted and logged, and the
// proxy's address stands in.
func (s *Server) client(r *http.Request) Client {
	c := s.TrustedProxies.Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
	if c.Malformed {
		metrics.InvalidInput.WithLabelValues(expiry.DetectorName, "forwarded_for").Inc()
		s.Log.V(1).Info("a trusted proxy forwarded an X-Forwarded-For entry that is no address; counting the request against the proxy", "peer", r.RemoteAddr)
	}
	return c
}

// limited answers 429 with Retry-After when key has no request left this minute.
func (s *Server) limited(w http.ResponseWriter, l *limiter, by, key string) bool {
	return s.limitedBy(w, l, by, key, func(code int) {
		s.page(w, code, pageData{Title: "Too many requests", Message: "Please try again in a minute."})
	})
}

// limitedBy is limited with the answer written by refuse (a page or JSON).
func (s *Server) limitedBy(w http.ResponseWriter, l *limiter, by, key string, refuse func(code int)) bool {
	ok, wait := l.take(key, s.Now())
	if ok {
		return false
	}
	rateLimited.WithLabelValues(by).Inc()
	s.Log.V(1).Info("rate limited", "by", by, by, key)
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	refuse(http.StatusTooManyRequests)
	return true
}

// recorder remembers a response's status and the verified link's id for the access log.
type recorder struct {
	http.ResponseWriter
	code int
	link string
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

type pageData struct {
	Title, Message, Environment, Deadline, NewDeadline, Period, Key, Token string
	Done, WriteBack                                                        bool
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>{{.Title}} · Kustos</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{.Message}}</p>{{end}}
{{if .Done}}<p>{{.Environment}} now expires at <strong>{{.NewDeadline}}</strong>.{{if .WriteBack}} Kustos records the new deadline (kustos.io/expires-at) where the environment is declared: in Git through a pull request, or on the object.{{end}}</p>
{{else if .Token}}<p>{{.Environment}} expires at <strong>{{.Deadline}}</strong>.</p>
<form method="post" action="extend">
<input type="hidden" name="key" value="{{.Key}}"><input type="hidden" name="period" value="{{.Period}}"><input type="hidden" name="token" value="{{.Token}}">
<button type="submit">Extend by {{.Period}} (until {{.NewDeadline}})</button>
</form>{{end}}
</body></html>
`))

func (s *Server) page(w http.ResponseWriter, code int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := pageTemplate.Execute(w, d); err != nil {
		s.Log.Error(err, "writing the extension page")
	}
}
