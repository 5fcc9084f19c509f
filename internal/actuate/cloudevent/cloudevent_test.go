package cloudevent_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/kustos-dev/kustos/internal/actuate/cloudevent"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// loopback is a client that may reach the tests' receivers on 127.0.0.1: an operator's
// --allowed-destinations=127.0.0.1/32. A Sender without a client refuses them.
var loopback = func() *http.Client {
	p, err := egress.ParsePolicy("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	return (&egress.Guard{Policy: p, Detector: "cloudevent-test"}).Client(cloudevent.DefaultHTTPTimeout)
}()

// fast retries a few times without waiting long: the tests' backoff.
func fast() *cloudevent.Sender {
	return &cloudevent.Sender{HTTP: loopback, Source: "kustos", Retries: 3, Backoff: time.Millisecond}
}

func cleaned() lifecycle.Cleaned {
	return lifecycle.Cleaned{
		Cleaner:  "team-a/preview-42",
		Targets:  []string{"Deployment.apps/team-a/web", "Service/team-a/web"},
		Releases: []string{"web"},
		At:       time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	}
}

func TestSendAcknowledged(t *testing.T) {
	r := startReceiver(t, answerStatuses())
	s := &cloudevent.Sender{HTTP: loopback, Source: "https://cluster.example/kustos"} // every other field default
	data := cleaned()

	if err := s.Send(context.Background(), r.URL, "uid-1234.3", "team-a/preview-42", data); err != nil {
		t.Fatal(err)
	}
	requests, events := r.seen()
	if len(requests) != 1 || len(events) != 1 {
		t.Fatalf("the receiver saw %d requests and %d events, want 1 each", len(requests), len(events))
	}
	// Structured mode: the whole event is the JSON body.
	if ct := requests[0].contentType; !strings.HasPrefix(ct, cloudevents.ApplicationCloudEventsJSON) {
		t.Errorf("Content-Type on the wire = %q, want %s", ct, cloudevents.ApplicationCloudEventsJSON)
	}
	e := events[0]
	for attr, got := range map[string]string{
		"type":            e.Type(),
		"source":          e.Source(),
		"id":              e.ID(),
		"subject":         e.Subject(),
		"datacontenttype": e.DataContentType(),
		"specversion":     e.SpecVersion(),
	} {
		want := map[string]string{
			"type":            cloudevent.TypeCleaned,
			"source":          "https://cluster.example/kustos",
			"id":              "uid-1234.3",
			"subject":         "team-a/preview-42",
			"datacontenttype": cloudevents.ApplicationJSON,
			"specversion":     cloudevents.VersionV1,
		}[attr]
		if got != want {
			t.Errorf("%s = %q, want %q", attr, got, want)
		}
	}
	if e.Time().IsZero() {
		t.Error("the event has no time")
	}
	var got lifecycle.Cleaned
	if err := e.DataAs(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, data) {
		t.Errorf("data = %+v, want %+v", got, data)
	}
	// The JSON field names receivers depend on.
	for _, field := range []string{`"cleaner":`, `"targets":`, `"releases":`, `"at":"2026-03-01T12:00:00Z"`} {
		if !strings.Contains(string(e.Data()), field) {
			t.Errorf("data %s lacks %s", e.Data(), field)
		}
	}
}

func TestSendDefaultSource(t *testing.T) {
	r := startReceiver(t, answerStatuses())
	if err := (&cloudevent.Sender{HTTP: loopback}).Send(context.Background(), r.URL, "id-1", "ns/name", cleaned()); err != nil {
		t.Fatal(err)
	}
	if _, events := r.seen(); len(events) != 1 || events[0].Source() != cloudevent.DefaultSource {
		t.Fatalf("events = %v, want one from %s", events, cloudevent.DefaultSource)
	}
}

func TestSendRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int
		retries  int
		requests int
		fails    bool   // with ErrNotDelivered, not ErrRejected
		mentions string // in the error: the class of the answer
		detail   string // in Detail only: the answer
	}{
		{name: "503 twice, then 200", answers: []int{503, 503}, retries: 3, requests: 3},
		{name: "429, 408, 409, 425, then 200", answers: []int{429, 408, 409, 425}, retries: 5, requests: 5},
		{name: "500 until retries run out", answers: []int{500, 500, 500, 500, 500}, retries: 3, requests: 4,
			fails: true, mentions: "after 4 requests: HTTP 5xx", detail: "500 Internal Server Error: scripted answer 500"},
		{name: "no retries", answers: []int{503}, retries: -1, requests: 1,
			fails: true, mentions: "after 1 request: HTTP 5xx", detail: "503 Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startReceiver(t, answerStatuses(tc.answers...))
			s := fast()
			s.Retries = tc.retries
			err := s.Send(context.Background(), r.URL, "id-1", "ns/name", cleaned())
			requests, events := r.seen()
			if len(requests) != tc.requests {
				t.Errorf("%d requests, want %d", len(requests), tc.requests)
			}
			if !tc.fails {
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range events {
					if e.ID() != "id-1" {
						t.Errorf("a retry changed the id to %q", e.ID())
					}
				}
				return
			}
			if !errors.Is(err, cloudevent.ErrNotDelivered) || errors.Is(err, cloudevent.ErrRejected) {
				t.Fatalf("error %v: want ErrNotDelivered only", err)
			}
			if !strings.Contains(err.Error(), tc.mentions) || strings.Contains(err.Error(), tc.detail) {
				t.Errorf("error %q does not say %q, or quotes the answer %q", err, tc.mentions, tc.detail)
			}
			if d := cloudevent.Detail(err); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q does not quote the answer %q", d, tc.detail)
			}
		})
	}
}

