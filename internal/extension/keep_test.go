package extension

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

const keepOwner = "ana@example.org"

type keptEvent struct {
	ref                  corev1.ObjectReference
	typ, reason, msg, id string
}

type eventSink struct {
	mu  sync.Mutex
	got []keptEvent
}

func (e *eventSink) Notify(_ context.Context, ref corev1.ObjectReference, typ, reason, msg, id string, _ time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, keptEvent{ref, typ, reason, msg, id})
	return nil
}

type mapper struct{}

func (mapper) RESTMapping(gk schema.GroupKind, _ ...string) (*meta.RESTMapping, error) {
	return &meta.RESTMapping{GroupVersionKind: gk.WithVersion("v1")}, nil
}

type keepHarness struct {
	t      *testing.T
	store  *pipelinetest.MemStore
	srv    []*Server
	http   []*httptest.Server
	events *eventSink
	log    *bytes.Buffer
	logMu  sync.Mutex
}

// alerted is the state of vm-1 after its first alert (at alertAt, about the idle period since
// idleSince), owned by ana.
func alerted() inactivity.State {
	return inactivity.State{UID: "u1", LastActivity: idleSince, AlertsFor: idleSince, AlertsSent: 1, LastAlertAt: alertAt, Owner: keepOwner}
}

// newKeepHarness serves keep links on two replicas sharing one Lease store.
func newKeepHarness(t *testing.T) *keepHarness {
	h := &keepHarness{t: t, store: pipelinetest.NewMemStore(), events: &eventSink{}, log: &bytes.Buffer{}}
	h.store.Put(state.Record{Key: keepKey, Bag: alerted().Bag()})
	periods, err := ParseKeepPeriods([]string{"1d", "3d", "1w"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	log := funcr.New(func(prefix, args string) {
		h.logMu.Lock()
		defer h.logMu.Unlock()
		h.log.WriteString(args + "\n")
	}, funcr.Options{Verbosity: 1})
	for _, replica := range []string{"a", "b"} {
		srv := &Server{Signer: signer(t), Store: h.store.As(replica), Now: func() time.Time { return now }, PerMinute: 1000, Log: log,
			Keep: &Keeper{Periods: periods, Max: 14 * 24 * time.Hour, Reporter: h.events, Mapper: mapper{}}}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		srv.BaseURL = hs.URL
		h.srv, h.http = append(h.srv, srv), append(h.http, hs)
	}
	return h
}

func (h *keepHarness) links(owner string) map[string]string {
	ls, err := h.srv[0].KeepLinks(keepKey, owner, idleSince, alertAt, now.Add(72*time.Hour))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[strings.TrimPrefix(l.Label, "Keep for ")] = l.URL
	}
	return out
}

// do sends link to replica i: GET as it is, POST with its query as the form.
func (h *keepHarness) do(i int, method, link string) (int, string) {
	h.t.Helper()
	u, _ := url.Parse(link)
	var resp *http.Response
	var err error
	if method == http.MethodGet {
		resp, err = http.Get(h.http[i].URL + u.Path + "?" + u.RawQuery)
	} else {
		resp, err = http.PostForm(h.http[i].URL+u.Path, u.Query())
	}
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *keepHarness) state() inactivity.State {
	st, bad := inactivity.ParseState(h.store.Record(keepKey).Bag)
	if len(bad) > 0 {
		h.t.Fatalf("unreadable state: %v", bad)
	}
	return st
}

// TestKeep: what an owner, a former owner and an attacker can do with the keep links of one
// inactivity alert.
func TestKeep(t *testing.T) {
	day := 24 * time.Hour
	t.Run("GET shows the choice and changes nothing", func(t *testing.T) {
		h := newKeepHarness(t)
		code, body := h.do(0, http.MethodGet, h.links(keepOwner)["3d"])
		if code != http.StatusOK || !strings.Contains(body, "Deployment.apps vm-1 in namespace lab") || !strings.Contains(body, `method="post"`) ||
			!strings.Contains(body, now.Add(3*day).Format(time.RFC3339)) {
			t.Errorf("GET: %d\n%s", code, body)
		}
		if st := h.state(); st != alerted() {
			t.Errorf("GET changed the state: %+v", st)
		}
	})
	t.Run("POST keeps once, with an Event, a log line naming the owner's id and a metric; a replay on another replica is 409", func(t *testing.T) {
		h := newKeepHarness(t)
		before := keeps(t)
		link := h.links(keepOwner)["3d"]
		code, body := h.do(0, http.MethodPost, link)
		if code != http.StatusOK || !strings.Contains(body, now.Add(3*day).Format(time.RFC3339)) {
			t.Fatalf("POST: %d\n%s", code, body)
		}
		st := h.state()
		if !st.KeptUntil.Equal(now.Add(3*day)) || !st.KeptAt.Equal(now) || st.KeepTokens == "" || st.AlertsSent != 1 || !st.AlertsFor.Equal(idleSince) {
			t.Errorf("state after POST: %+v", st)
		}
		if got := keeps(t) - before; got != 1 {
			t.Errorf("kustos_owner_actions_total{action=keep} grew by %v, want 1", got)
		}
		if len(h.events.got) != 1 {
			t.Fatalf("events: %+v", h.events.got)
		}
		ev := h.events.got[0]
		if ev.reason != ReasonOwnerKept || ev.typ != corev1.EventTypeNormal || ev.ref != (corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "lab", Name: "vm-1"}) ||
			!strings.Contains(ev.msg, now.Add(3*day).Format(time.RFC3339)) || strings.Contains(ev.msg, keepOwner) {
			t.Errorf("event: %+v", ev)
		}
		if code, body := h.do(1, http.MethodPost, link); code != http.StatusConflict || !strings.Contains(body, "already used") {
			t.Errorf("replay: %d\n%s", code, body)
		}
		if st2 := h.state(); st2 != st {
			t.Errorf("the replay changed the state: %+v", st2)
		}
		tok := queryOf(link).Get("token")
		h.logMu.Lock()
		logs := h.log.String()
		h.logMu.Unlock()
		if strings.Contains(logs, tok) || strings.Contains(logs, strings.Split(tok, ".")[6]) || strings.Contains(logs, keepOwner) {
			t.Errorf("the log holds the token or the owner's address:\n%s", logs)
		}
		if !strings.Contains(logs, `"target kept by its owner"`) || !strings.Contains(logs, lifecycle.OwnerID(keepOwner)) {
			t.Errorf("no log line naming the owner's id:\n%s", logs)
		}
	})
	t.Run("another link of the same alert after a keep is 409: one keep per alert", func(t *testing.T) {
		h := newKeepHarness(t)
		ls := h.links(keepOwner)
		h.do(0, http.MethodPost, ls["1d"])
		if code, body := h.do(0, http.MethodPost, ls["1w"]); code != http.StatusConflict || !strings.Contains(body, "already kept") {
			t.Errorf("second link: %d\n%s", code, body)
		}
		if st := h.state(); !st.KeptUntil.Equal(now.Add(day)) {
			t.Errorf("state: %+v", st)
		}
	})
	t.Run("eight requests with one link on two replicas at once: it works once", func(t *testing.T) {
		h := newKeepHarness(t)
		link := h.links(keepOwner)["1w"]
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := h.do(i%2, http.MethodPost, link)
				codes <- code
			}()
		}
		wg.Wait()
		close(codes)
		ok := 0
		for c := range codes {
			if c == http.StatusOK {
				ok++
			} else if c != http.StatusConflict {
				t.Errorf("status %d", c)
			}
		}
		if ok != 1 || h.state().KeepTokens == "" || strings.Contains(h.state().KeepTokens, ",") {
			t.Errorf("%d successes, state %+v", ok, h.state())
		}
	})
	for _, tc := range []struct {
		name  string
		owner string // the link's
		set   func(*inactivity.State)
		gone  bool // the Lease is swept
		code  int
		says  string
	}{
		{name: "a link issued to a former owner is refused", owner: "bo@example.org", code: http.StatusForbidden, says: "another owner"},
		{name: "a target used since the alert is no longer alerted", owner: keepOwner, set: func(s *inactivity.State) {
			s.AlertsFor, s.AlertsSent, s.LastAlertAt, s.LastActivity = time.Time{}, 0, time.Time{}, now.Add(-time.Hour)
		}, code: http.StatusGone, says: "no longer alerted"},
		{name: "a paused target keeps nothing", owner: keepOwner, set: func(s *inactivity.State) { s.Paused = true }, code: http.StatusGone, says: "paused or removed"},
		{name: "a removed target (its Lease swept) keeps nothing", owner: keepOwner, gone: true, code: http.StatusGone, says: "paused or removed"},
		{name: "a link of an alert from before a keep does not keep again after it", owner: keepOwner, set: func(s *inactivity.State) {
			s.KeptAt = alertAt.Add(time.Minute)
		}, code: http.StatusConflict, says: "already kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newKeepHarness(t)
			st := alerted()
			if tc.set != nil {
				tc.set(&st)
				if st.AlertsFor.IsZero() {
					st.Owner = ""
				}
				h.store.Put(state.Record{Key: keepKey, Bag: st.Bag()})
			}
			if tc.gone {
				h.store.Put(state.Record{Key: keepKey})
			}
			link := h.links(tc.owner)["3d"]
			if tc.set != nil && st.AlertsFor.IsZero() {
				link = h.links("")["3d"] // the state names no owner once the alerts are void
			}
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				if code, body := h.do(0, m, link); code != tc.code || !strings.Contains(body, tc.says) {
					t.Errorf("%s: %d, want %d saying %q\n%s", m, code, tc.code, tc.says, body)
				}
			}
			if got := h.state(); !got.KeptUntil.IsZero() || len(h.events.got) != 0 {
				t.Errorf("kept: %+v, events %+v", got, h.events.got)
			}
		})
	}
	t.Run("a tampered period, a period over the maximum and other kinds' links are refused", func(t *testing.T) {
		h := newKeepHarness(t)
		link := h.links(keepOwner)["1d"]
		if code, body := h.do(0, http.MethodPost, strings.Replace(link, "period=1d", "period=1w", 1)); code != http.StatusForbidden || !strings.Contains(body, "not valid") {
			t.Errorf("tampered period: %d\n%s", code, body)
		}
		h.srv[0].Keep.Max = 12 * time.Hour
		if code, body := h.do(0, http.MethodPost, link); code != http.StatusForbidden || !strings.Contains(body, "more than allowed") {
			t.Errorf("over the maximum: %d\n%s", code, body)
		}
		h.srv[0].Keep.Max = 14 * day
		ext, _ := h.srv[0].Signer.Mint(keepKey, "1d", deadline, deadline)
		if code, _ := h.do(0, http.MethodPost, KeepPath+"?"+url.Values{"key": {string(keepKey)}, "period": {"1d"}, "token": {ext}}.Encode()); code != http.StatusForbidden {
			t.Errorf("an extension token on /keep: %d", code)
		}
		if code, _ := h.do(0, http.MethodPost, KeepPath+"?"+url.Values{"key": {string(key)}, "period": {"1d"}, "token": {queryOf(link).Get("token")}}.Encode()); code != http.StatusBadRequest {
			t.Errorf("an expiry Key on /keep: %d", code)
		}
		if code, _ := h.do(0, http.MethodPost, strings.Replace(link, KeepPath, "/extend", 1)); code == http.StatusOK {
			t.Error("a keep link worked on /extend")
		}
		if st := h.state(); !st.KeptUntil.IsZero() {
			t.Errorf("state: %+v", st)
		}
	})
	t.Run("the store fails: a clear page, the link still works", func(t *testing.T) {
		h := newKeepHarness(t)
		link := h.links(keepOwner)["3d"]
		h.store.FailNext("SetBag", errors.New("etcd is down"))
		if code, body := h.do(0, http.MethodPost, link); code != http.StatusServiceUnavailable || !strings.Contains(body, "still works") {
			t.Errorf("POST: %d\n%s", code, body)
		}
		if code, _ := h.do(0, http.MethodPost, link); code != http.StatusOK {
			t.Errorf("retry: %d", code)
		}
	})
	t.Run("rate limit per link, from any address", func(t *testing.T) {
		h := newKeepHarness(t)
		h.srv[0].LinkPerMinute = 2
		link := h.links(keepOwner)["3d"]
		var last int
		for range 3 {
			last, _ = h.do(0, http.MethodGet, link)
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("third GET of one link: %d", last)
		}
	})
	t.Run("without a Keeper: no keep links, /keep is not found", func(t *testing.T) {
		h := newKeepHarness(t)
		link := h.links(keepOwner)["3d"]
		h.srv[0].Keep = nil
		if ls, err := h.srv[0].KeepLinks(keepKey, keepOwner, idleSince, alertAt, now.Add(day)); err != nil || ls != nil {
			t.Errorf("links: %v, %v", ls, err)
		}
		if code, _ := h.do(0, http.MethodPost, link); code != http.StatusNotFound {
			t.Errorf("POST: %d", code)
		}
	})
}

