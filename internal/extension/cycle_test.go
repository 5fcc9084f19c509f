package extension

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// memOwners lists the harness's one Lease as its owner's.
type memOwners struct{ h *harness }

func (m memOwners) ListOwned(_ context.Context, id string) ([]state.Record, error) {
	rec := m.h.store.Record(key)
	st, _ := expiry.ParseState(rec.Bag)
	if st.Owner == "" || lifecycle.OwnerID(st.Owner) != id {
		return nil, nil
	}
	return []state.Record{rec}, nil
}

// warnedHarness: the environment of ana, warned about deadline, as the detector records it.
func warnedHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.store.Put(state.Record{Key: key, Bag: expiry.State{WarningFor: deadline, WarningAttemptAt: now, WarningAttempts: 1, WarnedAt: now,
		Owner: "ana", Deadline: deadline}.Bag()})
	h.srv.Owners = memOwners{h}
	return h
}

func (h *harness) ownerPage() OwnerEnvironment {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.srv.OwnerPageLink("ana", deadline.Add(expiry.LinkGrace)).URL, http.NoBody)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p OwnerPage
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != http.StatusOK || len(p.Environments) != 1 {
		h.t.Fatalf("owner's page: %d %v\n%s", resp.StatusCode, err, b)
	}
	return p.Environments[0]
}

// TestOneWarningCycleIsBounded: the owner's page offers extend buttons only for the deadline
// the owner was warned about, so reloading it and clicking again cannot push the deadline out
// one period per click; and whichever links are used (mail, page, or a page link minted for an
// extended deadline by an earlier release), one warning cycle gets at most --extension-max past
// the warned deadline. Each mail link still works once.
func TestOneWarningCycleIsBounded(t *testing.T) {
	limit := deadline.Add(14 * 24 * time.Hour) // --extension-max past the warned deadline
	t.Run("reload, click, reload, click", func(t *testing.T) {
		h := warnedHarness(t)
		for i := 0; i < 5; i++ {
			env := h.ownerPage()
			if len(env.Extend) == 0 {
				if i == 0 {
					t.Fatal("a warned environment has no buttons")
				}
				break
			}
			for _, l := range env.Extend {
				if l.Period == "2w" {
					if code, body := h.do(http.MethodPost, l.URL); code != http.StatusOK {
						t.Fatalf("click %d: %d\n%s", i, code, body)
					}
				}
			}
		}
		if st := h.state(); st.ExtendedUntil.After(limit) {
			t.Errorf("extended to %s, past the warned deadline + --extension-max (%s)", st.ExtendedUntil, limit)
		}
		if env := h.ownerPage(); len(env.Extend) != 0 || !env.Deadline.Equal(limit) {
			t.Errorf("after the extension, before the next warning: %+v", env)
		}
	})
	t.Run("links minted for an extended deadline cannot go past the bound", func(t *testing.T) {
		h := warnedHarness(t)
		for i := 0; i < 4; i++ {
			st := h.state()
			d := deadline
			if st.ExtendedUntil.After(d) {
				d = st.ExtendedUntil
			}
			ls, err := h.srv.Links(key, d, d.Add(expiry.LinkGrace))
			if err != nil {
				t.Fatal(err)
			}
			code, body := h.do(http.MethodPost, ls[1].URL) // 1w
			want := http.StatusOK
			if i >= 2 {
				want = http.StatusConflict
			}
			if code != want || (want == http.StatusConflict && !strings.Contains(body, "already extended for this warning")) {
				t.Errorf("link %d for %s: %d, want %d\n%s", i, d, code, want, body)
			}
		}
		if st := h.state(); !st.ExtendedUntil.Equal(limit) {
			t.Errorf("extended to %s, want %s", st.ExtendedUntil, limit)
		}
	})
	t.Run("the mail's links still work once each", func(t *testing.T) {
		h := warnedHarness(t)
		ls := h.links()
		for _, p := range []string{"3d", "1w", "2w"} {
			if code, body := h.do(http.MethodPost, ls[p]); code != http.StatusOK {
				t.Errorf("%s: %d\n%s", p, code, body)
			}
			if code, _ := h.do(http.MethodPost, ls[p]); code != http.StatusConflict {
				t.Errorf("%s again: %d", p, code)
			}
		}
		if st := h.state(); !st.ExtendedUntil.Equal(limit) || len(st.UsedTokens) != 3 {
			t.Errorf("state: %+v", st)
		}
	})
}
