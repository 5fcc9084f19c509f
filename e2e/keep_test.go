package e2e

import (
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
)

// TestInactivityKeep: an idle environment's first alert reaches its owner's webhook with a keep
// link per period; GET on one changes nothing; POST keeps the environment: an OwnerKept Event,
// no further alert and no pause though the pause was due seconds later, and the Lease records
// the keep; the same link again is 409. Once the keep ends, the alerts start over: a new first
// alert, and no pause with it.
func TestInactivityKeep(t *testing.T) {
	live := startLiveActivity(t, true)
	ns := newNamespace(t, "inactivity-keep", map[string]string{inactivity.AnnotationTimeout: "4s"})
	newEnvironmentOf(t, ns, "idle", 1, map[string]string{inactivity.AnnotationOwner: "ana@example.com"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	k := startKustos(t, func(o *app.Options) {
		inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s"))(o)
		// Alerts 5 s apart: the pause is due 10 s after the first, time enough to click.
		o.Inactivity.Settings.NotificationInterval = 5 * time.Second
		o.Inactivity.KeepPeriods = []string{"1m", "20s"}
		o.Inactivity.KeepMax = 5 * time.Minute
		expiryOptions(o)
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
	if len(alert.Links) != 2 || alert.Links[0].Label != "Keep for 1m" || !strings.Contains(alert.Links[0].URL, extsrv.KeepPath+"?") {
		t.Fatalf("alert links: %+v", alert.Links)
	}
	for _, e := range kustosEvents(t, ns, inactivity.ReasonInactive) {
		if strings.Contains(e.Message, "token=") {
			t.Errorf("the alert Event carries a link: %s", e.Message)
		}
	}
	link := alert.Links[1].URL // 20s
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Keep for 20s") {
		t.Fatalf("GET: %s\n%s", resp.Status, body)
	}
	if b := bag(t, k.opts.StateNamespace, ns, "idle"); b["kept-until"] != "" {
		t.Fatalf("GET kept: %v", b)
	}
	post := func() int {
		u, _ := url.Parse(link)
		resp, err := http.PostForm("http://"+u.Host+u.Path, u.Query())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusOK {
		t.Fatalf("POST: %d", code)
	}
	kept := waitEvents(t, ns, extsrv.ReasonOwnerKept, 1)
	if kept[0].InvolvedObject.Name != "idle" || kept[0].InvolvedObject.APIVersion != "apps/v1" || !strings.Contains(kept[0].Message, "20s") {
		t.Errorf("OwnerKept: %+v %s", kept[0].InvolvedObject, kept[0].Message)
	}
	// The alert's count is not asked for: the notice goes out before the Lease records it, and
	// an owner who keeps at once can be first (the count starts over after the keep anyway).
	b := bag(t, k.opts.StateNamespace, ns, "idle")
	if b["kept-until"] == "" || b["keep-tokens"] == "" {
		t.Errorf("Lease after the keep: %v", b)
	}
	alerts := len(kustosEvents(t, ns, inactivity.ReasonInactive))
	// Without the keep the second alert came 5 s after the first and the pause 5 s later.
	time.Sleep(12 * time.Second)
	if got := replicas(t, ns, "idle"); got != 1 {
		t.Errorf("kept, and paused all the same (%d replicas)", got)
	}
	if evs := kustosEvents(t, ns, inactivity.ReasonInactive); len(evs) != alerts {
		t.Errorf("kept, and alerted again: %v", messages(evs))
	}
	if evs := kustosEvents(t, ns, inactivity.ReasonApplied); len(evs) != 0 {
		t.Errorf("kept, and a change applied: %v", messages(evs))
	}
	if code := post(); code != http.StatusConflict {
		t.Errorf("the same link again: %d, want 409", code)
	}
	// The keep ends 20 s after the click, about 8 s from here: the alerts start over, and the
	// owner gets alert 1 again (a new notice, not one deduplicated as the first), before any pause.
	eventually(t, "alert 1 again at the webhook after the keep", func() bool {
		n := 0
		for _, a := range sink.notices(inactivity.NoticeAlert) {
			if strings.Contains(a.Subject, "(alert 1 of 2)") {
				n++
			}
		}
		return n == 2
	})
	if got := replicas(t, ns, "idle"); got != 1 {
		t.Errorf("paused at the end of the keep (%d replicas), want alerted first", got)
	}
	if b := bag(t, k.opts.StateNamespace, ns, "idle"); b["kept-until"] != "" {
		t.Errorf("Lease after the keep ended: %v", b)
	}
}