func TestParseKeepPeriods(t *testing.T) {
	for _, tc := range []struct {
		list []string
		ok   bool
	}{
		{[]string{"1d", "3d", "1w"}, true},
		{[]string{"3w"}, false},
		{[]string{"0d"}, false},
		{[]string{"soon"}, false},
		{nil, false},
	} {
		_, err := ParseKeepPeriods(tc.list, 14*24*time.Hour)
		if (err == nil) != tc.ok {
			t.Errorf("ParseKeepPeriods(%v) = %v, want ok %v", tc.list, err, tc.ok)
		}
	}
}

// keeps is kustos_owner_actions_total{action="keep"} now.
func keeps(t *testing.T) float64 {
	var m dto.Metric
	if err := ownerActions.WithLabelValues("keep").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestKeepFractionalBaseline: an alert's idle period often begins at a time with a fraction of a
// second (the sources' coverage since Kustos started, an activity sample); the token carries it
// to the second, and its link keeps all the same.
func TestKeepFractionalBaseline(t *testing.T) {
	h := newKeepHarness(t)
	since := idleSince.Add(347 * time.Millisecond)
	st := alerted()
	st.AlertsFor, st.LastAlertAt = since, alertAt.Add(12*time.Millisecond)
	h.store.Put(state.Record{Key: keepKey, Bag: st.Bag()})
	ls, err := h.srv[0].KeepLinks(keepKey, keepOwner, since, st.LastAlertAt, now.Add(72*time.Hour))
	if err != nil || len(ls) == 0 {
		t.Fatal(ls, err)
	}
	if code, body := h.do(0, http.MethodPost, ls[0].URL); code != http.StatusOK {
		t.Errorf("POST: %d\n%s", code, body)
	}
}
