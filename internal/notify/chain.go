package notify

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Sender delivers a Notice (a pipeline.Notifier).
type Sender interface {
	Send(ctx context.Context, n lifecycle.Notice) error
}

// ChainConfig are the owners' channels, as the --notify-* flags give them.
type ChainConfig struct {
	// Webhook receives every Notice as JSON (URL "": none).
	Webhook WebhookOptions
	// Mail sends Notices to owners (Host "": none); BatchWindow > 0 gathers one owner's notices
	// within it into one message (at most BatchMax).
	Mail        MailConfig
	BatchWindow time.Duration
	BatchMax    int
}

// WebhookOptions are --notify-webhook-url and --notify-webhook-token-file: the URL and the file
// holding its bearer token ("": none).
type WebhookOptions struct {
	URL, TokenFile string
}

// Chain is the owners' channels built once, so that one owner's notices of every detector share
// a batch.
type Chain struct {
	// Notifier sends to all of them (nil: none configured).
	Notifier Sender
	// Mail is the unbatched mail (nil: no mail), for what goes to administrators.
	Mail *Mail
	// Batcher gathers the mails (nil: not batched); run it as a manager's Runnable so that what
	// is gathering when the manager stops is sent.
	Batcher *Batcher
}

// NewChain builds the channels c configures; its errors name the flag to fix.
func NewChain(c ChainConfig) (Chain, error) {
	var out Chain
	var all Multi
	if c.Webhook.URL != "" {
		token := ""
		if f := c.Webhook.TokenFile; f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return out, fmt.Errorf("--notify-webhook-token-file: %w", err)
			}
			token = strings.TrimSpace(string(b))
		}
		w, err := NewWebhook(c.Webhook.URL, token)
		if err != nil {
			return out, fmt.Errorf("--notify-webhook-url: %w", err)
		}
		all = append(all, w)
	}
	if c.Mail.Host != "" {
		m, err := NewMail(c.Mail)
		if err != nil {
			return out, fmt.Errorf("--notify-mail-*: %w", err)
		}
		out.Mail = m
		var n Sender = m
		if c.BatchWindow > 0 {
			out.Batcher = NewBatcher(m, BatchOptions{Window: c.BatchWindow, Max: c.BatchMax})
			n = out.Batcher
		}
		// Last: a batched mail blocks for its window; the webhook need not wait for it.
		all = append(all, n)
	}
	switch len(all) {
	case 0:
	case 1:
		out.Notifier = all[0]
	default:
		out.Notifier = all
	}
	return out, nil
}
