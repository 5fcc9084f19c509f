package extension

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// pausedAt is when Kustos decided the pause of vm-1 the resume links answer.
var pausedAt = alertAt.Add(48 * time.Hour).Truncate(time.Second)

// pausedState is vm-1 paused by Kustos from 3 replicas, owned by ana.
func pausedState() inactivity.State {
	return inactivity.State{UID: "u1", LastActivity: idleSince, AlertsFor: idleSince, AlertsSent: 3, LastAlertAt: alertAt, Paused: true,
		PausedAt: pausedAt, PauseField: "spec.replicas", PauseFrom: "3", Owner: keepOwner}
}

// newResumeHarness serves resume links on two replicas sharing one Lease store (a mode that
// pauses: direct or pr).
func newResumeHarness(t *testing.T) *keepHarness {
	h := newKeepHarness(t)
	h.store.Put(state.Record{Key: keepKey, Bag: pausedState().Bag()})
	for _, srv := range h.srv {
		srv.Resume = &Resumer{Reporter: h.events, Mapper: mapper{}}
	}
	return h
}

func (h *keepHarness) resumeLink(owner string, at time.Time) string {
	ls, err := h.srv[0].ResumeLinks(keepKey, owner, at, now.Add(30*24*time.Hour))
	if err != nil || len(ls) != 1 {
		h.t.Fatalf("resume links: %v, %v", ls, err)
	}
	return ls[0].URL
}

