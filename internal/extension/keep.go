package extension

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// KeepPath is where an inactivity alert's keep links point: GET shows what the link would do,
// POST keeps the target.
const KeepPath = "/keep"

// ReasonOwnerKept is the Event on a target its owner kept with a keep link.
const ReasonOwnerKept = "OwnerKept"

// Keeper is the keep links' part of the server (Server.Keep): an owner answers an inactivity
// alert by keeping the target for one of Periods. The keep is recorded in the target's Lease
// (the inactivity detector's state) with the link's id, in one conditional write: each link
// works once, on any replica. kustos.io/inactivity-timeout is not changed: a keep is a promise
// for one idle period, not a new policy.
type Keeper struct {
	// Periods are --inactivity-keep-periods; Max is --inactivity-keep-max: no period longer is
	// honoured, whatever a link says.
	Periods []Period
	Max     time.Duration
	// Reporter writes the OwnerKept Event on the target (nil: none); Mapper names the version
	// of the target's kind in it (nil: the Event's reference names the group only).
	Reporter EventReporter
	Mapper   KindMapper
}

// EventReporter writes one Event about ref, once per id (the pipeline's reporter).
type EventReporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// KindMapper finds a kind's served version (the manager's RESTMapper).
type KindMapper interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// ownerActions counts what owners made Kustos do through their links, by action.
var ownerActions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kustos_owner_actions_total",
	Help: "Owner actions carried out through one-time links, by action (extend, keep, resume).",
}, []string{"action"})

func init() { ctrlmetrics.Registry.MustRegister(ownerActions) }

// ParseKeepPeriods parses --inactivity-keep-periods ("1d,3d,1w") and checks them against
// longest (--inactivity-keep-max), as the inactivity detector's options do.
func ParseKeepPeriods(list []string, longest time.Duration) ([]Period, error) {
	kp, err := inactivity.ParseKeepPeriods(list, longest)
	if err != nil {
		return nil, err
	}
	out := make([]Period, len(kp))
	for i, p := range kp {
		out[i] = Period(p)
	}
	return out, nil
}

// NewKeeper serves the keep links of the inactivity detector's alerts (in's KeepPeriods and
// KeepMax); mapper names the targets' versions in the OwnerKept Events. No periods (options
// built without inactivity.DefaultOptions): nil, no keep links.
func NewKeeper(in inactivity.Options, mapper KindMapper) (*Keeper, error) {
	if len(in.KeepPeriods) == 0 {
		return nil, nil
	}
	periods, err := ParseKeepPeriods(in.KeepPeriods, in.KeepMax)
	if err != nil {
		return nil, err
	}
	return &Keeper{Periods: periods, Max: in.KeepMax, Mapper: mapper}, nil
}

// KeepLinks are an inactivity alert's keep links for key, issued to owner (as recorded in the
// target's state), answering the alert sent at alertAt about the idle period since idleSince;
// they work until expires, and once each. No Keeper: none.
func (s *Server) KeepLinks(key lifecycle.Key, owner string, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error) {
	if s.Keep == nil {
		return nil, nil
	}
	var out []lifecycle.NoticeLink
	for _, p := range s.Keep.Periods {
		tok, err := s.Signer.MintKeep(key, owner, p.Name, idleSince, alertAt, expires)
		if err != nil {
			return nil, err
		}
		q := url.Values{"key": {string(key)}, "period": {p.Name}, "token": {tok}}
		out = append(out, lifecycle.NoticeLink{Label: "Keep for " + p.Name, URL: s.BaseURL + KeepPath + "?" + q.Encode()})
	}
	return out, nil
}

// keepLink is a keep request's key, period and token, checked.
type keepLink struct {
	key    lifecycle.Key
	period Period
	token  string
	claim  KeepClaim
}

// checkKeep verifies a keep link's token and period; the error is what the page says.
func (s *Server) checkKeep(q url.Values) (keepLink, int, error) {
	l := keepLink{key: lifecycle.Key(q.Get("key")), token: q.Get("token")}
	name := q.Get("period")
	if l.key == "" || name == "" || l.token == "" {
		return l, http.StatusBadRequest, errors.New("the link is incomplete: it needs key, period and token")
	}
	if p, ok := l.key.Parts(); !ok || p.Detector != inactivity.DetectorName || p.KindGroup == "" {
		return l, http.StatusBadRequest, errors.New("the link does not name an environment Kustos watches for inactivity")
	}
	c, err := s.Signer.VerifyKeep(l.token, l.key, name, s.Now())
	switch {
	case errors.Is(err, ErrExpired):
		return l, http.StatusGone, errors.New("this link has expired; every alert carries new links")
	case err != nil:
		return l, http.StatusForbidden, errors.New("this link is not valid: it was changed or is not from Kustos (a longer period cannot be chosen by editing the link)")
	}
	d, err := lifecycle.ParseDuration(name)
	if err != nil || d <= 0 || d > s.Keep.Max {
		return l, http.StatusForbidden, fmt.Errorf("keeping for %s is more than allowed (at most %s)", name, s.Keep.Max)
	}
	l.period, l.claim = Period{Name: name, D: d}, c
	return l, 0, nil
}

