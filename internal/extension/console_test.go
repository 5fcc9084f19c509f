package extension

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

// listOwners lists, from a MemStore, the records of keys whose bag names the owner (as the
// store's label selector does on the API server).
type listOwners struct {
	m    *pipelinetest.MemStore
	keys []lifecycle.Key
}

func (l listOwners) ListOwned(_ context.Context, id string) ([]state.Record, error) {
	var out []state.Record
	for _, k := range l.keys {
		rec := l.m.Record(k)
		if o := rec.Bag[lifecycle.BagOwner]; o != "" && lifecycle.OwnerID(o) == id {
			out = append(out, rec)
		}
	}
	return out, nil
}

// consoleHarness is an extension server in a mode that pauses (direct or pr), with keep and
// resume links and the owner's page, over one owner's records in every state.
type consoleHarness struct {
	t     *testing.T
	store *pipelinetest.MemStore
	srv   *Server
	http  *httptest.Server
}

func inactivityKey(name string) lifecycle.Key {
	return lifecycle.Key("inactivity/Deployment.apps/lab/" + name)
}

var consolePausedAt = now.Add(-5 * time.Hour)

// consoleRecords are ana's environments in every state the page shows, and one of bo's.
func consoleRecords() []state.Record {
	alertedOf := func(sent, maxAlerts int) inactivity.State {
		return inactivity.State{UID: "u", LastActivity: idleSince, AlertsFor: idleSince, AlertsSent: sent, MaxAlerts: maxAlerts, LastAlertAt: alertAt, Owner: keepOwner}
	}
	paused := func() inactivity.State {
		st := alertedOf(2, 2)
		st.Paused, st.PausedAt, st.PauseField, st.PauseFrom = true, consolePausedAt, "spec.replicas", "3"
		return st
	}
	duePause := alertedOf(2, 2)
	duePause.PausedAt, duePause.PauseField, duePause.PauseFrom = consolePausedAt, "spec.replicas", "3"
	resuming := paused()
	resuming.ResumeAt, resuming.ResumeTokens = now.Add(-time.Minute), "0123456789abcdef"
	kept := alertedOf(1, 2)
	kept.KeptUntil, kept.KeptAt, kept.KeepTokens = now.Add(72*time.Hour), alertAt.Add(time.Minute), "0123456789abcdef"
	bo := alertedOf(1, 2)
	bo.Owner = "bo@example.org"
	return []state.Record{
		{Key: key, Bag: expiry.State{WarningFor: deadline, WarnedAt: now, Owner: keepOwner, Deadline: deadline}.Bag()},
		{Key: inactivityKey("running"), Bag: inactivity.State{UID: "u", LastActivity: now.Add(-2 * time.Hour), ResumeTokens: "0123456789abcdef", Owner: keepOwner}.Bag()},
		{Key: inactivityKey("alerted"), Bag: alertedOf(1, 2).Bag()},
		{Key: inactivityKey("kept"), Bag: kept.Bag()},
		{Key: inactivityKey("paused"), Bag: paused().Bag()},
		{Key: inactivityKey("resuming"), Bag: resuming.Bag(), Holder: state.HolderOf(7)},
		{Key: inactivityKey("pausing"), Bag: duePause.Bag(), Holder: state.HolderOf(5)},
		{Key: inactivityKey("queued"), Bag: duePause.Bag(), Queued: "the pull-request budget is spent"},
		{Key: inactivityKey("bo"), Bag: bo.Bag()},
	}
}

