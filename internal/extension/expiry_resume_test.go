package extension

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/state"
)

// expiryPausedAt is when the expiry detector paused preview (its deadline had passed).
var expiryPausedAt = now.Add(-time.Hour).Truncate(time.Second)

// expiryPaused is preview paused at its deadline from 3 replicas, owned by ana, warned and told.
func expiryPaused() expiry.State {
	return expiry.State{WarningFor: now.Add(-2 * time.Hour), WarnedAt: now.Add(-75 * time.Hour), NotifiedFor: now.Add(-2 * time.Hour),
		Owner: keepOwner, Deadline: now.Add(-2 * time.Hour), PausedAt: expiryPausedAt, PauseFrom: "3", PauseUID: "u1"}
}

// newExpiryResumeHarness serves the resume links of expiry pauses (periods 1d, 3d, 1w; at most
// 2w) on two replicas sharing one Lease store.
func newExpiryResumeHarness(t *testing.T) *keepHarness {
	h := newResumeHarness(t)
	h.store.Put(state.Record{Key: key, Bag: expiryPaused().Bag()})
	periods, err := ParsePeriods([]string{"1d", "3d", "1w"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range h.srv {
		srv.Periods, srv.Max = periods, 14*24*time.Hour
	}
	return h
}

// expiryResumeLinks are preview's resume links by period.
func (h *keepHarness) expiryResumeLinks(owner string, at time.Time) map[string]string {
	ls, err := h.srv[0].ResumeLinks(key, owner, at, now.Add(30*24*time.Hour))
	if err != nil || len(ls) != 3 {
		h.t.Fatalf("resume links: %v, %v", ls, err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[strings.TrimPrefix(l.Label, "Resume for ")] = l.URL
	}
	return out
}

func (h *keepHarness) expiryState() expiry.State {
	st, bad := expiry.ParseState(h.store.Record(key).Bag)
	if len(bad) > 0 {
		h.t.Fatalf("unreadable state: %v", bad)
	}
	return st
}

// TestExpiryResume: the resume link of an expiry pause resumes and extends in one; once, and
// only for the owner and the pause it was issued for.
func TestExpiryResume(t *testing.T) {
	day := 24 * time.Hour
	until := now.Add(3 * day).Format(time.RFC3339)
	t.Run("GET shows the restored replicas and the new deadline, and changes nothing", func(t *testing.T) {
		h := newExpiryResumeHarness(t)
		code, body := h.do(0, http.MethodGet, h.expiryResumeLinks(keepOwner, expiryPausedAt)["3d"])
		if code != http.StatusOK || !strings.Contains(body, "spec.replicas back to <strong>3</strong>") || !strings.Contains(body, until) ||
			!strings.Contains(body, `name="period" value="3d"`) || !strings.Contains(body, "Resume for 3d") {
			t.Errorf("GET: %d\n%s", code, body)
		}
		if st := h.expiryState(); !st.ResumeAt.IsZero() || !st.ExtendedUntil.IsZero() {
			t.Errorf("GET changed the state: %+v", st)
		}
	})
	t.Run("POST records the resume and the extension once, with an Event; a replay on another replica is 409", func(t *testing.T) {
		h := newExpiryResumeHarness(t)
		link := h.expiryResumeLinks(keepOwner, expiryPausedAt)["3d"]
		if code, body := h.do(0, http.MethodPost, link); code != http.StatusOK || !strings.Contains(body, until) {
			t.Fatalf("POST: %d\n%s", code, body)
		}
		st := h.expiryState()
		id := strings.Split(queryOf(link).Get("token"), ".")[1]
		if !st.ResumeAt.Equal(now) || st.ExtendedUntil.Format(time.RFC3339) != until || !st.ExtendedAt.Equal(now) ||
			!slices.Contains(st.UsedTokens, id) || st.PauseFrom != "3" {
			t.Errorf("state after POST: %+v", st)
		}
		if len(h.events.got) != 1 || h.events.got[0].reason != ReasonOwnerResumed || h.events.got[0].typ != corev1.EventTypeNormal ||
			!strings.Contains(h.events.got[0].msg, "now expires at "+until) || strings.Contains(h.events.got[0].msg, keepOwner) {
			t.Fatalf("events: %+v", h.events.got)
		}
		if code, body := h.do(1, http.MethodPost, link); code != http.StatusConflict || !strings.Contains(body, "already used") {
			t.Errorf("replay: %d\n%s", code, body)
		}
		if code, body := h.do(1, http.MethodPost, h.expiryResumeLinks(keepOwner, expiryPausedAt)["1w"]); code != http.StatusConflict || !strings.Contains(body, "already asked") {
			t.Errorf("another link of the same pause: %d\n%s", code, body)
		}
		if st2 := h.expiryState(); st2.ExtendedUntil.Format(time.RFC3339) != until {
			t.Errorf("the replay changed the deadline: %+v", st2)
		}
	})
	for _, tc := range []struct {
		name     string
		owner    string
		pausedAt time.Time
		set      func(*expiry.State)
		code     int
		says     string
	}{
		{name: "a link issued to another owner is refused", owner: "bo@example.org", pausedAt: expiryPausedAt, code: http.StatusForbidden, says: "another owner"},
		{name: "a link of an earlier pause", owner: keepOwner, pausedAt: expiryPausedAt.Add(-72 * time.Hour), code: http.StatusGone, says: "no longer in the pause"},
		{name: "a target no longer paused", owner: keepOwner, pausedAt: expiryPausedAt, set: func(s *expiry.State) {
			s.PausedAt, s.PauseFrom, s.PauseUID = time.Time{}, "", ""
		}, code: http.StatusGone, says: "no longer in the pause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newExpiryResumeHarness(t)
			if tc.set != nil {
				st := expiryPaused()
				tc.set(&st)
				h.store.Put(state.Record{Key: key, Bag: st.Bag()})
			}
			link := h.expiryResumeLinks(tc.owner, tc.pausedAt)["1d"]
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				if code, body := h.do(0, m, link); code != tc.code || !strings.Contains(body, tc.says) {
					t.Errorf("%s: %d, want %d saying %q\n%s", m, code, tc.code, tc.says, body)
				}
			}
			if got := h.expiryState(); !got.ResumeAt.IsZero() || !got.ExtendedUntil.IsZero() || len(h.events.got) != 0 {
				t.Errorf("resumed: %+v, events %+v", got, h.events.got)
			}
		})
	}
	t.Run("a longer period written into the link, an inactivity token and a link without its period are refused", func(t *testing.T) {
		h := newExpiryResumeHarness(t)
		q := queryOf(h.expiryResumeLinks(keepOwner, expiryPausedAt)["1d"])
		longer := url.Values{"key": {string(key)}, "period": {"1w"}, "token": {q.Get("token")}}
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+longer.Encode()); code != http.StatusForbidden {
			t.Errorf("1d link as 1w: %d, want 403", code)
		}
		tooLong := url.Values{"key": {string(key)}, "period": {"30d"}, "token": {q.Get("token")}}
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+tooLong.Encode()); code != http.StatusForbidden {
			t.Errorf("30d: %d, want 403", code)
		}
		inact, _ := h.srv[0].Signer.MintResume(key, keepOwner, expiryPausedAt, now.Add(day))
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(key)}, "period": {"1d"}, "token": {inact}}.Encode()); code != http.StatusForbidden {
			t.Errorf("an inactivity resume token for an expiry pause: %d, want 403", code)
		}
		if code, _ := h.do(0, http.MethodPost, ResumePath+"?"+url.Values{"key": {string(key)}, "token": {q.Get("token")}}.Encode()); code != http.StatusBadRequest {
			t.Errorf("no period: %d, want 400", code)
		}
		if got := h.expiryState(); !got.ResumeAt.IsZero() {
			t.Errorf("resumed: %+v", got)
		}
	})
}

