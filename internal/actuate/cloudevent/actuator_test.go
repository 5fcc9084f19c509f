package cloudevent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/cloudevent"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// next records the Changes the Actuator passes on.
type next struct{ got []lifecycle.Change }

func (n *next) Apply(_ context.Context, c lifecycle.Change, _ time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	n.got = append(n.got, c)
	return lifecycle.Outcome{Applied: true}, nil
}

// current answers the Actuator's question with err.
type current struct{ err error }

func (c current) CurrentCloudEvent(context.Context, lifecycle.Change) error { return c.err }

func sendChange(t *testing.T, sink string) lifecycle.Change {
	t.Helper()
	e, err := lifecycle.NewCloudEvent(sink, "uid-1/3", "team-a/preview-42", cleaned())
	if err != nil {
		t.Fatal(err)
	}
	target := lifecycle.Target{Group: "kustos.io", Version: "v1alpha1", Kind: "Cleaner", Namespace: "team-a", Name: "preview-42"}
	return lifecycle.Change{Key: "ephemeral/CloudEvent.kustos.io/team-a/preview-42", Detector: "ephemeral", Target: target,
		Edit: lifecycle.Edit{Op: lifecycle.EditSendCloudEvent, CloudEvent: e}}
}

// TestActuator: a SendCloudEvent Change is sent by the CloudEvent actuator — never passed on to
// be proposed or written to the cluster — with its own id, subject and data; a failure comes
// back as Send's error (its text for the author, matching lifecycle.ErrNotDelivered); a decision
// the detector no longer wants is not sent; every other Change goes to Next.
func TestActuator(t *testing.T) {
	for _, tc := range []struct {
		name string
		// answer is the receiver's; sender overrides the loopback Sender; change builds the Change
		// from the receiver's URL.
		answer  answer
		sender  *cloudevent.Sender
		current error
		change  func(t *testing.T, url string) lifecycle.Change
		// wantErr is what the error matches (nil: none), sent how many events arrived, passed
		// whether Next got the Change.
		wantErr []error
		sent    int
		passed  bool
	}{
		{name: "sent", answer: answerStatuses(), change: sendChange, sent: 1},
		{name: "sink answers 503 then 200", answer: answerStatuses(http.StatusServiceUnavailable), change: sendChange, sent: 2},
		{name: "sink rejects", answer: answerStatuses(http.StatusUnprocessableEntity), change: sendChange, sent: 1,
			wantErr: []error{lifecycle.ErrNotDelivered, cloudevent.ErrRejected}},
		{name: "destination refused", answer: answerStatuses(), sender: &cloudevent.Sender{Retries: -1}, change: sendChange,
			wantErr: []error{lifecycle.ErrNotDelivered, egress.ErrRefused}},
		{name: "no longer wanted", answer: answerStatuses(), change: sendChange,
			current: fmt.Errorf("%w: the Cleaner changed", lifecycle.ErrSourceConflict), wantErr: []error{lifecycle.ErrSourceConflict}},
		{name: "no event in the edit", answer: answerStatuses(), change: func(t *testing.T, url string) lifecycle.Change {
			c := sendChange(t, url)
			c.Edit.CloudEvent = nil
			return c
		}, wantErr: []error{lifecycle.ErrInvalidChange}},
		{name: "another Change passed on", answer: answerStatuses(), change: func(t *testing.T, url string) lifecycle.Change {
			c := sendChange(t, url)
			c.Edit = lifecycle.Edit{Op: lifecycle.EditDelete}
			return c
		}, passed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startReceiver(t, tc.answer)
			s := tc.sender
			if s == nil {
				s = fast()
			}
			n := &next{}
			a := cloudevent.Actuator{Sender: s, Next: n, Current: current{tc.current}}
			c := tc.change(t, r.URL)
			_, err := a.Apply(context.Background(), c, time.Now(), lifecycle.ProposeOptions{})
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("Apply: %v; want an error matching %v", err, want)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "127.0.0.1/32") {
				t.Errorf("the error's text says more than the failure's class: %v", err)
			}
			_, events := r.seen()
			if len(events) != tc.sent {
				t.Fatalf("the sink got %d events, want %d", len(events), tc.sent)
			}
			for _, e := range events {
				var data lifecycle.Cleaned
				if err := e.DataAs(&data); err != nil {
					t.Fatal(err)
				}
				if e.ID() != "uid-1/3" || e.Subject() != "team-a/preview-42" || e.Type() != cloudevent.TypeCleaned ||
					!data.At.Equal(cleaned().At) || strings.Join(data.Releases, ",") != "web" {
					t.Errorf("event id %s subject %s type %s data %+v", e.ID(), e.Subject(), e.Type(), data)
				}
			}
			if got := len(n.got) == 1; got != tc.passed {
				t.Errorf("passed on: %v, want %v", got, tc.passed)
			}
		})
	}
}

// TestNewCloudEventBounded: a CloudEvent Change is stored in a Lease; its data is bounded.
func TestNewCloudEventBounded(t *testing.T) {
	big := lifecycle.Cleaned{Cleaner: "team-a/x", Targets: []string{strings.Repeat("x", lifecycle.MaxCloudEventData)}}
	if _, err := lifecycle.NewCloudEvent("https://sink.example/", "id", "team-a/x", big); !errors.Is(err, lifecycle.ErrInvalidChange) {
		t.Errorf("NewCloudEvent of %d bytes: %v, want ErrInvalidChange", lifecycle.MaxCloudEventData, err)
	}
	e, err := lifecycle.NewCloudEvent("https://user:secret@sink.example/hook", "id", "team-a/x", cleaned())
	if err != nil {
		t.Fatal(err)
	}
	if got := e.SinkForDisplay(); strings.Contains(got, "secret") || !strings.Contains(got, "sink.example/hook") {
		t.Errorf("SinkForDisplay = %q", got)
	}
}