// Why a keep link keeps nothing; the status and what the page says are in keepRefusal.
var (
	errNotOwner   = errors.New("issued to another owner")
	errNotAlerted = errors.New("no longer alerted")
	errKept       = errors.New("already kept since this alert")
)

// keepable says whether the link l keeps the target whose Lease is rec: the Lease is there (a
// removed target's is swept), the link is unused, issued to the owner the state names now, the
// target is not paused, still idle in the period the alert was about, and not kept since.
func keepable(rec state.Record, l keepLink) (inactivity.State, error) {
	if len(rec.Bag) == 0 && rec.LastModified.IsZero() {
		return inactivity.State{}, errGone
	}
	st, _ := inactivity.ParseState(rec.Bag)
	switch {
	case st.KeepTokenUsed(l.claim.ID):
		return st, errUsed
	case KeepOwner(st.Owner) != l.claim.Owner:
		return st, errNotOwner
	case st.Paused:
		return st, errGone
	case !st.AlertsFor.Truncate(time.Second).Equal(l.claim.IdleSince):
		// The token carries the idle period's start to the second; the state has it exactly.
		return st, errNotAlerted
	case !st.KeptAt.Before(l.claim.AlertAt):
		return st, errKept
	}
	return st, nil
}

// keepRefusal is the status and the page's message for a refused keep.
func keepRefusal(err error) (int, string, bool) {
	switch {
	case errors.Is(err, errUsed):
		return http.StatusConflict, "This link was already used; each link works once.", true
	case errors.Is(err, errKept):
		return http.StatusConflict, "This environment was already kept after this alert; the next alert comes with new links.", true
	case errors.Is(err, errNotOwner):
		return http.StatusForbidden, "This link was issued to another owner of this environment; its owner has changed since.", true
	case errors.Is(err, errNotAlerted):
		return http.StatusGone, "This environment is no longer alerted: it was used (or restarted) since the alert, so there is nothing to keep.", true
	case errors.Is(err, errGone):
		return http.StatusGone, "This link no longer keeps anything: the environment was paused or removed.", true
	}
	return 0, "", false
}

// keepGet shows what a keep link would do; keepPost keeps.
func (s *Server) keepGet(w http.ResponseWriter, r *http.Request) {
	l, code, err := s.checkKeep(r.URL.Query())
	if err != nil {
		s.keepPage(w, code, keepData{Title: "Cannot keep", Message: err.Error()})
		return
	}
	if s.keepLimited(w, l) {
		return
	}
	rec, err := s.linkLease(r.Context(), l.key)
	if err != nil {
		s.keepPage(w, http.StatusServiceUnavailable, keepData{Title: retryTitle, Message: readRetryMessage})
		return
	}
	if _, err := keepable(rec, l); err != nil {
		code, msg, _ := keepRefusal(err)
		s.keepPage(w, code, keepData{Title: "Cannot keep", Message: msg})
		return
	}
	s.keepPage(w, http.StatusOK, keepData{Title: "Keep " + describeTarget(l.key), Environment: describeTarget(l.key),
		Until: s.Now().Add(l.period.D).UTC().Truncate(time.Second).Format(time.RFC3339), Period: l.period.Name, Key: string(l.key), Token: l.token})
}

func (s *Server) keepPost(w http.ResponseWriter, r *http.Request, c Client) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		s.keepPage(w, http.StatusBadRequest, keepData{Title: "Cannot keep", Message: "the form could not be read"})
		return
	}
	l, code, err := s.checkKeep(r.PostForm)
	if err != nil {
		s.keepPage(w, code, keepData{Title: "Cannot keep", Message: err.Error()})
		return
	}
	if s.keepLimited(w, l) {
		return
	}
	until, err := s.keep(r.Context(), l)
	if code, msg, ok := keepRefusal(err); ok {
		s.Log.Info("keep refused", "key", string(l.key), "owner", l.claim.Owner, "period", l.period.Name, "link", l.claim.ID, "client", c.Key(), "why", err.Error())
		s.keepPage(w, code, keepData{Title: "Cannot keep", Message: msg})
		return
	}
	if err != nil {
		// Never the token or the link: the key finds the environment, the token's id (useless
		// without its MAC) names the link.
		s.Log.Error(err, "keep failed", "key", string(l.key), "owner", l.claim.Owner, "period", l.period.Name, "link", l.claim.ID)
		s.keepPage(w, http.StatusServiceUnavailable, keepData{Title: retryTitle, Message: "Kustos could not record the keep just now; the link still works."})
		return
	}
	ownerActions.WithLabelValues("keep").Inc()
	s.Log.Info("target kept by its owner", "key", string(l.key), "owner", l.claim.Owner, "period", l.period.Name, "link", l.claim.ID, "client", c.Key(), "until", until.Format(time.RFC3339))
	s.keptEvent(r.Context(), l, until)
	s.keepPage(w, http.StatusOK, keepData{Title: "Kept", Environment: describeTarget(l.key), Until: until.Format(time.RFC3339), Done: true})
}