// TestOwnerPageExpiryPaused: the owner's page shows an environment paused at its deadline as
// paused, with one resume button per period (the notice's links, to /resume), until a resume is
// asked; without a Resumer (observer mode paused nothing) it stays "removed".
func TestOwnerPageExpiryPaused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resumer bool
		asked   bool
		state   string
		buttons int
	}{
		{name: "paused: resume buttons", resumer: true, state: StatePaused, buttons: 3},
		{name: "resume asked: no buttons", resumer: true, asked: true, state: StateWarned, buttons: 0},
		{name: "no resumer", state: StateRemoved, buttons: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			st := expiry.State{WarningFor: deadline, WarnedAt: now, NotifiedFor: deadline, Owner: "ana", Deadline: deadline,
				PausedAt: deadline.Add(time.Minute), PauseFrom: "3", PauseUID: "u1"}
			if tc.asked {
				if _, err := st.RequestResume("00000000000000aa", st.PausedAt, 24*time.Hour, deadline.Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				st.Deadline, st.WarningFor = st.ExtendedUntil, st.ExtendedUntil // the look after it
			}
			h.store.Put(state.Record{Key: key, Bag: st.Bag()})
			h.srv.Owners = memOwners{h}
			if tc.resumer {
				h.srv.Resume = &Resumer{}
			}
			e := h.ownerPage()
			if e.State != tc.state || len(e.ResumeFor) != tc.buttons {
				t.Fatalf("page: %+v, want state %s with %d resume buttons", e, tc.state, tc.buttons)
			}
			if tc.buttons > 0 && (!strings.Contains(e.ResumeFor[0].URL, ResumePath+"?") || e.PauseFrom != "3" || e.PauseField != expiry.PauseField) {
				t.Errorf("resume buttons: %+v", e)
			}
		})
	}
}
