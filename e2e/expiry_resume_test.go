package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	extsrv "github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
)

// TestExpiryResume (direct mode): an environment of 3 replicas whose lifetime ends in a pause is
// scaled to zero at its deadline, and its owner's webhook gets the pause notice with one resume
// link per extension period; GET changes nothing; POST on "Resume for 1m" brings it back to
// exactly 3 replicas with kustos.io/expires-at a minute on (written with the resume), an
// OwnerResumed Event and the Lease's pause record gone; it is not paused again at the next
// looks; the same link again is 409.
func TestExpiryResume(t *testing.T) {
	ns := newNamespace(t, "expiry-resume", nil)
	newEnvironmentOf(t, ns, "lab", 3, map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s", expiry.AnnotationOnExpiry: "pause"})
	sink := startNoticeSink(t)
	ext := extensionServer(t)
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		o.Expiry.Extension = ext.options([]string{"1m", "2m"})
		o.Expiry.Webhook = notify.WebhookOptions{URL: sink.url}
	})
	dumpOnFailure(t, k)

	eventually(t, "lab paused (scaled to zero)", func() bool { return replicas(t, ns, "lab") == 0 })
	var pause lifecycle.Notice
	eventually(t, "the pause notice at the webhook", func() bool {
		ns := sink.notices(expiry.NoticePaused)
		if len(ns) > 0 {
			pause = ns[0]
		}
		return len(ns) > 0
	})
	if len(pause.Links) != 2 || pause.Links[0].Label != "Resume for 1m" || !strings.Contains(pause.Links[0].URL, extsrv.ResumePath+"?") ||
		!strings.Contains(pause.Text, "spec.replicas: 3") {
		t.Fatalf("pause notice: %+v", pause)
	}
	if n := sink.notices(expiry.NoticeDone); len(n) != 0 {
		t.Errorf("a plain done notice besides the pause notice: %+v", n)
	}
	b := detectorBag(t, k.opts.StateNamespace, expiry.DetectorName, ns, "lab")
	if b["pause-from"] != "3" || b["paused-at"] == "" || b["pause-uid"] == "" {
		t.Fatalf("Lease after the pause: %v", b)
	}

	link := pause.Links[0].URL
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<strong>3</strong>") || !strings.Contains(string(body), "Resume for 1m") {
		t.Fatalf("GET: %s\n%s", resp.Status, body)
	}
	if got := replicas(t, ns, "lab"); got != 0 {
		t.Fatalf("GET resumed: %d replicas", got)
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
	asked := time.Now()
	if code := post(); code != http.StatusOK {
		t.Fatalf("POST: %d", code)
	}
	resumed := waitEvents(t, ns, extsrv.ReasonOwnerResumed, 1)
	if resumed[0].InvolvedObject.Name != "lab" || !strings.Contains(resumed[0].Message, "back to 3") || !strings.Contains(resumed[0].Message, "now expires at") {
		t.Errorf("OwnerResumed: %+v %s", resumed[0].InvolvedObject, resumed[0].Message)
	}
	eventually(t, "lab resumed to 3 replicas", func() bool { return replicas(t, ns, "lab") == 3 })
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "lab"}, &d); err != nil {
		t.Fatal(err)
	}
	until, err := time.Parse(time.RFC3339, d.Annotations[expiry.AnnotationExpiresAt])
	if err != nil || until.Before(asked.Add(time.Minute-2*time.Second)) || until.After(asked.Add(time.Minute+5*time.Second)) {
		t.Errorf("%s = %q, want a minute after the resume (%s)", expiry.AnnotationExpiresAt, d.Annotations[expiry.AnnotationExpiresAt], asked.Format(time.RFC3339))
	}
	eventually(t, "the pause record forgotten, the used link remembered", func() bool {
		b := detectorBag(t, k.opts.StateNamespace, expiry.DetectorName, ns, "lab")
		return b["paused-at"] == "" && b["pause-from"] == "" && b["resume-at"] == "" && b["used-tokens"] != ""
	})
	// The deadline moved: not paused again at the next looks.
	time.Sleep(3 * time.Second)
	if got := replicas(t, ns, "lab"); got != 3 {
		t.Errorf("after the resume: %d replicas, want 3 (paused again?)", got)
	}
	if code := post(); code != http.StatusConflict {
		t.Errorf("the same link again: %d, want 409", code)
	}
}
