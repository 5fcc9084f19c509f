package extension

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// ResumePath is where a pause notice's resume links point: GET shows what the link would do,
// POST asks for the resume.
const ResumePath = "/resume"

// ReasonOwnerResumed is the Event on a target its owner asked to resume with a resume link.
const ReasonOwnerResumed = "OwnerResumed"

// Resumer is the resume links' part of the server (Server.Resume): an owner answers a pause
// notice by asking for the target to run again. The request is recorded in the target's Lease
// (the inactivity detector's state) with the link's id, in one conditional write: each link
// works once, on any replica. The inactivity detector then restores the value the pause
// recorded, through the change pipeline (a pull request for what Git defines, a preconditioned
// patch otherwise); nothing here writes the target.
type Resumer struct {
	// Reporter writes the OwnerResumed Event on the target (nil: none); Mapper names the
	// version of the target's kind in it (nil: the Event's reference names the group only).
	Reporter EventReporter
	Mapper   KindMapper
}

// ResumeLinks are a pause notice's resume links for key, issued to owner (as recorded in the
// target's state), answering the pause decided at pausedAt; they work until expires, and once.
// None without a Resumer (observer mode has none: nothing was paused).
//
// An expiry pause's links are resumes and extensions in one: one per extension period ("Resume
// for 3d"), each moving the deadline as the extension link of its period would.
func (s *Server) ResumeLinks(key lifecycle.Key, owner string, pausedAt, expires time.Time) ([]lifecycle.NoticeLink, error) {
	if s.Resume == nil {
		return nil, nil
	}
	if p, _ := key.Parts(); p.Detector == expiry.DetectorName {
		var out []lifecycle.NoticeLink
		for _, period := range s.Periods {
			tok, err := s.Signer.MintExpiryResume(key, owner, period.Name, pausedAt, expires)
			if err != nil {
				return nil, err
			}
			q := url.Values{"key": {string(key)}, "period": {period.Name}, "token": {tok}}
			out = append(out, lifecycle.NoticeLink{Label: expiry.NoticeResumeLabel(period.Name), URL: s.BaseURL + ResumePath + "?" + q.Encode(), Expires: expires.UTC()})
		}
		return out, nil
	}
	tok, err := s.Signer.MintResume(key, owner, pausedAt, expires)
	if err != nil {
		return nil, err
	}
	q := url.Values{"key": {string(key)}, "token": {tok}}
	return []lifecycle.NoticeLink{{Label: "Resume", URL: s.BaseURL + ResumePath + "?" + q.Encode(), Expires: expires.UTC()}}, nil
}

// ResumeRecorded is the inactivity detector's LeaseTrigger: an inactivity Key's Lease now records
// a different resume request (the server wrote it, on this replica or another), so the detector
// looks again at once instead of at its next scheduled look.
func ResumeRecorded(before, after client.Object) (lifecycle.Key, bool) {
	annotation := state.BagPrefix + inactivity.BagResumeAt
	key := after.GetAnnotations()[state.AnnotationKey]
	if !strings.HasPrefix(key, inactivity.DetectorName+"/") || before.GetAnnotations()[annotation] == after.GetAnnotations()[annotation] {
		return "", false
	}
	return lifecycle.Key(key), true
}

// resumeLink is a resume request's key and token (and, for an expiry pause, the period it
// extends by), checked.
type resumeLink struct {
	key    lifecycle.Key
	token  string
	claim  ResumeClaim
	period Period
}

// checkResume verifies a resume link's token; the error is what the page says.
func (s *Server) checkResume(q url.Values) (resumeLink, int, error) {
	l := resumeLink{key: lifecycle.Key(q.Get("key")), token: q.Get("token")}
	if l.key == "" || l.token == "" {
		return l, http.StatusBadRequest, errors.New("the link is incomplete: it needs key and token")
	}
	p, ok := l.key.Parts()
	if !ok || (p.Detector != inactivity.DetectorName && p.Detector != expiry.DetectorName) || p.KindGroup == "" {
		return l, http.StatusBadRequest, errors.New("the link does not name an environment Kustos pauses")
	}
	var c ResumeClaim
	var err error
	if p.Detector == expiry.DetectorName {
		name := q.Get("period")
		d, perr := lifecycle.ParseDuration(name)
		if name == "" || perr != nil {
			return l, http.StatusBadRequest, errors.New("the link is incomplete: it needs key, period and token")
		}
		c, err = s.Signer.VerifyExpiryResume(l.token, l.key, name, s.Now())
		if err == nil && (d <= 0 || d > s.Max) {
			return l, http.StatusForbidden, fmt.Errorf("an extension by %s is more than allowed (at most %s)", name, s.Max)
		}
		l.period = Period{Name: name, D: d}
	} else {
		c, err = s.Signer.VerifyResume(l.token, l.key, s.Now())
	}
	switch {
	case errors.Is(err, ErrExpired):
		return l, http.StatusGone, errors.New("this link has expired; the environment can still be restarted by hand")
	case err != nil:
		return l, http.StatusForbidden, errors.New("this link is not valid: it was changed or is not from Kustos")
	}
	l.claim = c
	return l, 0, nil
}

