package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	extsrv "github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// ownerPageEnv is an extension server over state Leases on the real API server, written as the
// expiry detector writes them (expiry.Decide's state), for two owners.
type ownerPageEnv struct {
	t     *testing.T
	ns    string
	store *state.Store
	srv   *extsrv.Server
	http  *httptest.Server
	mu    sync.Mutex
	now   time.Time
}

var (
	opNow      = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	opDeadline = opNow.Add(48 * time.Hour)
)

func newOwnerPageEnv(t *testing.T) *ownerPageEnv {
	e := &ownerPageEnv{t: t, ns: newNamespace(t, "ownerpage", nil), now: opNow}
	e.store = &state.Store{Reader: k8s, Writer: k8s, Namespace: e.ns, Identity: "replica-a"}
	signer, err := extsrv.NewSigner([]byte("e2e-owner-page-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	periods, err := extsrv.ParsePeriods([]string{"3d", "1w"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = &extsrv.Server{Signer: signer, Periods: periods, Max: 14 * 24 * time.Hour, Store: e.store, Owners: e.store,
		Now: e.clock, PerMinute: 1000, LinkPerMinute: 1000, WriteBack: true, Log: logr.Discard()}
	e.http = httptest.NewServer(e.srv)
	t.Cleanup(e.http.Close)
	e.srv.BaseURL = e.http.URL
	return e
}

func (e *ownerPageEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// env records what expiry.Decide records for target (owner, deadline, warned or not), then
// edit's further state (a pull request, a queue).
func (e *ownerPageEnv) env(target lifecycle.Target, owner string, deadline time.Time, warned bool, edit func(state.Record) state.Record) {
	e.t.Helper()
	ctx := context.Background()
	st := expiry.State{}
	if warned {
		st = expiry.State{WarningFor: deadline, WarningAttemptAt: opNow.Add(-time.Hour), WarningAttempts: 1, WarnedAt: opNow.Add(-time.Hour)}
	}
	settings := expiry.DefaultSettings()
	d := expiry.Decide(expiry.Snapshot{Now: opNow, Target: target, Policy: expiry.Policy{Owner: owner, OwnerAddress: owner + "@example.com",
		Deadline: deadline, Action: expiry.ActionDelete}, State: st, Settings: settings})
	key := lifecycle.KeyFor(expiry.DetectorName, target)
	rec, err := e.store.Get(ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	if rec, err = e.store.SetBag(ctx, rec, d.State.Bag()); err != nil {
		e.t.Fatal(err)
	}
	if edit != nil {
		edit(rec)
	}
}

func (e *ownerPageEnv) versions() map[string]string {
	e.t.Helper()
	var ls coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &ls, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls.Items {
		out[l.Name] = l.ResourceVersion
	}
	return out
}

func (e *ownerPageEnv) get(link, accept string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, link, http.NoBody)
	if err != nil {
		e.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (e *ownerPageEnv) pageJSON(link string) extsrv.OwnerPage {
	e.t.Helper()
	code, h, body := e.get(link, "application/json")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		e.t.Fatalf("JSON page: %d %s\n%s", code, h.Get("Content-Type"), body)
	}
	var p extsrv.OwnerPage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		e.t.Fatalf("%v\n%s", err, body)
	}
	return p
}

var (
	opWeb     = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	opPreview = lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "preview-1"}
	opDB      = lifecycle.Target{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "team-b", Name: "db"}
	opBatch   = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-c", Name: "batch"}
	opGone    = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-c", Name: "old"}
	opBo      = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "bos-api"}
)

// ana's five environments (warned, scheduled, a pull request open, queued, removed) and bo's one.
func (e *ownerPageEnv) seed() {
	ctx := context.Background()
	e.env(opWeb, "ana", opDeadline, true, nil)
	e.env(opPreview, "ana", opDeadline.Add(10*24*time.Hour), false, nil)
	e.env(opDB, "ana", opDeadline.Add(-time.Hour), true, func(r state.Record) state.Record {
		r, err := e.store.Lock(ctx, r, state.HolderOf(7), `{}`, "abc")
		if err != nil {
			e.t.Fatal(err)
		}
		return r
	})
	e.env(opBatch, "ana", opDeadline.Add(time.Hour), true, func(r state.Record) state.Record {
		r, err := e.store.SetQueued(ctx, r, "the pull-request budget is spent")
		if err != nil {
			e.t.Fatal(err)
		}
		return r
	})
	e.env(opGone, "ana", opNow.Add(-48*time.Hour), true, func(r state.Record) state.Record {
		st, _ := expiry.ParseState(r.Bag)
		st.NotifiedFor = st.Deadline
		r, err := e.store.SetBag(ctx, r, st.Bag())
		if err != nil {
			e.t.Fatal(err)
		}
		return r
	})
	e.env(opBo, "bo", opDeadline, true, nil)
}

