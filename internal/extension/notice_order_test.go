package extension

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// noEvents is a pipeline.Reporter that writes nothing.
type noEvents struct{}

func (noEvents) Record(context.Context, lifecycle.Change, time.Time) error { return nil }
func (noEvents) Notify(context.Context, corev1.ObjectReference, string, string, string, string, time.Time) error {
	return nil
}

// How a send ends, as far as the Lease can tell: delivered and confirmed; a crash after the
// attempt was recorded and before anything went out; a crash after the message went out and
// before it was marked sent.
const (
	sendOK = iota
	crashBeforeSend
	crashAfterSend
)

// orderNotifier delivers warnings (to sent) and, at the moment a message goes out, reads the
// owner's page the way the owner would open it from the mail.
type orderNotifier struct {
	h      *harness
	mode   int
	sent   []lifecycle.Notice
	pageAt []string // the page's state at each delivery
	during func()   // runs while the first message goes out (a second replica)
}

var errCrash = errors.New("crash")

func (n *orderNotifier) Send(_ context.Context, x lifecycle.Notice) error {
	if n.mode == crashBeforeSend {
		return errCrash
	}
	n.sent = append(n.sent, x)
	n.pageAt = append(n.pageAt, n.h.ownerPage().State)
	if d := n.during; d != nil {
		n.during = nil
		d()
	}
	if n.mode == crashAfterSend {
		return errCrash
	}
	return nil
}

// TestNoticeOrder: an expiry warning is recorded in the target's state Lease (the deadline it
// is about, which names the notice: its id is the Key and that deadline) before it is sent, and
// marked sent after; the owner's page says "warned" from the record on, so a mail's reader never
// finds "scheduled" there. One row per transition, a crash between two steps included: a crash
// after the record sends once, after the backoff; a crash after the send and before the mark
// sends it a second time, with the same id (the mail's Message-ID and the webhook's
// Idempotency-Key come from it); a second replica looking while the first sends waits.
func TestNoticeOrder(t *testing.T) {
	settings := expiry.DefaultSettings()
	policy := expiry.Policy{Owner: "ana", OwnerAddress: "ana@example.edu", Deadline: deadline, From: "test", Action: expiry.ActionDelete}
	target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "preview"}
	wantID := "expiry-warning|" + string(key) + "|" + deadline.Format(time.RFC3339)
	type step struct {
		at      time.Time
		replica string
		mode    int
		sent    int    // messages delivered so far
		page    string // the page's state after the step
		marked  bool   // the Lease says the warning was sent (WarnedAt)
	}
	for _, tc := range []struct {
		name     string
		steps    []step
		second   bool // replica b looks while a's message goes out
		pageSent []string
	}{
		{name: "record, send, mark sent", steps: []step{
			{at: now, replica: "a", sent: 1, page: StateWarned, marked: true},
			{at: now.Add(time.Hour), replica: "a", sent: 1, page: StateWarned, marked: true},
		}, pageSent: []string{StateWarned}},
		{name: "a crash after the record: sent once, after the backoff", steps: []step{
			{at: now, replica: "a", mode: crashBeforeSend, sent: 0, page: StateWarned},
			{at: now.Add(30 * time.Second), replica: "a", sent: 0, page: StateWarned},
			{at: now.Add(time.Hour), replica: "a", sent: 1, page: StateWarned, marked: true},
			{at: now.Add(2 * time.Hour), replica: "a", sent: 1, page: StateWarned, marked: true},
		}, pageSent: []string{StateWarned}},
		{name: "a crash after the send, before the mark: sent twice, one id", steps: []step{
			{at: now, replica: "a", mode: crashAfterSend, sent: 1, page: StateWarned},
			{at: now.Add(time.Hour), replica: "b", sent: 2, page: StateWarned, marked: true},
			{at: now.Add(2 * time.Hour), replica: "a", sent: 2, page: StateWarned, marked: true},
		}, pageSent: []string{StateWarned, StateWarned}},
		{name: "a second replica while the first sends: it waits", second: true, steps: []step{
			{at: now, replica: "a", sent: 1, page: StateWarned, marked: true},
		}, pageSent: []string{StateWarned}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.store.Put(state.Record{Key: key}) // nothing warned yet
			h.srv.Owners = memOwners{h}
			n := &orderNotifier{h: h}
			replica := func(id string) *pipeline.Pipeline {
				return &pipeline.Pipeline{Detector: expiry.DetectorName, Vocab: expiry.Vocabulary(), Store: h.store.As(id), Reporter: noEvents{},
					Notifier: n, Identity: id, Alive: func(context.Context, string) (bool, error) { return true, nil }, Log: logr.Discard()}
			}
			run := func(id string, at time.Time) error {
				req := expiry.KeptRequest(key, target, "uid-1", at, settings, nil, logr.Discard(),
					func(expiry.State) (expiry.Policy, expiry.Kept) { return policy, expiry.Kept{} })
				_, err := replica(id).Run(t.Context(), req)
				return err
			}
			if tc.second {
				n.during = func() {
					if err := run("b", now.Add(time.Second)); err != nil {
						t.Errorf("replica b: %v", err)
					}
					if len(n.sent) != 1 {
						t.Errorf("replica b sent while a was sending: %d messages", len(n.sent))
					}
				}
			}
			for i, s := range tc.steps {
				n.mode = s.mode
				err := run(s.replica, s.at)
				if (s.mode == sendOK) != (err == nil) || err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("step %d: %v", i, err)
				}
				st := h.state()
				if len(n.sent) != s.sent || h.ownerPage().State != s.page || !st.WarnedAt.IsZero() != s.marked || !st.WarningFor.Equal(deadline) {
					t.Fatalf("step %d (%s at %s): %d sent, page %q, state %+v; want %d sent, page %q, marked %v",
						i, s.replica, s.at.Sub(now), len(n.sent), h.ownerPage().State, st, s.sent, s.page, s.marked)
				}
			}
			for _, x := range n.sent {
				if x.ID != wantID {
					t.Errorf("a message with id %q, want %q", x.ID, wantID)
				}
			}
			if len(n.pageAt) != len(tc.pageSent) {
				t.Fatalf("page read at %d sends", len(n.pageAt))
			}
			for i, want := range tc.pageSent {
				if n.pageAt[i] != want {
					t.Errorf("message %d went out while the owner's page said %q, want %q", i+1, n.pageAt[i], want)
				}
			}
		})
	}
}
