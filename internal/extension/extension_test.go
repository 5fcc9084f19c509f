package extension

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

var (
	now      = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	deadline = now.Add(48 * time.Hour)
	key      = lifecycle.Key("expiry/Deployment.apps/team-a/preview")
	testKey  = []byte("0123456789abcdef0123456789abcdef")
)

func signer(t *testing.T) *Signer {
	t.Helper()
	s, err := NewSigner(append(testKey, '\n'))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestToken(t *testing.T) {
	s := signer(t)
	tok, err := s.Mint(key, "3d", deadline, deadline.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, key, "3d", now)
	if err != nil || c.Key != key || c.Period != "3d" || !c.Deadline.Equal(deadline) || len(c.ID) != 16 {
		t.Fatalf("verify: %+v, %v", c, err)
	}
	other, _ := NewSigner([]byte("another key, 32 bytes or more......"))
	parts := strings.Split(tok, ".")
	tests := []struct {
		name          string
		signer        *Signer
		token, period string
		key           lifecycle.Key
		at            time.Time
		want          error
	}{
		{"a longer period written into the link", s, tok, "2w", key, now, ErrForged},
		{"another environment's key", s, tok, "3d", "expiry/Deployment.apps/team-b/preview", now, ErrForged},
		{"a later deadline written into the token", s, strings.Join([]string{parts[0], "9999999999", parts[2], parts[3]}, "."), "3d", key, now, ErrForged},
		{"a later expiry written into the token", s, strings.Join([]string{parts[0], parts[1], "9999999999", parts[3]}, "."), "3d", key, now, ErrForged},
		{"another id", s, strings.Join([]string{"00000000" + parts[0][8:], parts[1], parts[2], parts[3]}, "."), "3d", key, now, ErrForged},
		{"signed with another key", other, tok, "3d", key, now, ErrForged},
		{"expired", s, tok, "3d", key, deadline.Add(time.Hour), ErrExpired},
		{"truncated", s, tok[:len(tok)-5], "3d", key, now, ErrForged},
		{"not a token", s, "hello", "3d", key, now, ErrMalformed},
		{"a short id", s, "abc." + strings.Join(parts[1:], "."), "3d", key, now, ErrMalformed},
		{"a huge token", s, strings.Repeat("a", 300), "3d", key, now, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.signer.Verify(tt.token, tt.key, tt.period, tt.at); !errors.Is(err, tt.want) {
				t.Errorf("verify = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

type harness struct {
	t     *testing.T
	store *pipelinetest.MemStore
	srv   *Server
	http  *httptest.Server
	mu    sync.Mutex
	now   time.Time
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, store: pipelinetest.NewMemStore(), now: now}
	// The environment was warned about its deadline: its Lease says so (a link is minted only
	// with a warning).
	h.store.Put(state.Record{Key: key, Bag: expiry.State{WarningFor: deadline, WarnedAt: now}.Bag()})
	periods, err := ParsePeriods([]string{"3d", "1w", "2w"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = &Server{Signer: signer(t), Periods: periods, Max: 14 * 24 * time.Hour, Store: h.store.As("a"),
		Now: func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now }, PerMinute: 1000, Log: logr.Discard(), WriteBack: true}
	h.http = httptest.NewServer(h.srv)
	t.Cleanup(h.http.Close)
	h.srv.BaseURL = h.http.URL
	return h
}

func (h *harness) links() map[string]string {
	ls, err := h.srv.Links(key, deadline, deadline.Add(time.Hour))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[l.Period] = l.URL
	}
	return out
}

func (h *harness) do(method, link string) (int, string) {
	h.t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodGet {
		resp, err = http.Get(link)
	} else {
		u, _ := url.Parse(link)
		resp, err = http.PostForm(h.http.URL+"/extend", u.Query())
	}
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *harness) state() expiry.State {
	st, bad := expiry.ParseState(h.store.Record(key).Bag)
	if len(bad) > 0 {
		h.t.Fatalf("unreadable state: %v", bad)
	}
	return st
}

// TestServer: what an owner and an attacker can do with the links of one warning.
func TestServer(t *testing.T) {
	t.Run("GET shows the choice and changes nothing", func(t *testing.T) {
		h := newHarness(t)
		code, body := h.do(http.MethodGet, h.links()["1w"])
		if code != http.StatusOK || !strings.Contains(body, "Deployment.apps preview in namespace team-a") ||
			!strings.Contains(body, deadline.Format(time.RFC3339)) || !strings.Contains(body, `method="post"`) ||
			!strings.Contains(body, deadline.Add(7*24*time.Hour).Format(time.RFC3339)) {
			t.Errorf("GET: %d\n%s", code, body)
		}
		if st := h.state(); !st.ExtendedUntil.IsZero() || len(st.UsedTokens) != 0 {
			t.Errorf("GET changed the state: %+v", st)
		}
	})
	t.Run("POST extends once; the same link again is refused", func(t *testing.T) {
		h := newHarness(t)
		link := h.links()["1w"]
		code, body := h.do(http.MethodPost, link)
		want := deadline.Add(7 * 24 * time.Hour)
		if code != http.StatusOK || !strings.Contains(body, want.Format(time.RFC3339)) || !strings.Contains(body, "kustos.io/expires-at") {
			t.Fatalf("POST: %d\n%s", code, body)
		}
		st := h.state()
		if !st.ExtendedUntil.Equal(want) || !st.ExtendedAt.Equal(now) || len(st.UsedTokens) != 1 {
			t.Errorf("state after POST: %+v", st)
		}
		if code, body := h.do(http.MethodPost, link); code != http.StatusConflict || !strings.Contains(body, "already used") {
			t.Errorf("replay: %d\n%s", code, body)
		}
		if st2 := h.state(); !st2.ExtendedUntil.Equal(want) || len(st2.UsedTokens) != 1 {
			t.Errorf("state after the replay: %+v", st2)
		}
	})
	t.Run("a shorter link after a longer one keeps the longer deadline", func(t *testing.T) {
		h := newHarness(t)
		ls := h.links()
		h.do(http.MethodPost, ls["2w"])
		if code, _ := h.do(http.MethodPost, ls["3d"]); code != http.StatusOK {
			t.Fatalf("second link: %d", code)
		}
		if st := h.state(); !st.ExtendedUntil.Equal(deadline.Add(14*24*time.Hour)) || len(st.UsedTokens) != 2 {
			t.Errorf("state: %+v", st)
		}
	})
	t.Run("a tampered period is refused, saying why", func(t *testing.T) {
		h := newHarness(t)
		link := strings.Replace(h.links()["3d"], "period=3d", "period=2w", 1)
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if code, body := h.do(m, link); code != http.StatusForbidden || !strings.Contains(body, "a longer period cannot be chosen") {
				t.Errorf("%s: %d\n%s", m, code, body)
			}
		}
		if st := h.state(); !st.ExtendedUntil.IsZero() {
			t.Errorf("state: %+v", st)
		}
	})
	t.Run("a period over --extension-max is refused even when signed", func(t *testing.T) {
		h := newHarness(t)
		h.srv.Max = 5 * 24 * time.Hour // lowered since the links were sent
		if code, body := h.do(http.MethodPost, h.links()["1w"]); code != http.StatusForbidden || !strings.Contains(body, "more than allowed") {
			t.Errorf("POST: %d\n%s", code, body)
		}
	})
	t.Run("an expired link is gone", func(t *testing.T) {
		h := newHarness(t)
		link := h.links()["3d"]
		h.mu.Lock()
		h.now = deadline.Add(2 * time.Hour)
		h.mu.Unlock()
		if code, body := h.do(http.MethodPost, link); code != http.StatusGone || !strings.Contains(body, "expired") {
			t.Errorf("POST: %d\n%s", code, body)
		}
	})
	t.Run("incomplete links, other keys, other methods", func(t *testing.T) {
		h := newHarness(t)
		if code, _ := h.do(http.MethodGet, h.http.URL+"/extend?key=x"); code != http.StatusBadRequest {
			t.Errorf("incomplete: %d", code)
		}
		if code, _ := h.do(http.MethodGet, h.http.URL+"/extend?key=quota/a/b&period=3d&token=x"); code != http.StatusBadRequest {
			t.Errorf("a quota key: %d", code)
		}
		big := url.Values{"key": {string(key)}, "period": {"3d"}, "token": {strings.Repeat("a", 1<<20)}}
		resp, err := http.PostForm(h.http.URL+"/extend", big)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a 1 MB form: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodDelete, h.http.URL+"/extend", http.NoBody)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("DELETE: %d", resp.StatusCode)
		}
	})
	t.Run("two replicas receive the same link at once: it works once", func(t *testing.T) {
		h := newHarness(t)
		link := h.links()["1w"]
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := h.do(http.MethodPost, link)
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
		if ok != 1 || len(h.state().UsedTokens) != 1 {
			t.Errorf("%d successes, state %+v", ok, h.state())
		}
	})
	t.Run("the store fails: a clear page, the link still works", func(t *testing.T) {
		h := newHarness(t)
		link := h.links()["3d"]
		h.store.FailNext("SetBag", errors.New("etcd is down"))
		if code, body := h.do(http.MethodPost, link); code != http.StatusServiceUnavailable || !strings.Contains(body, "still works") {
			t.Errorf("POST: %d\n%s", code, body)
		}
		if code, _ := h.do(http.MethodPost, link); code != http.StatusOK {
			t.Errorf("retry: %d", code)
		}
	})
	t.Run("rate limit per client address", func(t *testing.T) {
		h := newHarness(t)
		h.srv.PerMinute = 3
		link := h.links()["3d"]
		var last int
		for i := 0; i < 4; i++ {
			last, _ = h.do(http.MethodGet, link)
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("4th request in a minute: %d", last)
		}
		h.mu.Lock()
		h.now = h.now.Add(time.Minute)
		h.mu.Unlock()
		if code, _ := h.do(http.MethodGet, link); code != http.StatusOK {
			t.Errorf("a minute later: %d", code)
		}
	})
}

func TestParsePeriods(t *testing.T) {
	if _, err := ParsePeriods([]string{"3d", "3w"}, 14*24*time.Hour); err == nil {
		t.Error("3w over a 2w maximum was accepted")
	}
	if _, err := ParsePeriods([]string{"soon"}, time.Hour); err == nil {
		t.Error("an unparsable period was accepted")
	}
	if _, err := ParsePeriods(nil, time.Hour); err == nil {
		t.Error("no periods were accepted")
	}
	if p, err := ParsePeriods([]string{"1d"}, 7*24*time.Hour); err != nil || p[0].D != 24*time.Hour {
		t.Errorf("1d: %v, %v", p, err)
	}
}

// TestLinkAfterTheDeadline: a link works past its deadline while the removal waits (for room in
// the pull-request budget, for a reviewer), and not once the removal it warned about happened,
// or Kustos keeps nothing of the environment any more (swept with it).
func TestLinkAfterTheDeadline(t *testing.T) {
	h := newHarness(t)
	h.mu.Lock()
	h.now = deadline.Add(30 * time.Minute) // past the deadline (links minted here work an hour past it): the removal waits
	h.mu.Unlock()
	ls := h.links()
	if code, body := h.do(http.MethodGet, ls["3d"]); code != http.StatusOK {
		t.Fatalf("GET past the deadline, removal waiting: %d %s", code, body)
	}
	if code, body := h.do(http.MethodPost, ls["3d"]); code != http.StatusOK {
		t.Fatalf("POST past the deadline, removal waiting: %d %s", code, body)
	}

	// The removal happened: the owner was told for this deadline.
	rec := h.store.Record(key)
	st, _ := expiry.ParseState(rec.Bag)
	st.NotifiedFor = deadline
	rec.Bag = st.Bag()
	h.store.Put(rec)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if code, body := h.do(m, ls["1w"]); code != http.StatusGone || !strings.Contains(body, "was removed (or paused)") {
			t.Errorf("%s after the removal: %d %s", m, code, body)
		}
	}
	// Swept with its target: nothing kept.
	h.store.Put(state.Record{Key: key})
	if code, _ := h.do(http.MethodGet, ls["2w"]); code != http.StatusGone {
		t.Errorf("GET for an environment Kustos keeps nothing of: %d", code)
	}
}