// TestOwnerPage: the owner's page link of a notice lists exactly that owner's environments from
// their Leases on the real API server, with deadline, state and pull request, as HTML and as
// JSON; reading it changes nothing; its extend buttons are one-time extension links; a forged,
// expired or wrong-kind token is refused with a clear page; the page is rate-limited.
func TestOwnerPage(t *testing.T) {
	e := newOwnerPageEnv(t)
	e.seed()
	anaLink := e.srv.OwnerPageLink("ana", opDeadline.Add(expiry.LinkGrace)).URL
	boLink := e.srv.OwnerPageLink("bo", opDeadline.Add(expiry.LinkGrace)).URL
	if strings.Contains(anaLink, "ana") {
		t.Errorf("the link spells the owner out: %s", anaLink)
	}

	t.Run("HTML: ana's environments, nothing of bo's, and GET changes nothing", func(t *testing.T) {
		before := e.versions()
		code, h, body := e.get(anaLink, "")
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("GET: %d %s\n%s", code, h.Get("Content-Type"), body)
		}
		for _, want := range []string{"<strong>ana</strong>", "Deployment.apps", "team-a", ">web<", "Namespace", "preview-1", "StatefulSet.apps", ">db<",
			"pull request #7", ">batch<", "queued", "warned", "scheduled", ">old<", "removed", opDeadline.Format(time.RFC3339),
			`method="post" action="` + e.http.URL + `/extend"`, "Extend by 1w"} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if strings.Contains(body, "bos-api") {
			t.Error("ana's page shows bo's environment")
		}
		if after := e.versions(); len(after) != 6 || !maps.Equal(before, after) {
			t.Errorf("GET changed Leases:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("JSON with Accept: application/json", func(t *testing.T) {
		p := e.pageJSON(anaLink)
		if p.Owner != "ana" || !p.Expires.Equal(opDeadline.Add(expiry.LinkGrace)) || len(p.Environments) != 5 {
			t.Fatalf("page: %+v", p)
		}
		got := map[string]extsrv.OwnerEnvironment{}
		for _, env := range p.Environments {
			got[env.Name] = env
		}
		for name, want := range map[string]struct {
			kind, group, ns, state string
			deadline               time.Time
			pr, links              int
		}{
			"web":       {"Deployment", "apps", "team-a", extsrv.StateWarned, opDeadline, 0, 2},
			"preview-1": {"Namespace", "", "", extsrv.StateScheduled, opDeadline.Add(10 * 24 * time.Hour), 0, 0}, // links come with the warning
			"db":        {"StatefulSet", "apps", "team-b", extsrv.StatePROpen, opDeadline.Add(-time.Hour), 7, 2},
			"batch":     {"Deployment", "apps", "team-c", extsrv.StateQueued, opDeadline.Add(time.Hour), 0, 2},
			"old":       {"Deployment", "apps", "team-c", extsrv.StateRemoved, opNow.Add(-48 * time.Hour), 0, 0},
		} {
			g := got[name]
			if g.Kind != want.kind || g.Group != want.group || g.Namespace != want.ns || g.State != want.state ||
				!g.Deadline.Equal(want.deadline) || g.PullRequest != want.pr || len(g.Extend) != want.links {
				t.Errorf("%s: %+v, want %+v", name, g, want)
			}
		}
		if p.Environments[0].Name != "old" || p.Environments[4].Name != "preview-1" {
			t.Errorf("not by deadline: %s … %s", p.Environments[0].Name, p.Environments[4].Name)
		}
		if bo := e.pageJSON(boLink); bo.Owner != "bo" || len(bo.Environments) != 1 || bo.Environments[0].Name != "bos-api" {
			t.Errorf("bo's page: %+v", bo)
		}
		if nobody := e.pageJSON(e.srv.OwnerPageLink("nobody", opDeadline).URL); nobody.Owner != "" || len(nobody.Environments) != 0 {
			t.Errorf("an owner without environments: %+v", nobody)
		}
	})

	t.Run("an extend button works once", func(t *testing.T) {
		var link string
		for _, env := range e.pageJSON(anaLink).Environments {
			if env.Name == "web" {
				for _, l := range env.Extend {
					if l.Period == "1w" {
						link = l.URL
					}
				}
			}
		}
		u, err := url.Parse(link)
		if err != nil || link == "" {
			t.Fatalf("no 1w link: %q %v", link, err)
		}
		post := func() int {
			resp, err := http.PostForm(e.http.URL+"/extend", u.Query())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post(); code != http.StatusOK {
			t.Fatalf("POST: %d", code)
		}
		if code := post(); code != http.StatusConflict {
			t.Errorf("the same button again: %d", code)
		}
		for _, env := range e.pageJSON(anaLink).Environments {
			// Extended: no more buttons until the next warning (one cycle, at most --extension-max).
			if env.Name == "web" && (!env.Deadline.Equal(opDeadline.Add(7*24*time.Hour)) || len(env.Extend) != 0) {
				t.Errorf("web after the extension: %+v", env)
			}
		}
	})

	t.Run("forged, expired, an extension token: refused, saying why", func(t *testing.T) {
		u, _ := url.Parse(anaLink)
		tok := u.Query().Get("token")
		parts := strings.Split(tok, ".")
		forged := e.http.URL + "/environment/?token=" + url.QueryEscape(strings.Join([]string{parts[0], lifecycle.OwnerID("bo"), parts[2], parts[3]}, "."))
		ext, err := e.srv.Links(lifecycle.KeyFor(expiry.DetectorName, opWeb), opDeadline, opDeadline.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		extTok := e.http.URL + "/environment/?token=" + url.QueryEscape(queryToken(t, ext[0].URL))
		expired := e.srv.OwnerPageLink("ana", opNow.Add(-time.Second)).URL
		for _, tc := range []struct {
			name, link, accept string
			code               int
			says               string
		}{
			{"another owner's id in ana's token", forged, "", http.StatusForbidden, "this link is not valid"},
			{"an extension token", extTok, "", http.StatusForbidden, "an extension link is not a page link"},
			{"expired", expired, "", http.StatusGone, "this link has expired"},
			{"expired, as JSON", expired, "application/json", http.StatusGone, `"error": "this link has expired`},
			{"no token", e.http.URL + "/environment/", "", http.StatusBadRequest, "needs its token"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, _, body := e.get(tc.link, tc.accept)
				if code != tc.code || !strings.Contains(body, tc.says) || strings.Contains(body, ">web<") {
					t.Errorf("%d\n%s", code, body)
				}
			})
		}
		resp, err := http.PostForm(anaLink, url.Values{})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST to the page: %d", resp.StatusCode)
		}
	})

	t.Run("rate limits: per owner from any address, per client", func(t *testing.T) {
		e2 := newOwnerPageEnv(t)
		e2.env(opWeb, "ana", opDeadline, true, nil)
		e2.srv.LinkPerMinute = 2
		link := e2.srv.OwnerPageLink("ana", opDeadline).URL
		var code int
		var h http.Header
		for i := 0; i < 3; i++ {
			code, h, _ = e2.get(link, "")
		}
		if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Errorf("3rd view of one owner's page in a minute: %d, Retry-After %q", code, h.Get("Retry-After"))
		}
		// Another owner's page is not held back by ana's.
		if code, _, _ := e2.get(e2.srv.OwnerPageLink("bo", opDeadline).URL, ""); code != http.StatusOK {
			t.Errorf("bo's page: %d", code)
		}
		e2.mu.Lock()
		e2.now = e2.now.Add(time.Minute)
		e2.mu.Unlock()
		if code, _, _ := e2.get(link, ""); code != http.StatusOK {
			t.Errorf("a minute later: %d", code)
		}
		e3 := newOwnerPageEnv(t)
		e3.srv.PerMinute = 2
		for i := 0; i < 3; i++ {
			code, _, _ = e3.get(e3.srv.OwnerPageLink("owner-"+string(rune('a'+i)), opDeadline).URL, "application/json")
		}
		if code != http.StatusTooManyRequests {
			t.Errorf("3rd request of one client in a minute: %d", code)
		}
	})
}

func queryToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}