// TestResume: what an owner, a former owner and an attacker can do with the resume link of a
// pause; the link only records the request (the inactivity detector carries it out).
func TestResume(t *testing.T) {
	t.Run("GET shows what a resume restores and changes nothing", func(t *testing.T) {
		h := newResumeHarness(t)
		code, body := h.do(0, http.MethodGet, h.resumeLink(keepOwner, pausedAt))
		if code != http.StatusOK || !strings.Contains(body, "spec.replicas back to <strong>3</strong>") || !strings.Contains(body, `method="post"`) {
			t.Errorf("GET: %d\n%s", code, body)
		}
		if st := h.state(); st != pausedState() {
			t.Errorf("GET changed the state: %+v", st)
		}
	})
	t.Run("POST records the request once, with an Event, a log line naming the owner's id and a metric; a replay on another replica is 409", func(t *testing.T) {
		h := newResumeHarness(t)
		before := ownerAction(t, "resume")
		link := h.resumeLink(keepOwner, pausedAt)
		if code, body := h.do(0, http.MethodPost, link); code != http.StatusOK || !strings.Contains(body, "back to <strong>3</strong>") {
			t.Fatalf("POST: %d\n%s", code, body)
		}
		st := h.state()
		if !st.ResumeAt.Equal(now) || st.ResumeTokens == "" || st.PauseFrom != "3" || !st.PausedAt.Equal(pausedAt) {
			t.Errorf("state after POST: %+v", st)
		}
		if got := ownerAction(t, "resume") - before; got != 1 {
			t.Errorf("kustos_owner_actions_total{action=resume} grew by %v, want 1", got)
		}
		if len(h.events.got) != 1 {
			t.Fatalf("events: %+v", h.events.got)
		}
		ev := h.events.got[0]
		if ev.reason != ReasonOwnerResumed || ev.typ != corev1.EventTypeNormal || ev.ref != (corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "lab", Name: "vm-1"}) ||
			!strings.Contains(ev.msg, "spec.replicas goes back to 3") || strings.Contains(ev.msg, keepOwner) {
			t.Errorf("event: %+v", ev)
		}
		if code, body := h.do(1, http.MethodPost, link); code != http.StatusConflict || !strings.Contains(body, "already used") {
			t.Errorf("replay: %d\n%s", code, body)
		}
		if code, body := h.do(1, http.MethodPost, h.resumeLink(keepOwner, pausedAt)); code != http.StatusConflict || !strings.Contains(body, "already asked") {
			t.Errorf("another link of the same pause: %d\n%s", code, body)
		}
		if st2 := h.state(); st2 != st {
			t.Errorf("the replay changed the state: %+v", st2)
		}
		tok := queryOf(link).Get("token")
		h.logMu.Lock()
		logs := h.log.String()
		h.logMu.Unlock()
		if strings.Contains(logs, tok) || strings.Contains(logs, strings.Split(tok, ".")[5]) || strings.Contains(logs, keepOwner) {
			t.Errorf("the log holds the token or the owner's address:\n%s", logs)
		}
		if !strings.Contains(logs, `"resume asked by the target's owner"`) || !strings.Contains(logs, lifecycle.OwnerID(keepOwner)) {
			t.Errorf("no log line naming the owner's id:\n%s", logs)
		}
	})
	t.Run("after the resume (the record forgotten), the link used again is still 409", func(t *testing.T) {
		h := newResumeHarness(t)
		link := h.resumeLink(keepOwner, pausedAt)
		h.do(0, http.MethodPost, link)
		st := h.state()
		st.Paused, st.PausedAt, st.PauseField, st.PauseFrom, st.ResumeAt = false, time.Time{}, "", "", time.Time{}
		h.store.Put(state.Record{Key: keepKey, Bag: st.Bag()})
		if code, _ := h.do(1, http.MethodPost, link); code != http.StatusConflict {
			t.Errorf("replay after the resume: %d, want 409", code)
		}
	})
	t.Run("eight requests with one link on two replicas at once: it works once", func(t *testing.T) {
		h := newResumeHarness(t)
		link := h.resumeLink(keepOwner, pausedAt)
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
		if ok != 1 || strings.Contains(h.state().ResumeTokens, ",") {
			t.Errorf("%d successes, state %+v", ok, h.state())
		}
	})
	for _, tc := range []struct {
		name     string
		owner    string    // the link's
		pausedAt time.Time // the pause the link answers
		set      func(*inactivity.State)
		gone     bool // the Lease is swept
		code     int
		says     string
	}{
		{name: "a link issued to a former owner is refused", owner: "bo@example.org", pausedAt: pausedAt, code: http.StatusForbidden, says: "another owner"},
		{name: "a target no longer paused (it runs again) is left alone", owner: keepOwner, pausedAt: pausedAt, set: func(s *inactivity.State) {
			s.Paused, s.PausedAt, s.PauseField, s.PauseFrom = false, time.Time{}, "", ""
		}, code: http.StatusGone, says: "no longer in the pause"},
		{name: "a link of an earlier pause does not resume a later one", owner: keepOwner, pausedAt: pausedAt.Add(-72 * time.Hour), code: http.StatusGone, says: "no longer in the pause"},
		{name: "a target deleted and created again (another UID: the detector dropped the record)", owner: keepOwner, pausedAt: pausedAt, set: func(s *inactivity.State) {
			*s = inactivity.State{UID: "u2", LastActivity: now}
		}, code: http.StatusGone, says: "created again"},
		{name: "a removed target (its Lease swept) is left alone", owner: keepOwner, pausedAt: pausedAt, gone: true, code: http.StatusGone, says: "removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newResumeHarness(t)
			if tc.set != nil {
				st := pausedState()
				tc.set(&st)
				h.store.Put(state.Record{Key: keepKey, Bag: st.Bag()})
			}
			if tc.gone {
				h.store.Put(state.Record{Key: keepKey})
			}
			link := h.resumeLink(tc.owner, tc.pausedAt)
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				if code, body := h.do(0, m, link); code != tc.code || !strings.Contains(body, tc.says) {
					t.Errorf("%s: %d, want %d saying %q\n%s", m, code, tc.code, tc.says, body)
				}
			}
			if got := h.state(); !got.ResumeAt.IsZero() || len(h.events.got) != 0 {
				t.Errorf("resumed: %+v, events %+v", got, h.events.got)
			}
		})
	}
	t.Run("tampered, expired and other kinds' links are refused", func(t *testing.T) {
		h := newResumeHarness(t)
		link := h.resumeLink(keepOwner, pausedAt)
		tok := queryOf(link).Get("token")
		other := lifecycle.Key("inactivity/Deployment.apps/lab/vm-2")
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(other)}, "token": {tok}}.Encode()); code != http.StatusForbidden {
			t.Errorf("the link of vm-1 for vm-2: %d", code)
		}
		keep := queryOf(h.links(keepOwner)["1d"]).Get("token")
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(keepKey)}, "token": {keep}}.Encode()); code != http.StatusForbidden {
			t.Errorf("a keep token on /resume: %d", code)
		}
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(key)}, "token": {tok}}.Encode()); code != http.StatusBadRequest {
			t.Errorf("an expiry Key on /resume: %d", code)
		}
		expired, _ := h.srv[0].Signer.MintResume(keepKey, keepOwner, pausedAt, now.Add(-time.Second))
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(keepKey)}, "token": {expired}}.Encode()); code != http.StatusGone {
			t.Errorf("an expired link: %d", code)
		}
		if st := h.state(); !st.ResumeAt.IsZero() {
			t.Errorf("state: %+v", st)
		}
	})
	t.Run("the store fails: a clear page, the link still works", func(t *testing.T) {
		h := newResumeHarness(t)
		link := h.resumeLink(keepOwner, pausedAt)
		h.store.FailNext("SetBag", errors.New("etcd is down"))
		if code, body := h.do(0, http.MethodPost, link); code != http.StatusServiceUnavailable || !strings.Contains(body, "still works") {
			t.Errorf("POST: %d\n%s", code, body)
		}
		if code, _ := h.do(0, http.MethodPost, link); code != http.StatusOK {
			t.Errorf("retry: %d", code)
		}
	})
	t.Run("without a Resumer (observer mode: nothing was paused): no links, /resume is not found", func(t *testing.T) {
		h := newResumeHarness(t)
		link := h.resumeLink(keepOwner, pausedAt)
		h.srv[0].Resume = nil
		if ls, err := h.srv[0].ResumeLinks(keepKey, keepOwner, pausedAt, now.Add(time.Hour)); err != nil || ls != nil {
			t.Errorf("links: %v, %v", ls, err)
		}
		if code, _ := h.do(0, http.MethodPost, link); code != http.StatusNotFound {
			t.Errorf("POST: %d", code)
		}
	})
}

