package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Webhook posts each Notice as one JSON object (the lifecycle.Notice fields) to URL, with the
// Notice's ID as Idempotency-Key so a receiver can drop the copy a crash may re-send.
type Webhook struct {
	URL string
	// Token, when set, is sent as "Authorization: Bearer <Token>" (read from a Secret file).
	Token string
	// Client defaults to one with a 10 s timeout.
	Client *http.Client
}

// ErrRejected: the webhook answered with a status other than 2xx.
var ErrRejected = errors.New("webhook rejected the notice")

// NewWebhook checks the URL (http or https, with a host).
func NewWebhook(raw, token string) (*Webhook, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the webhook URL %q is not an http(s) URL with a host", redact(raw))
	}
	initDeliveries(notifierWebhook)
	return &Webhook{URL: raw, Token: token}, nil
}

// Send posts n; an answer other than 2xx is an error wrapping ErrRejected.
func (w *Webhook) Send(ctx context.Context, n lifecycle.Notice) error {
	err := w.send(ctx, n)
	countDelivery(notifierWebhook, err)
	return err
}

func (w *Webhook) send(ctx context.Context, n lifecycle.Notice) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redact(w.URL), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", n.ID)
	req.Header.Set("User-Agent", "kustos")
	if w.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.Token)
	}
	c := w.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the URL, which may hold a secret
		}
		return fmt.Errorf("webhook %s: %w", redact(w.URL), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: %s answered %s", ErrRejected, redact(w.URL), resp.Status)
	}
	return nil
}

// redact keeps a URL's scheme, host and path: chat webhooks carry their secret in the path's
// last segment or the query, so both go.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(an unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// Multi sends a Notice to each notifier in turn; the first error stops it (the pipeline sends
// the Notice again at its next look, to all: receivers recognise a repeat by its ID).
type Multi []interface {
	Send(ctx context.Context, n lifecycle.Notice) error
}

// Send delivers n to every notifier.
func (m Multi) Send(ctx context.Context, n lifecycle.Notice) error {
	for _, x := range m {
		if err := x.Send(ctx, n); err != nil {
			return err
		}
	}
	return nil
}