func TestSendRejected(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			r := startReceiver(t, answerStatuses(code))
			err := fast().Send(context.Background(), r.URL, "id-1", "ns/name", cleaned())
			if !errors.Is(err, cloudevent.ErrRejected) || !errors.Is(err, cloudevent.ErrNotDelivered) {
				t.Fatalf("error %v: want ErrRejected and ErrNotDelivered", err)
			}
			if requests, _ := r.seen(); len(requests) != 1 {
				t.Errorf("%d requests: a rejected event was retried", len(requests))
			}
			want := http.StatusText(code)
			if !strings.HasSuffix(err.Error(), ": HTTP 4xx") || strings.Contains(err.Error(), "scripted answer") {
				t.Errorf("error %q: want the class of the answer, HTTP 4xx, and nothing of the answer", err)
			}
			if d := cloudevent.Detail(err); !strings.Contains(d, want) || !strings.Contains(d, "scripted answer") {
				t.Errorf("detail %q does not quote the answer %q", d, want)
			}
		})
	}
}

// closedURL returns the URL of a loopback port nothing listens on.
func closedURL(t *testing.T, userinfo string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + userinfo + addr + "/"
}

func TestSendUnreachable(t *testing.T) {
	start := time.Now()
	err := fast().Send(context.Background(), closedURL(t, ""), "id-1", "ns/name", cleaned())
	if !errors.Is(err, cloudevent.ErrNotDelivered) || errors.Is(err, cloudevent.ErrRejected) {
		t.Fatalf("error %v: want ErrNotDelivered only", err)
	}
	if !strings.Contains(err.Error(), "could not be reached") || !strings.Contains(err.Error(), "4 requests") ||
		!strings.HasSuffix(err.Error(), ": "+egress.FailureConnRefused) {
		t.Errorf("error %q does not say that 4 attempts found no sink (connection refused)", err)
	}
	if strings.Contains(err.Error(), "dial") || !strings.Contains(cloudevent.Detail(err), "dial tcp") {
		t.Errorf("error %q or detail %q: the network's words belong in the detail only", err, cloudevent.Detail(err))
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Send took %v", elapsed)
	}
}

func TestSendCancelled(t *testing.T) {
	// While a request waits for the sink's answer.
	hanging := startReceiver(t, func(ctx context.Context, _ int) protocol.Result {
		<-ctx.Done()
		return status(http.StatusServiceUnavailable)
	})
	// While Send waits to retry.
	failing := startReceiver(t, func(context.Context, int) protocol.Result { return status(http.StatusServiceUnavailable) })

	for name, sink := range map[string]string{"in flight": hanging.URL, "in backoff": failing.URL} {
		t.Run(name, func(t *testing.T) {
			s := &cloudevent.Sender{HTTP: loopback, Retries: 5, Backoff: time.Hour}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			err := s.Send(ctx, sink, "id-1", "ns/name", cleaned())
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("Send returned %v after the cancellation", elapsed-200*time.Millisecond)
			}
			if !errors.Is(err, cloudevent.ErrNotDelivered) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v: want ErrNotDelivered and context.Canceled", err)
			}
		})
	}
}