func newConsoleHarness(t *testing.T, pauses bool) *consoleHarness {
	h := &consoleHarness{t: t, store: pipelinetest.NewMemStore()}
	var keys []lifecycle.Key
	for _, rec := range consoleRecords() {
		h.store.Put(rec)
		keys = append(keys, rec.Key)
	}
	periods, err := ParsePeriods([]string{"3d"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keepPeriods, err := ParseKeepPeriods([]string{"1d", "3d"}, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = &Server{Signer: signer(t), Periods: periods, Max: 14 * 24 * time.Hour, Store: h.store.As("a"), Owners: listOwners{h.store, keys},
		Now: func() time.Time { return now }, PerMinute: 1000, LinkPerMinute: 1000, Log: logr.Discard(), WriteBack: pauses,
		Keep: &Keeper{Periods: keepPeriods, Max: 14 * 24 * time.Hour}}
	if pauses {
		h.srv.Resume = &Resumer{}
	}
	h.http = httptest.NewServer(h.srv)
	t.Cleanup(h.http.Close)
	h.srv.BaseURL = h.http.URL
	return h
}

func (h *consoleHarness) get(asJSON bool) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.srv.OwnerPageLink(keepOwner, now.Add(24*time.Hour)).URL, http.NoBody)
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *consoleHarness) page() map[string]OwnerEnvironment {
	h.t.Helper()
	code, body := h.get(true)
	var p OwnerPage
	if err := json.Unmarshal([]byte(body), &p); err != nil || code != http.StatusOK {
		h.t.Fatalf("owner's page: %d %v\n%s", code, err, body)
	}
	out := map[string]OwnerEnvironment{}
	for _, e := range p.Environments {
		out[e.Detector+"/"+e.Name] = e
	}
	return out
}

// TestConsolePage: the owner's page lists the owner's inactivity environments beside their
// expiry ones, each in its state, with the keep links of an alert not answered yet and the
// resume link of a pause Kustos made; never another owner's.
func TestConsolePage(t *testing.T) {
	h := newConsoleHarness(t, true)
	got := h.page()
	if _, ok := got["inactivity/bo"]; ok || len(got) != 8 {
		t.Fatalf("environments %v, want ana's 8", slicesOf(got))
	}
	if e := got["expiry/preview"]; e.State != StateWarned || !e.Deadline.Equal(deadline) || len(e.Extend) != 1 {
		t.Errorf("expiry row: %+v", e)
	}
	for _, tc := range []struct {
		name, state    string
		alerts, max    int
		keep           int
		resume         bool
		pr             int
		check          func(OwnerEnvironment) bool
		idleSinceShown bool
	}{
		{name: "running", state: StateRunning, check: func(e OwnerEnvironment) bool { return e.LastActivity.Equal(now.Add(-2 * time.Hour)) }},
		{name: "alerted", state: StateAlerted, alerts: 1, max: 2, keep: 2, idleSinceShown: true},
		{name: "kept", state: StateKept, alerts: 1, max: 2, idleSinceShown: true, check: func(e OwnerEnvironment) bool { return e.KeptUntil.Equal(now.Add(72 * time.Hour)) }},
		{name: "paused", state: StatePaused, alerts: 2, max: 2, resume: true, idleSinceShown: true,
			check: func(e OwnerEnvironment) bool {
				return e.PausedSince.Equal(consolePausedAt) && e.PauseField == "spec.replicas" && e.PauseFrom == "3"
			}},
		{name: "resuming", state: StateResumeProposed, alerts: 2, max: 2, pr: 7, idleSinceShown: true},
		{name: "pausing", state: StatePROpen, alerts: 2, max: 2, pr: 5, keep: 2, idleSinceShown: true},
		{name: "queued", state: StateQueued, alerts: 2, max: 2, keep: 2, idleSinceShown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := got["inactivity/"+tc.name]
			if !ok {
				t.Fatalf("not on the page: %v", slicesOf(got))
			}
			if e.State != tc.state || e.Alerts != tc.alerts || e.MaxAlerts != tc.max || len(e.Keep) != tc.keep || (e.Resume != "") != tc.resume ||
				e.PullRequest != tc.pr || e.Namespace != "lab" || e.Kind != "Deployment" || e.Group != "apps" || e.Extend == nil {
				t.Errorf("got %+v", e)
			}
			if tc.idleSinceShown != e.IdleSince.Equal(idleSince) {
				t.Errorf("idle since %s, want shown: %v", e.IdleSince, tc.idleSinceShown)
			}
			if tc.check != nil && !tc.check(e) {
				t.Errorf("got %+v", e)
			}
			for _, l := range e.Keep {
				if !strings.HasPrefix(l.URL, h.srv.BaseURL+KeepPath+"?") {
					t.Errorf("keep link %s", l.URL)
				}
			}
		})
	}

	t.Run("the HTML page has the forms", func(t *testing.T) {
		code, body := h.get(false)
		if code != http.StatusOK {
			t.Fatalf("%d\n%s", code, body)
		}
		for _, want := range []string{`action="` + h.srv.BaseURL + KeepPath + `"`, `action="` + h.srv.BaseURL + ResumePath + `"`,
			"Keep for 1d", "Resume", "alerted (alert 1 of 2)", "spec.replicas: 3", "kept until 2026-11-27T12:00:00Z", "pull request #7", "resume-proposed", "queued"} {
			if !strings.Contains(html.UnescapeString(body), want) {
				t.Errorf("page lacks %q", want)
			}
		}
		if strings.Contains(body, "/lab/bo") || strings.Contains(body, ">bo<") {
			t.Error("page shows bo's environment")
		}
	})
}