// resumeView is what a resume link restores (and, for an expiry pause, until when the target
// then runs), for its page, its log line and its Event.
type resumeView struct {
	Field, Value string
	PausedAt     time.Time
	// Until is the deadline an expiry resume moves to (zero: an inactivity resume).
	Until time.Time
}

// resumable says whether the link l may ask to resume the target whose Lease is rec: the Lease
// is there (a removed target's is swept), the link is unused, issued to the owner the state
// names now, and the state records the pause it answers (not resumed since, not paused again,
// not deleted and created again: the detector drops the record of another UID). It returns
// what the resume does and the Lease's bag that records the request.
func resumable(rec state.Record, l resumeLink, now time.Time) (resumeView, map[string]string, error) {
	if len(rec.Bag) == 0 && rec.LastModified.IsZero() {
		return resumeView{}, nil, errGone
	}
	if p, _ := l.key.Parts(); p.Detector == expiry.DetectorName {
		st, _ := expiry.ParseState(rec.Bag)
		if slices.Contains(st.UsedTokens, l.claim.ID) {
			return resumeView{}, nil, errUsed
		}
		if KeepOwner(st.Owner) != l.claim.Owner && !st.PausedAt.IsZero() {
			return resumeView{}, nil, errNotOwner
		}
		v := resumeView{Field: expiry.PauseField, Value: st.PauseFrom, PausedAt: st.PausedAt}
		until, err := st.RequestResume(l.claim.ID, l.claim.PausedAt, l.period.D, now)
		v.Until = until
		return v, st.Bag(), err
	}
	st, _ := inactivity.ParseState(rec.Bag)
	v := resumeView{Field: st.PauseField, Value: st.PauseFrom, PausedAt: st.PausedAt}
	if st.ResumeTokenUsed(l.claim.ID) {
		return v, nil, errUsed
	}
	if KeepOwner(st.Owner) != l.claim.Owner && !st.PausedAt.IsZero() {
		return v, nil, errNotOwner
	}
	err := st.RequestResume(l.claim.ID, l.claim.PausedAt, now)
	return v, st.Bag(), err
}

// resumeRefusal is the status and the page's message for a refused resume.
func resumeRefusal(err error) (int, string, bool) {
	switch {
	case errors.Is(err, errUsed), errors.Is(err, inactivity.ErrResumeUsed):
		return http.StatusConflict, "This link was already used; each link works once.", true
	case errors.Is(err, inactivity.ErrResumeAsked):
		return http.StatusConflict, "A resume of this environment was already asked for; it runs again shortly.", true
	case errors.Is(err, errNotOwner):
		return http.StatusForbidden, "This link was issued to another owner of this environment; its owner has changed since.", true
	case errors.Is(err, inactivity.ErrNotPaused):
		return http.StatusGone, "This environment is no longer in the pause this link answers: it runs again, was paused again since, or was deleted and created again. Nothing was changed.", true
	case errors.Is(err, errGone):
		return http.StatusGone, "This link no longer resumes anything: the environment was removed.", true
	}
	return 0, "", false
}

// resumeGet shows what a resume link would restore; resumePost asks for the resume.
func (s *Server) resumeGet(w http.ResponseWriter, r *http.Request) {
	l, code, err := s.checkResume(r.URL.Query())
	if err != nil {
		s.resumePage(w, code, resumeData{Title: "Cannot resume", Message: err.Error()})
		return
	}
	if s.resumeLimited(w, l) {
		return
	}
	rec, err := s.linkLease(r.Context(), l.key)
	if err != nil {
		s.resumePage(w, http.StatusServiceUnavailable, resumeData{Title: retryTitle, Message: readRetryMessage})
		return
	}
	v, _, err := resumable(rec, l, s.Now())
	if err != nil {
		code, msg, _ := resumeRefusal(err)
		s.resumePage(w, code, resumeData{Title: "Cannot resume", Message: msg})
		return
	}
	s.resumePage(w, http.StatusOK, resumeData{Title: "Resume " + describeTarget(l.key), Environment: describeTarget(l.key),
		Field: v.Field, Value: v.Value, Key: string(l.key), Token: l.token, Period: l.period.Name, Until: untilText(v.Until)})
}

