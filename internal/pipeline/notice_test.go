package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/utils/lru"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// notifier records the Notices it was given and fails while fail is set.
type notifier struct {
	sent []lifecycle.Notice
	fail error
}

func (n *notifier) Send(_ context.Context, x lifecycle.Notice) error {
	if n.fail != nil {
		return n.fail
	}
	n.sent = append(n.sent, x)
	return nil
}

// TestNotice: a Finding's Notice is sent after its Event and before the detector's state is
// written; when sending fails, the state stays unwritten (the next look sends it again) and
// Run says why without the Notice's links.
func TestNotice(t *testing.T) {
	w := newWorld(t, "observe")
	n := &notifier{fail: errors.New("smtp: 421 try later")}
	p := w.replica("a")
	p.Notifier = n
	notice := &lifecycle.Notice{ID: "warn-1", Kind: "expiry.warning", To: "ana@example.com", Target: lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "x"},
		Links: []lifecycle.NoticeLink{{Label: "Extend 3d", URL: "https://kustos.example/extend?token=secret"}}}
	run := func() error {
		_, err := p.Run(context.Background(), Request{Key: testKey, Now: w.now, Supersedes: supersedes,
			Decide: func(v View) Decision {
				if v.Bag["warned"] == "yes" {
					return Decision{}
				}
				return Decision{Findings: []lifecycle.Finding{{Reason: "ExpiryWarning", Message: "expires", ID: "warn-1", Notice: notice}},
					Bag: map[string]string{"warned": "yes"}}
			}})
		return err
	}
	err := run()
	if err == nil || !errors.Is(err, n.fail) || len(n.sent) != 0 {
		t.Fatalf("failing notifier: err %v, sent %d", err, len(n.sent))
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error carries the link: %v", err)
	}
	if w.rec().Bag["warned"] != "" {
		t.Error("the state was written although the notice was not sent")
	}
	n.fail = nil
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if len(n.sent) != 1 || n.sent[0].ID != "warn-1" || w.rec().Bag["warned"] != "yes" {
		t.Errorf("sent %+v, bag %v", n.sent, w.rec().Bag)
	}
	if err := run(); err != nil || len(n.sent) != 1 {
		t.Errorf("a third look sent again: %d, %v", len(n.sent), err)
	}
}

// TestDeclinedMessage: the Declined Event says what the detector does now, in its own words.
func TestDeclinedMessage(t *testing.T) {
	for _, tc := range []struct {
		note, want string
	}{
		{"", "Pull request #7 was closed without merging"},
		{"the environment stays", "Pull request #7 was closed without merging; the environment stays"},
	} {
		if got := declinedMessage(7, tc.note); got != tc.want {
			t.Errorf("declinedMessage(7, %q) = %q, want %q", tc.note, got, tc.want)
		}
	}
}

// TestNoticeSentOnce: a Notice decided again with the same ID — its state write lost to a
// conflict, say, so the next look decides the same alert — is not sent a second time by this
// process.
func TestNoticeSentOnce(t *testing.T) {
	w := newWorld(t, "observe")
	n := &notifier{}
	p := w.replica("a")
	p.Notifier = n
	p.SentNotices = lru.New(16)
	notice := &lifecycle.Notice{ID: "alert-1", Kind: "inactivity.alert", Target: lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "x"}}
	for i := 0; i < 3; i++ {
		_, err := p.Run(context.Background(), Request{Key: testKey, Now: w.now, Supersedes: supersedes,
			Decide: func(View) Decision {
				// Decides the alert whatever the state says, as after a lost write.
				return Decision{Findings: []lifecycle.Finding{{Reason: "InactivityAlert", Message: "idle", ID: "alert-1", Notice: notice}}}
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(n.sent) != 1 {
		t.Errorf("sent %d times, want once", len(n.sent))
	}
}