// Credentials in the sink URL authenticate the request and never show in an error.
func TestSendUserinfo(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		err := fast().Send(context.Background(), "http://user:secret@127.0.0.1:1/", "id-1", "ns/name", cleaned())
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("error %v: want one without the password", err)
		}
		if !strings.Contains(err.Error(), "http://127.0.0.1:1/") {
			t.Errorf("error %q does not name the sink", err)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		r := startReceiver(t, func(context.Context, int) protocol.Result {
			// A sink that echoes the credentials it refuses.
			return cehttp.NewResult(http.StatusForbidden, "credentials kustos:s3cr3t/+ refused")
		})
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("kustos", "s3cr3t/+")
		err = fast().Send(context.Background(), u.String(), "id-1", "ns/name", cleaned())
		if !errors.Is(err, cloudevent.ErrRejected) {
			t.Fatalf("error %v: want ErrRejected", err)
		}
		if d := cloudevent.Detail(err); strings.Contains(d, "s3cr3t") || strings.Contains(err.Error(), "s3cr3t") ||
			!strings.Contains(d, "credentials [redacted] refused") {
			t.Errorf("error %q or detail %q shows the credentials, or the detail not the rest of the answer", err, d)
		}
		if requests, _ := r.seen(); len(requests) != 1 || requests[0].basicAuth != "kustos:s3cr3t/+" {
			t.Errorf("requests = %+v, want one with Basic credentials kustos:s3cr3t/+", requests)
		}
	})
	t.Run("not a URL", func(t *testing.T) {
		err := fast().Send(context.Background(), "http://user:secret@[::1", "id-1", "ns/name", cleaned())
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("error %v: want one without the password", err)
		}
	})
}

func TestSendInvalid(t *testing.T) {
	r := startReceiver(t, answerStatuses())
	for name, send := range map[string]func() error{
		"ftp sink": func() error {
			return fast().Send(context.Background(), "ftp://127.0.0.1/", "id-1", "ns/name", cleaned())
		},
		"no host": func() error { return fast().Send(context.Background(), "http:///x", "id-1", "ns/name", cleaned()) },
		"no id":   func() error { return fast().Send(context.Background(), r.URL, "", "ns/name", cleaned()) },
		"data not JSON": func() error {
			return fast().Send(context.Background(), r.URL, "id-1", "ns/name", map[string]any{"f": func() {}})
		},
	} {
		if err := send(); !errors.Is(err, cloudevent.ErrNotDelivered) || errors.Is(err, cloudevent.ErrRejected) {
			t.Errorf("%s: error %v, want ErrNotDelivered only", name, err)
		}
	}
	if requests, _ := r.seen(); len(requests) != 0 {
		t.Errorf("%d invalid events reached the sink", len(requests))
	}
}

// TestSendRefused: a Sender without a client of its own sends to public addresses only. A sink
// on loopback (as a cluster-internal service or 169.254.169.254 would be) is never asked, not
// retried, and the error says only that the destination was refused.
func TestSendRefused(t *testing.T) {
	r := startReceiver(t, answerStatuses())
	for _, sink := range []string{r.URL, "http://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]:1/"} {
		t.Run(sink, func(t *testing.T) {
			start := time.Now()
			err := (&cloudevent.Sender{Retries: 5, Backoff: time.Second}).Send(context.Background(), sink, "id-1", "ns/name", cleaned())
			if !errors.Is(err, egress.ErrRefused) || !errors.Is(err, cloudevent.ErrNotDelivered) || errors.Is(err, cloudevent.ErrRejected) {
				t.Fatalf("error %v: want a refusal, not delivered", err)
			}
			if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
				t.Errorf("Send took %v: a refused destination was retried", elapsed)
			}
			if !strings.Contains(err.Error(), "destination refused") || strings.Contains(err.Error(), "loopback") ||
				strings.Contains(err.Error(), "link-local") || strings.Contains(err.Error(), "dial") {
				t.Errorf("error %q: want only that the destination was refused", err)
			}
			if d := cloudevent.Detail(err); !strings.Contains(d, "address") {
				t.Errorf("detail %q does not say why", d)
			}
		})
	}
	if requests, _ := r.seen(); len(requests) != 0 {
		t.Errorf("the loopback sink got %d requests", len(requests))
	}
}
