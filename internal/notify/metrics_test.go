package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/notify/mailpittest"
)

// TestDeliveriesCounted: kustos_notifications_total counts each message a mail server or
// webhook accepted as sent and each one it did not as failed, per notifier — what the
// notifier alert and the dashboard read. Not parallel: it reads process-wide counters.
func TestDeliveriesCounted(t *testing.T) {
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	hook, err := NewWebhook(srv.URL+"/hook", "")
	if err != nil {
		t.Fatal(err)
	}
	mp := mailpittest.Start(t, mailpittest.AcceptAny...)
	mail := newTestMail(t, MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: TLSNone, Timeout: 10 * time.Second})

	type counts struct{ sent, failed float64 }
	read := func(notifier string) counts {
		return counts{deliveryCount(t, notifier, "sent"), deliveryCount(t, notifier, "failed")}
	}
	for _, tc := range []struct {
		name     string
		notifier string
		send     func() error
		want     counts
	}{
		{"webhook accepts", notifierWebhook, func() error { return hook.Send(context.Background(), notice()) }, counts{sent: 1}},
		{"webhook answers 502", notifierWebhook, func() error {
			status = http.StatusBadGateway
			return hook.Send(context.Background(), notice())
		}, counts{failed: 1}},
		{"mail server accepts", notifierMail, func() error { return mail.Send(t.Context(), warning(newOwner(), "web")) }, counts{sent: 1}},
		{"no recipient: nothing is sent, nothing counted", notifierMail, func() error { return mail.Send(t.Context(), warning("", "web")) }, counts{}},
		{"mail server gone", notifierMail, func() error {
			mp.Stop()
			return mail.Send(t.Context(), warning(newOwner(), "web"))
		}, counts{failed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := read(tc.notifier)
			err := tc.send()
			after := read(tc.notifier)
			got := counts{after.sent - before.sent, after.failed - before.failed}
			if got != tc.want {
				t.Errorf("counted %+v (send error: %v), want %+v", got, err, tc.want)
			}
		})
	}
}

func deliveryCount(t *testing.T, notifier, outcome string) float64 {
	t.Helper()
	var m dto.Metric
	if err := deliveries.WithLabelValues(notifier, outcome).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