// TestResumeRecorded: a Lease whose resume request changed makes the inactivity detector look
// at its target at once; other changes, and other detectors' Leases, do not.
func TestResumeRecorded(t *testing.T) {
	lease := func(key, resumeAt string) client.Object {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{state.AnnotationKey: key}}}
		if resumeAt != "" {
			l.Annotations[state.BagPrefix+inactivity.BagResumeAt] = resumeAt
		}
		return l
	}
	if k, ok := ResumeRecorded(lease(string(keepKey), ""), lease(string(keepKey), "2026-11-24T12:00:00Z")); !ok || k != keepKey {
		t.Errorf("a new request: %q, %v", k, ok)
	}
	if _, ok := ResumeRecorded(lease(string(keepKey), "x"), lease(string(keepKey), "x")); ok {
		t.Error("no change triggered a look")
	}
	if _, ok := ResumeRecorded(lease(string(key), ""), lease(string(key), "x")); ok {
		t.Error("an expiry Lease triggered the inactivity detector")
	}
}

// ownerAction is kustos_owner_actions_total{action} now.
func ownerAction(t *testing.T, action string) float64 {
	var m dto.Metric
	if err := ownerActions.WithLabelValues(action).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// FuzzVerifyResume: any token and key from a resume link — hostile input — is refused with one of
// the three errors or accepted, never a panic; a genuine token stops working when any byte of it
// changes; and no token is both a resume token and another kind.
func FuzzVerifyResume(f *testing.F) {
	s, err := NewSigner(testKey)
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.MintResume(keepKey, "ana@example.org", pausedAt, deadline)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, string(keepKey), 0, byte(0))
	f.Add("r1.0123456789abcdef.-.1.2.x", "inactivity/x", 5, byte('x'))
	f.Add("", "", 0, byte(0))
	f.Fuzz(func(t *testing.T, token, k string, at int, b byte) {
		_, err := s.VerifyResume(token, lifecycle.Key(k), now)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrExpired) {
			t.Fatalf("verify %q: unexpected error %v", token, err)
		}
		if err == nil {
			if _, err := s.VerifyKeep(token, lifecycle.Key(k), "1d", now); err == nil {
				t.Fatalf("%q is both a resume and a keep token", token)
			}
			if _, err := s.VerifyOwner(token, now); err == nil {
				t.Fatalf("%q is both a resume and an owner token", token)
			}
		}
		i := at % len(good)
		if i < 0 {
			i = -i
		}
		if good[i] == b {
			return
		}
		changed := good[:i] + string(b) + good[i+1:]
		if _, err := s.VerifyResume(changed, keepKey, now); err == nil {
			t.Fatalf("a changed token %q still verifies", changed)
		}
	})
}
