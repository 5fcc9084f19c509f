package cloudevent_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// receiver is a CloudEvents sink built on sdk-go, listening on loopback. It answers the n-th
// request with answer(n) (n from 1) and records what arrived, on the wire and as events.
type receiver struct {
	URL string

	mu       sync.Mutex
	requests []request
	events   []event.Event
}

// request is what the receiver saw on the wire.
type request struct {
	contentType string
	basicAuth   string // "user:password", when the request carried Basic credentials
}

// answer returns the result the receiver's handler gives the n-th request.
type answer func(ctx context.Context, n int) protocol.Result

func status(code int) protocol.Result {
	if code == http.StatusOK {
		return cloudevents.ResultACK
	}
	return cehttp.NewResult(code, "scripted answer %d", code)
}

// answerStatuses answers with codes in turn, then 200 OK.
func answerStatuses(codes ...int) answer {
	return func(_ context.Context, n int) protocol.Result {
		if n <= len(codes) {
			return status(codes[n-1])
		}
		return status(http.StatusOK)
	}
}

func startReceiver(t *testing.T, answer answer) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{URL: "http://" + l.Addr().String() + "/events"}
	p, err := cloudevents.NewHTTP(cloudevents.WithListener(l), cloudevents.WithMiddleware(r.record))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.StartReceiver(ctx, func(ctx context.Context, e event.Event) protocol.Result {
			r.mu.Lock()
			r.events = append(r.events, e)
			n := len(r.events)
			r.mu.Unlock()
			return answer(ctx, n)
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receiver: %v", err)
		}
	})
	return r
}

// record is an HTTP middleware in front of the SDK's handler: the content type and credentials
// are on the wire only.
func (r *receiver) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got := request{contentType: req.Header.Get("Content-Type")}
		if user, password, ok := req.BasicAuth(); ok {
			got.basicAuth = user + ":" + password
		}
		r.mu.Lock()
		r.requests = append(r.requests, got)
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *receiver) seen() ([]request, []event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...), append([]event.Event(nil), r.events...)
}
