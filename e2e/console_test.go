package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	extsrv "github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

// consolePage reads the owner's page at link as JSON; the row of name (nil: not on it).
func consolePage(t *testing.T, link, name string) *extsrv.OwnerEnvironment {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, link, http.NoBody)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p extsrv.OwnerPage
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("owner's page: %s %v\n%s", resp.Status, err, b)
	}
	for i := range p.Environments {
		if e := p.Environments[i]; e.Detector == inactivity.DetectorName && e.Name == name {
			return &e
		}
	}
	return nil
}

// TestConsoleResume (direct mode, the inactivity detector alone): the owner's page link of an
// alert shows the idle Deployment alerted (1 of 2) with keep buttons; once paused, the page (JSON)
// shows it paused from 3 replicas with a resume link, found through the Lease's owner label on
// the API server; reading the page changes nothing; POSTing the link brings back 3 replicas and
// the page then shows it running.
func TestConsoleResume(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "console", map[string]string{inactivity.AnnotationTimeout: "8s"})
	newEnvironmentOf(t, ns, "idle", 3, map[string]string{inactivity.AnnotationOwner: "ana@example.com"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	k := startKustos(t, func(o *app.Options) {
		inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s"))(o)
		o.Inactivity.Settings.NotificationInterval = 4 * time.Second
		o.Inactivity.KeepPeriods = []string{"1m", "2m"}
		o.Inactivity.KeepMax = 5 * time.Minute
		o.Expiry.Extension = ext.options([]string{"1m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	})
	dumpOnFailure(t, k)

	var alert lifecycle.Notice
	eventually(t, "the first alert at the webhook", func() bool {
		ns := sink.notices(inactivity.NoticeAlert)
		if len(ns) > 0 {
			alert = ns[0]
		}
		return len(ns) > 0
	})
	if alert.OwnerPage == nil || !strings.Contains(alert.OwnerPage.URL, extsrv.OwnerPagePath+"?") {
		t.Fatalf("the alert carries no owner's page link: %+v", alert)
	}
	if e := consolePage(t, alert.OwnerPage.URL, "idle"); e == nil || (e.State == extsrv.StateAlerted && (e.MaxAlerts != 2 || len(e.Keep) != 2 || e.IdleSince.IsZero())) {
		t.Errorf("alerted on the page: %+v", e)
	}

	eventually(t, "idle paused (scaled to zero)", func() bool { return replicas(t, ns, "idle") == 0 })
	var pause lifecycle.Notice
	eventually(t, "the pause notice at the webhook", func() bool {
		ns := sink.notices(inactivity.NoticePaused)
		if len(ns) > 0 {
			pause = ns[0]
		}
		return len(ns) > 0
	})
	if pause.OwnerPage == nil {
		t.Fatalf("the pause notice carries no owner's page link: %+v", pause)
	}
	page := pause.OwnerPage.URL
	var paused *extsrv.OwnerEnvironment
	eventually(t, "the page shows idle paused with a resume link", func() bool {
		paused = consolePage(t, page, "idle")
		return paused != nil && paused.State == extsrv.StatePaused && paused.Resume != ""
	})
	if paused.PauseField != "spec.replicas" || paused.PauseFrom != "3" || paused.PausedSince.IsZero() || len(paused.Keep) != 0 {
		t.Errorf("paused on the page: %+v", paused)
	}
	before := bag(t, k.opts.StateNamespace, ns, "idle")
	_ = consolePage(t, page, "idle")
	if after := bag(t, k.opts.StateNamespace, ns, "idle"); after["resume-tokens"] != before["resume-tokens"] || after["resume-at"] != "" {
		t.Fatalf("reading the page spent a resume link: %v", after)
	}

	u, _ := url.Parse(paused.Resume)
	resp, err := http.PostForm("http://"+u.Host+u.Path, u.Query())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST the page's resume link: %s", resp.Status)
	}
	eventually(t, "idle resumed to 3 replicas", func() bool { return replicas(t, ns, "idle") == 3 })
	eventually(t, "the page shows idle running", func() bool {
		e := consolePage(t, page, "idle")
		return e != nil && e.State == extsrv.StateRunning && e.Resume == "" && e.PausedSince.IsZero()
	})

	// kustos status's audit finds the resume among the owner actions, by the Event's reason.
	a, err := statusreport.GatherOwnerActions(context.Background(), k8s, statusreport.DefaultOwnerActions)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range a.Last {
		found = found || (l.Action == "resume" && l.Target == "Deployment.apps/"+ns+"/idle")
	}
	if a.Counts["resume"] < 1 || !found {
		t.Errorf("owner actions: %+v", a)
	}
}