func slicesOf(m map[string]OwnerEnvironment) []string {
	var out []string
	for k := range maps.Keys(m) {
		out = append(out, k)
	}
	return out
}

// TestConsoleObserver: where Kustos only reports inactivity (observer mode) the page offers no
// resume and says that there is nothing to undo; keep links still answer an alert.
func TestConsoleObserver(t *testing.T) {
	h := newConsoleHarness(t, false)
	got := h.page()
	if e := got["inactivity/alerted"]; e.State != StateAlerted || len(e.Keep) != 2 || !strings.Contains(e.Note, "nothing to undo") {
		t.Errorf("alerted in observer mode: %+v", e)
	}
	if e := got["inactivity/paused"]; e.Resume != "" {
		t.Errorf("a resume link in observer mode: %+v", e)
	}
	if _, body := h.get(false); !strings.Contains(body, "nothing to undo") {
		t.Error("the HTML page does not say there is nothing to undo")
	}
}

// TestConsoleActions: GET mints the page's links but spends none and writes no Lease; the
// page's keep form keeps once (a replay is 409, and the page then shows the target kept with
// no keep buttons), and its resume form asks the resume once.
func TestConsoleActions(t *testing.T) {
	h := newConsoleHarness(t, true)
	before := map[lifecycle.Key]map[string]string{}
	for _, rec := range consoleRecords() {
		before[rec.Key] = h.store.Record(rec.Key).Bag
	}
	got := h.page()
	_, _ = h.get(false)
	_ = h.page()
	for k, b := range before {
		if after := h.store.Record(k).Bag; !maps.Equal(b, after) {
			t.Errorf("GET wrote %s: %v -> %v", k, b, after)
		}
	}
	post := func(link, path string) int {
		t.Helper()
		resp, err := http.PostForm(h.http.URL+path, queryOf(link))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	keep := got["inactivity/alerted"].Keep[1] // 3d
	if code := post(keep.URL, KeepPath); code != http.StatusOK {
		t.Fatalf("keep from the page: %d", code)
	}
	if code := post(keep.URL, KeepPath); code != http.StatusConflict {
		t.Errorf("the page's keep form again: %d, want 409", code)
	}
	if code := post(got["inactivity/alerted"].Keep[0].URL, KeepPath); code != http.StatusConflict {
		t.Errorf("the page's other keep form after the keep: %d, want 409", code)
	}
	reloaded := h.page()
	if e := reloaded["inactivity/alerted"]; e.State != StateKept || len(e.Keep) != 0 || !e.KeptUntil.Equal(now.Add(72*time.Hour)) {
		t.Errorf("after the keep, reloaded: %+v", e)
	}
	resume := got["inactivity/paused"].Resume
	if code := post(resume, ResumePath); code != http.StatusOK {
		t.Fatalf("resume from the page: %d", code)
	}
	if code := post(resume, ResumePath); code != http.StatusConflict {
		t.Errorf("the page's resume form again: %d, want 409", code)
	}
	if e := h.page()["inactivity/paused"]; e.Resume != "" || e.ResumeRequested.IsZero() {
		t.Errorf("after the resume request, reloaded: %+v", e)
	}
	// The page's forms carry the same tokens as its JSON links.
	_, body := h.get(false)
	if n := len(regexp.MustCompile(`name="token" value="k1\.`).FindAllString(body, -1)); n != 4 {
		t.Errorf("%d keep forms after the keep, want 4 (pr-open 2, queued 2)", n)
	}
}
