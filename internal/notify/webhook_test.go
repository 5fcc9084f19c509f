package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func notice() lifecycle.Notice {
	return lifecycle.Notice{ID: "expiry-warning|k|2026", Kind: "expiry.warning", To: "ana@example.com", Owner: "ana",
		Subject: "preview expires", Text: "preview expires at …", Target: lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "a", Name: "preview"},
		Deadline: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Links: []lifecycle.NoticeLink{{Label: "Extend 3d", URL: "https://k.example/extend?token=SECRET"}}}
}

func TestWebhook(t *testing.T) {
	var got map[string]any
	var headers http.Header
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		got = nil
		_ = json.Unmarshal(b, &got)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	w, err := NewWebhook(srv.URL+"/hooks/T000/SECRETPATH", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Send(context.Background(), notice()); err != nil {
		t.Fatal(err)
	}
	if got["id"] != "expiry-warning|k|2026" || got["kind"] != "expiry.warning" || got["to"] != "ana@example.com" || got["deadline"] != "2026-12-01T00:00:00Z" {
		t.Errorf("body: %v", got)
	}
	if links, _ := got["links"].([]any); len(links) != 1 {
		t.Errorf("links: %v", got["links"])
	}
	if headers.Get("Idempotency-Key") != "expiry-warning|k|2026" || headers.Get("Authorization") != "Bearer tok" || headers.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", headers)
	}

	status = http.StatusBadGateway
	err = w.Send(context.Background(), notice())
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "502") {
		t.Errorf("a 502: %v", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error carries a secret: %v", err)
	}
	srv.Close()
	err = w.Send(context.Background(), notice())
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestNewWebhookRefuses(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "hooks.example/abc", "https://"} {
		if _, err := NewWebhook(u, ""); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

type failing struct{ err error }

func (f failing) Send(context.Context, lifecycle.Notice) error { return f.err }

func TestMulti(t *testing.T) {
	boom := errors.New("boom")
	if err := (Multi{failing{}, failing{boom}}).Send(context.Background(), notice()); !errors.Is(err, boom) {
		t.Errorf("multi: %v", err)
	}
	if err := (Multi{failing{}, failing{}}).Send(context.Background(), notice()); err != nil {
		t.Errorf("multi: %v", err)
	}
}