// keep records the keep in the target's Lease: the kept-until time and the link's id, in one
// write conditional on the version read, so a link works once even when two replicas receive
// it at the same time.
func (s *Server) keep(ctx context.Context, l keepLink) (time.Time, error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.linkLease(ctx, l.key)
		if err != nil {
			return time.Time{}, err
		}
		st, err := keepable(rec, l)
		if err != nil {
			return time.Time{}, err
		}
		now := s.Now()
		until := now.Add(l.period.D).UTC().Truncate(time.Second)
		st.Keep(l.claim.ID, until, now)
		if _, err = s.Store.SetBag(ctx, rec, st.Bag()); err == nil {
			return st.KeptUntil, nil
		}
		if !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) || attempt >= 4 {
			return time.Time{}, err
		}
	}
}

// keptEvent writes the OwnerKept Event on the target. The keep is recorded already: a failed
// Event is logged, and the owner still sees the keep done.
func (s *Server) keptEvent(ctx context.Context, l keepLink, until time.Time) {
	if s.Keep.Reporter == nil {
		return
	}
	ref := targetRef(l.key, s.Keep.Mapper)
	msg := fmt.Sprintf("kept by its owner for %s, until %s: not alerted, paused or deleted before then (kustos.io/inactivity-timeout is unchanged)", l.period.Name, until.Format(time.RFC3339))
	if err := s.Keep.Reporter.Notify(ctx, ref, corev1.EventTypeNormal, ReasonOwnerKept, msg, "owner-kept|"+string(l.key)+"|"+l.claim.ID, s.Now()); err != nil {
		s.Log.Error(err, "writing the OwnerKept Event", "key", string(l.key))
	}
}

// targetRef is the Event reference of k's target; mapper (nil: none) names its kind's version,
// else the reference names the group only.
func targetRef(k lifecycle.Key, mapper KindMapper) corev1.ObjectReference {
	p, _ := k.Parts()
	kind, group, _ := strings.Cut(p.KindGroup, ".")
	apiVersion := group
	if mapper != nil {
		if m, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}); err == nil {
			apiVersion = m.GroupVersionKind.GroupVersion().String()
		}
	}
	return corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: p.Namespace, Name: p.Name}
}

// keepLimited limits one verified keep link, from whatever addresses it comes (see linkLimited).
func (s *Server) keepLimited(w http.ResponseWriter, l keepLink) bool {
	return s.tokenLimited(w, "keep:", l.key, l.claim.ID)
}

// describeTarget names the target of k on a page.
func describeTarget(k lifecycle.Key) string {
	p, _ := k.Parts()
	if p.Namespace == "" {
		return p.KindGroup + " " + p.Name
	}
	return p.KindGroup + " " + p.Name + " in namespace " + p.Namespace
}

type keepData struct {
	Title, Message, Environment, Until, Period, Key, Token string
	Done                                                   bool
}

var keepTemplate = template.Must(template.New("keep").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>{{.Title}} · Kustos</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{.Message}}</p>{{end}}
{{if .Done}}<p>{{.Environment}} is kept until <strong>{{.Until}}</strong>: it is not alerted, paused or deleted before then. If it is still not used by then, the alerts start over. Its inactivity timeout is unchanged.</p>
{{else if .Token}}<p>{{.Environment}} was not used for its inactivity timeout and will be paused or deleted after the alerts.</p>
<form method="post" action="keep">
<input type="hidden" name="key" value="{{.Key}}"><input type="hidden" name="period" value="{{.Period}}"><input type="hidden" name="token" value="{{.Token}}">
<button type="submit">Keep for {{.Period}} (until {{.Until}})</button>
</form>{{end}}
</body></html>
`))

func (s *Server) keepPage(w http.ResponseWriter, code int, d keepData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := keepTemplate.Execute(w, d); err != nil {
		s.Log.Error(err, "writing the keep page")
	}
}
