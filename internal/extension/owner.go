package extension

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// OwnerLister finds one owner's state Leases by the owner's id (*state.Store reading the API
// server: the label selector finds them, no page view reads every Lease).
type OwnerLister interface {
	ListOwned(ctx context.Context, id string) ([]state.Record, error)
}

var _ OwnerLister = (*state.Store)(nil)

// OwnerPagePath is the owner's page (env-cleaner's /environment/).
const OwnerPagePath = "/environment/"

// OwnerPageLabel is the owner's page link's label in notices.
const OwnerPageLabel = "All your environments"

// Environment states on the owner's page.
const (
	StateScheduled = "scheduled" // not warned yet
	StateWarned    = "warned"    // a warning about this deadline is recorded: sent, or being sent
	StateQueued    = "queued"    // the removal waits for room in the pull-request budget or its group
	StatePROpen    = "pr-open"   // a pull request (the removal, or the extension written back) is open
	StateRemoved   = "removed"   // removed or paused at this deadline; nothing left to extend
)

// OwnerPage is the owner's page as JSON (Accept: application/json).
type OwnerPage struct {
	// Owner is the owner as the environments' metadata names it ("" when Kustos keeps none).
	Owner string `json:"owner"`
	// Expires is when this page's link stops working.
	Expires      time.Time          `json:"expires"`
	Environments []OwnerEnvironment `json:"environments"`
}