func (s *Server) resumePost(w http.ResponseWriter, r *http.Request, c Client) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		s.resumePage(w, http.StatusBadRequest, resumeData{Title: "Cannot resume", Message: "the form could not be read"})
		return
	}
	l, code, err := s.checkResume(r.PostForm)
	if err != nil {
		s.resumePage(w, code, resumeData{Title: "Cannot resume", Message: err.Error()})
		return
	}
	if s.resumeLimited(w, l) {
		return
	}
	v, err := s.resume(r.Context(), l)
	if code, msg, ok := resumeRefusal(err); ok {
		s.Log.Info("resume refused", "key", string(l.key), "owner", l.claim.Owner, "link", l.claim.ID, "client", c.Key(), "why", err.Error())
		s.resumePage(w, code, resumeData{Title: "Cannot resume", Message: msg})
		return
	}
	if err != nil {
		// Never the token or the link: the key finds the environment, the token's id (useless
		// without its MAC) names the link.
		s.Log.Error(err, "resume failed", "key", string(l.key), "owner", l.claim.Owner, "link", l.claim.ID)
		s.resumePage(w, http.StatusServiceUnavailable, resumeData{Title: retryTitle, Message: "Kustos could not record the resume just now; the link still works."})
		return
	}
	ownerActions.WithLabelValues("resume").Inc()
	s.Log.Info("resume asked by the target's owner", "key", string(l.key), "owner", l.claim.Owner, "link", l.claim.ID, "client", c.Key(),
		"field", v.Field, "restores", v.Value, "until", untilText(v.Until))
	s.resumedEvent(r.Context(), l, v)
	s.resumePage(w, http.StatusOK, resumeData{Title: "Resuming", Environment: describeTarget(l.key), Field: v.Field, Value: v.Value, Until: untilText(v.Until), Done: true})
}

// resume records the request in the target's Lease with the link's id, in one write conditional
// on the version read, so a link works once even when two replicas receive it at once.
func (s *Server) resume(ctx context.Context, l resumeLink) (resumeView, error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.linkLease(ctx, l.key)
		if err != nil {
			return resumeView{}, err
		}
		v, bag, err := resumable(rec, l, s.Now())
		if err != nil {
			return v, err
		}
		if _, err = s.Store.SetBag(ctx, rec, bag); err == nil {
			return v, nil
		}
		if !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) || attempt >= 4 {
			return resumeView{}, err
		}
	}
}

// resumedEvent writes the OwnerResumed Event on the target. The request is recorded already: a
// failed Event is logged, and the owner still sees the request done.
func (s *Server) resumedEvent(ctx context.Context, l resumeLink, v resumeView) {
	if s.Resume.Reporter == nil {
		return
	}
	ref := targetRef(l.key, s.Resume.Mapper)
	msg := fmt.Sprintf("its owner asked to resume it: %s goes back to %s, as it was before Kustos paused it at %s; it counts as used now",
		v.Field, v.Value, v.PausedAt.UTC().Format(time.RFC3339))
	if !v.Until.IsZero() {
		msg = fmt.Sprintf("its owner asked to resume it for %s: %s goes back to %s, as it was before Kustos paused it at %s; it now expires at %s",
			l.period.Name, v.Field, v.Value, v.PausedAt.UTC().Format(time.RFC3339), untilText(v.Until))
	}
	if err := s.Resume.Reporter.Notify(ctx, ref, corev1.EventTypeNormal, ReasonOwnerResumed, msg, "owner-resumed|"+string(l.key)+"|"+l.claim.ID, s.Now()); err != nil {
		s.Log.Error(err, "writing the OwnerResumed Event", "key", string(l.key))
	}
}

// resumeLimited limits one verified resume link, from whatever addresses it comes (see
// linkLimited).
func (s *Server) resumeLimited(w http.ResponseWriter, l resumeLink) bool {
	return s.tokenLimited(w, "resume:", l.key, l.claim.ID)
}

type resumeData struct {
	Title, Message, Environment, Field, Value, Key, Token string
	// Period and Until: an expiry resume's extension (empty for an inactivity resume).
	Period, Until string
	Done          bool
}

// untilText is an expiry resume's new deadline on a page ("" for none).
func untilText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

var resumeTemplate = template.Must(template.New("resume").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>{{.Title}} · Kustos</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{.Message}}</p>{{end}}
{{if .Done}}<p>{{.Environment}} is resumed: {{.Field}} goes back to <strong>{{.Value}}</strong> (a pull request when Git defines it).{{if .Until}} It now expires at <strong>{{.Until}}</strong>.{{else}} It counts as used from now on.{{end}}</p>
{{else if .Token}}{{if .Until}}<p>{{.Environment}} was paused when it expired. Resuming sets {{.Field}} back to <strong>{{.Value}}</strong>, as it was before the pause, and extends it by {{.Period}}: it then expires at <strong>{{.Until}}</strong>.</p>
{{else}}<p>{{.Environment}} was paused because it was not used. Resuming sets {{.Field}} back to <strong>{{.Value}}</strong>, as it was before the pause.</p>
{{end}}<form method="post" action="resume">
<input type="hidden" name="key" value="{{.Key}}">{{if .Period}}<input type="hidden" name="period" value="{{.Period}}">{{end}}<input type="hidden" name="token" value="{{.Token}}">
<button type="submit">Resume{{if .Period}} for {{.Period}}{{end}}</button>
</form>{{end}}
</body></html>
`))

func (s *Server) resumePage(w http.ResponseWriter, code int, d resumeData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := resumeTemplate.Execute(w, d); err != nil {
		s.Log.Error(err, "writing the resume page")
	}
}