// OwnerEnvironment is one environment on the owner's page: a lifetime the expiry detector
// keeps (Deadline, Extend) or a target the inactivity detector watches (the fields after
// Extend; console.go).
type OwnerEnvironment struct {
	// Detector is the detector the row is about: expiry or inactivity.
	Detector  string `json:"detector"`
	Kind      string `json:"kind"`
	Group     string `json:"group,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Label is how the owner knows an environment whose name is an id (a VM: its name, folder
	// and datacenter; the name is its UUID); empty for the others.
	Label string `json:"label,omitempty"`
	// Deadline is the effective deadline (an extension included); expiry only.
	Deadline time.Time `json:"deadline,omitzero"`
	State    string    `json:"state"`
	// PullRequest is the open pull request's number (states pr-open, resume-proposed).
	PullRequest int `json:"pullRequest,omitempty"`
	// Extend are one-time extension links (GET shows, POST extends) for the deadline the owner
	// was warned about: none before the warning, after an extension (until the next warning)
	// or once removed.
	Extend []Link `json:"extend"`

	// IdleSince is when the idle period the alerts are about began (alerted, kept, paused);
	// LastActivity the latest use the Lease records (it is written when it moved by 5% of the
	// timeout, at most an hour: it can be that much behind).
	IdleSince    time.Time `json:"idleSince,omitzero"`
	LastActivity time.Time `json:"lastActivity,omitzero"`
	// Alerts is how many alerts were sent about the idle period, of MaxAlerts before the pause
	// or deletion.
	Alerts    int `json:"alerts,omitempty"`
	MaxAlerts int `json:"maxAlerts,omitempty"`
	// KeptUntil: the owner kept the target until then (state kept).
	KeptUntil time.Time `json:"keptUntil,omitzero"`
	// PausedSince, PauseField, PauseFrom: the pause Kustos decided (when, the field it set and
	// the value it held before, which a resume restores: spec.replicas and 3).
	PausedSince time.Time `json:"pausedSince,omitzero"`
	PauseField  string    `json:"pauseField,omitempty"`
	PauseFrom   string    `json:"pauseFrom,omitempty"`
	// ResumeRequested is when the owner asked for the resume (carried out at the next look, or
	// proposed: resume-proposed).
	ResumeRequested time.Time `json:"resumeRequested,omitzero"`
	// Keep are one-time keep links (GET shows, POST keeps) answering the last alert, as the
	// alert's mail carries them: only while that alert is not answered (console.go).
	Keep []Link `json:"keep,omitempty"`
	// Resume is a one-time resume link (GET shows, POST asks) for the pause Kustos made, as the
	// pause notice carries it; only in a mode that pauses.
	Resume string `json:"resume,omitempty"`
	// ResumeFor are the one-time resume links of an environment paused at its deadline, one per
	// extension period (each resumes it and moves its deadline), as its pause notice carries
	// them; only in a mode that pauses, and until a resume is asked.
	ResumeFor []Link `json:"resumeFor,omitempty"`
	// Note says what the state means when it is not obvious (observer mode: nothing to undo).
	Note string `json:"note,omitempty"`
}

// OwnerPageLink is the link to the page of owner (as written in kustos.io/owner) that works
// until until. Every notice gets a new one.
func (s *Server) OwnerPageLink(owner string, until time.Time) lifecycle.NoticeLink {
	until = until.UTC().Truncate(time.Second)
	q := url.Values{"token": {s.Signer.MintOwner(lifecycle.OwnerID(owner), until)}}
	return lifecycle.NoticeLink{Label: OwnerPageLabel, URL: s.BaseURL + OwnerPagePath + "?" + q.Encode(), Expires: until}
}

// DefaultOwnerPageTTL is --owner-page-link-ttl's default.
const DefaultOwnerPageTTL = 14 * 24 * time.Hour

// OwnerPageUntil is how long the page link of a notice sent at now works: the link grace of the
// extension links (expiry.LinkGrace) past the latest of the notice's deadline, the time it is
// about and now, so it outlives every extension link the notice carries; but never more than
// ttl (0: DefaultOwnerPageTTL) past now. The page shows every environment of its owner, so a
// link in a mail must not outlive the mail's use by the tenant's lifetime (kustos.io/ttl: 10y):
// every later notice carries a new link instead.
func OwnerPageUntil(n lifecycle.Notice, now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		ttl = DefaultOwnerPageTTL
	}
	t := now
	for _, c := range []time.Time{n.Deadline, n.At} {
		if c.After(t) {
			t = c
		}
	}
	until := t.Add(expiry.LinkGrace)
	if capped := now.Add(ttl); until.After(capped) {
		until = capped
	}
	return until
}

// Notifier sends notices (pipeline.Notifier).
type Notifier interface {
	Send(ctx context.Context, n lifecycle.Notice) error
}

// OwnerPages adds the owner's page link to every notice about an owner's environment before
// Next sends it: a new link with every message.
type OwnerPages struct {
	Server *Server
	Next   Notifier
}

var _ Notifier = OwnerPages{}

// Send adds the link (to notices that name an owner) and hands n to Next.
func (o OwnerPages) Send(ctx context.Context, n lifecycle.Notice) error {
	if strings.TrimSpace(n.Owner) != "" {
		l := o.Server.OwnerPageLink(n.Owner, OwnerPageUntil(n, o.Server.Now(), o.Server.OwnerPageTTL))
		n.OwnerPage = &l
	}
	return o.Next.Send(ctx, n)
}

// ownerPage answers GET /environment/?token=…: the environments of the token's owner. It only
// reads (no token is spent, no Lease written); the extend buttons are one-time extension links
// minted for each environment, carried out by POST /extend like a link in a mail.
func (s *Server) ownerPage(w http.ResponseWriter, r *http.Request) {
	asJSON := wantsJSON(r.Header.Values("Accept"))
	fail := func(code int, title, msg string) {
		if asJSON {
			s.writeJSON(w, code, map[string]string{"error": msg})
			return
		}
		s.page(w, code, pageData{Title: title, Message: msg})
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		fail(http.StatusMethodNotAllowed, "Not allowed", "the owner's page can only be read")
		return
	}
	tok := r.URL.Query().Get("token")
	if tok == "" {
		fail(http.StatusBadRequest, "Cannot show your environments", "the link is incomplete: it needs its token")
		return
	}
	c, err := s.Signer.VerifyOwner(tok, s.Now())
	switch {
	case errors.Is(err, ErrExpired):
		fail(http.StatusGone, "Cannot show your environments", "this link has expired; every message from Kustos carries a new one")
		return
	case err != nil:
		fail(http.StatusForbidden, "Cannot show your environments", "this link is not valid: it was changed or is not from Kustos (an extension link is not a page link)")
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.link = "owner:" + c.Owner
	}
	_, links := s.limiters()
	if s.limitedBy(w, links, "owner", "owner#"+c.Owner, func(code int) {
		fail(code, "Too many requests", "Please try again in a minute.")
	}) {
		return
	}
	recs, err := s.Owners.ListOwned(r.Context(), c.Owner)
	if err != nil {
		s.Log.Error(err, "reading an owner's environments", "owner", c.Owner)
		fail(http.StatusServiceUnavailable, "Please try again", "Kustos could not read your environments just now; the link still works.")
		return
	}
	p, err := s.ownerPageOf(c, recs)
	if err != nil {
		s.Log.Error(err, "minting the owner's page links", "owner", c.Owner)
		fail(http.StatusServiceUnavailable, "Please try again", "Kustos could not make the page's links just now; the link still works.")
		return
	}
	if asJSON {
		s.writeJSON(w, http.StatusOK, p)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if err := ownerTemplate.Execute(w, ownerData{OwnerPage: p, ExtendURL: s.BaseURL + "/extend", KeepURL: s.BaseURL + KeepPath, ResumeURL: s.BaseURL + ResumePath}); err != nil {
		s.Log.Error(err, "writing the owner's page")
	}
}

// ownerPageOf is the page of the owner c names, from their Leases.
func (s *Server) ownerPageOf(c OwnerClaim, recs []state.Record) (OwnerPage, error) {
	now := s.Now()
	p := OwnerPage{Expires: c.Expires, Environments: []OwnerEnvironment{}}
	for _, rec := range recs {
		parts, ok := rec.Key.Parts()
		if ok && parts.Detector == inactivity.DetectorName {
			e, ok, err := s.inactivityEnvironment(c, rec, parts)
			if err != nil {
				return p, err
			}
			if ok {
				if p.Owner == "" {
					p.Owner = rec.Bag[lifecycle.BagOwner]
				}
				p.Environments = append(p.Environments, e)
			}
			continue
		}
		if !ok || parts.Detector != expiry.DetectorName {
			continue
		}
		st, _ := expiry.ParseState(rec.Bag)
		if lifecycle.OwnerID(st.Owner) != c.Owner {
			continue // the store checks it too; a page never shows another owner's environment
		}
		if p.Owner == "" {
			p.Owner = st.Owner
		}
		deadline := st.Deadline
		if st.ExtendedUntil.After(deadline) {
			deadline = st.ExtendedUntil // extended a moment ago; the detector has not looked yet
		}
		if deadline.IsZero() {
			continue
		}
		kind, group, _ := strings.Cut(parts.KindGroup, ".")
		e := OwnerEnvironment{Detector: expiry.DetectorName, Kind: kind, Group: group, Namespace: parts.Namespace, Name: parts.Name, Label: st.Label, Deadline: deadline, Extend: []Link{}}
		n, pr := state.HolderNumber(rec.Holder)
		// Warned from the moment the warning is recorded (the deadline it is about), before it
		// is sent: the mail goes out after that write and is marked sent (WarnedAt) after the
		// send, so a page opened from the mail, or while a crash left the mark unwritten, must
		// not say "scheduled". The warning's id is the Key and that deadline.
		warned := st.WarningFor.Equal(deadline)
		switch {
		case !st.NotifiedFor.IsZero() && !st.NotifiedFor.Before(deadline):
			e.State = StateRemoved
		case pr:
			e.State, e.PullRequest = StatePROpen, n
		case rec.Queued != "":
			e.State = StateQueued
		case warned:
			e.State = StateWarned
		default:
			e.State = StateScheduled
		}
		if e.State != StateRemoved && warned {
			// Only a warned environment has buttons, and only for the deadline the warning was
			// about, as the warning's mail links: an extension moves the deadline past the
			// warning's, and the buttons come back with the next warning. (Links for the
			// extended deadline would let reload, click, reload, click extend without bound.)
			// The links work as long as a mail's would: the link grace past the deadline (or
			// past now, for an environment whose removal waits or was declined).
			base := st.WarningFor
			if now.After(base) {
				base = now
			}
			ls, err := s.Links(rec.Key, st.WarningFor, base.Add(expiry.LinkGrace))
			if err != nil {
				return p, err
			}
			e.Extend = ls
		}
		if e.State == StateRemoved && s.Resume != nil && !st.PausedAt.IsZero() && st.ResumeAt.IsZero() {
			// Paused at this deadline, not removed: resumable, like its notice's links say.
			ls, err := s.ResumeLinks(rec.Key, st.Owner, st.PausedAt, now.Add(expiry.ResumeLinkTTL))
			if err != nil {
				return p, err
			}
			e.State, e.PausedSince, e.PauseField, e.PauseFrom = StatePaused, st.PausedAt, expiry.PauseField, st.PauseFrom
			for _, l := range ls {
				e.ResumeFor = append(e.ResumeFor, Link{Period: strings.TrimPrefix(l.Label, "Resume for "), URL: l.URL})
			}
		}
		p.Environments = append(p.Environments, e)
	}
	// Lifetimes first, soonest deadline first; then the inactivity rows in Key order (as listed).
	sort.SliceStable(p.Environments, func(i, j int) bool {
		a, b := p.Environments[i], p.Environments[j]
		if a.Detector != b.Detector {
			return a.Detector == expiry.DetectorName
		}
		return a.Deadline.Before(b.Deadline)
	})
	return p, nil
}

// wantsJSON: the client asked for JSON (Accept: application/json) rather than a page.
func wantsJSON(accept []string) bool {
	for _, line := range accept {
		for _, item := range strings.Split(line, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(item))
			if err == nil && mt == "application/json" {
				return true
			}
		}
	}
	return false
}

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		s.Log.Error(err, "writing the owner's page")
	}
}

// queryOf is the query of an extension link (the page's forms post its key, period and token).
func queryOf(link string) url.Values {
	u, err := url.Parse(link)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

type ownerData struct {
	OwnerPage
	ExtendURL, KeepURL, ResumeURL string
}

// Lifetimes and Inactivity are the page's two tables.
func (d ownerData) Lifetimes() []OwnerEnvironment { return d.of(expiry.DetectorName) }
func (d ownerData) Inactivity() []OwnerEnvironment {
	return d.of(inactivity.DetectorName)
}

func (d ownerData) of(detector string) []OwnerEnvironment {
	var out []OwnerEnvironment
	for _, e := range d.Environments {
		if e.Detector == detector {
			out = append(out, e)
		}
	}
	return out
}

var ownerTemplate = template.Must(template.New("owner").Funcs(template.FuncMap{
	"rfc3339":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"linkKey":   func(link string) string { return queryOf(link).Get("key") },
	"linkToken": func(link string) string { return queryOf(link).Get("token") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>Your environments · Kustos</title></head>
<body style="font-family: sans-serif; max-width: 60em; margin: 2em auto">
<h1>Your environments</h1>
{{if .Owner}}<p>The environments of <strong>{{.Owner}}</strong> that Kustos keeps a lifetime for or watches for inactivity. This link works until {{rfc3339 .Expires}}.</p>{{end}}
{{with .Lifetimes}}
<h2>Lifetimes</h2>
<table style="border-collapse: collapse" cellpadding="6">
<thead><tr><th align="left">Kind</th><th align="left">Namespace</th><th align="left">Name</th><th align="left">Deadline</th><th align="left">State</th><th align="left">Extend</th></tr></thead>
<tbody>
{{- range .}}
<tr style="border-top: 1px solid #d0d7de">
<td>{{.Kind}}{{with .Group}}.{{.}}{{end}}</td><td>{{.Namespace}}</td><td>{{if .Label}}{{.Label}}{{else}}{{.Name}}{{end}}</td><td>{{rfc3339 .Deadline}}</td>
<td>{{.State}}{{with .PullRequest}} (pull request #{{.}}){{end}}</td>
<td>{{range .Extend}}<form method="post" action="{{$.ExtendURL}}" style="display: inline">
<input type="hidden" name="key" value="{{linkKey .URL}}"><input type="hidden" name="period" value="{{.Period}}"><input type="hidden" name="token" value="{{linkToken .URL}}">
<button type="submit">Extend by {{.Period}}</button></form> {{else}}{{range .ResumeFor}}<form method="post" action="{{$.ResumeURL}}" style="display: inline">
<input type="hidden" name="key" value="{{linkKey .URL}}"><input type="hidden" name="period" value="{{.Period}}"><input type="hidden" name="token" value="{{linkToken .URL}}">
<button type="submit">Resume for {{.Period}}</button></form> {{else}}{{if ne .State "removed"}}extension links come with the warning{{end}}{{end}}{{end}}</td>
</tr>
{{- end}}
</tbody></table>
{{end}}
{{with .Inactivity}}
<h2>Inactivity</h2>
<table style="border-collapse: collapse" cellpadding="6">
<thead><tr><th align="left">Kind</th><th align="left">Namespace</th><th align="left">Name</th><th align="left">Idle since</th><th align="left">State</th><th align="left">Actions</th></tr></thead>
<tbody>
{{- range .}}{{$e := .}}
<tr style="border-top: 1px solid #d0d7de">
<td>{{.Kind}}{{with .Group}}.{{.}}{{end}}</td><td>{{.Namespace}}</td><td>{{.Name}}</td>
<td>{{if not .IdleSince.IsZero}}{{rfc3339 .IdleSince}}{{else if not .LastActivity.IsZero}}used at {{rfc3339 .LastActivity}} or later{{end}}</td>
<td>{{.State}}{{if eq .State "alerted"}} (alert {{.Alerts}}{{with .MaxAlerts}} of {{.}}{{end}}){{end}}
{{- if eq .State "kept"}} until {{rfc3339 .KeptUntil}}{{end}}
{{- with .PullRequest}} (pull request #{{.}}){{end}}
{{- if not .PausedSince.IsZero}}{{if eq .State "paused" "resume-proposed"}}: since {{rfc3339 .PausedSince}}, {{.PauseField}}: {{.PauseFrom}} before the pause{{end}}{{end}}
{{- if not .ResumeRequested.IsZero}}; resume asked at {{rfc3339 .ResumeRequested}}{{end}}
{{- with .Note}}<br><small>{{.}}</small>{{end}}</td>
<td>{{range .Keep}}<form method="post" action="{{$.KeepURL}}" style="display: inline">
<input type="hidden" name="key" value="{{linkKey .URL}}"><input type="hidden" name="period" value="{{.Period}}"><input type="hidden" name="token" value="{{linkToken .URL}}">
<button type="submit">Keep for {{.Period}}</button></form> {{end}}
{{- with .Resume}}<form method="post" action="{{$.ResumeURL}}" style="display: inline">
<input type="hidden" name="key" value="{{linkKey .}}"><input type="hidden" name="token" value="{{linkToken .}}">
<button type="submit">Resume ({{$e.PauseField}} back to {{$e.PauseFrom}})</button></form>{{end}}</td>
</tr>
{{- end}}
</tbody></table>
{{end}}
{{if not .Environments}}<p>Kustos keeps no environments of yours with a lifetime, and none of yours was alerted for inactivity.</p>{{end}}
</body></html>
`))
