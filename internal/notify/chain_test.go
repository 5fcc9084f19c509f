package notify

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNewChain: the channels the flags turn on, the batched mail last behind the webhook, and
// errors naming the flag to fix.
func TestNewChain(t *testing.T) {
	mail := MailConfig{Host: "smtp.example.com", From: "kustos@example.com"}
	for _, tc := range []struct {
		name                string
		c                   ChainConfig
		want                string // the Notifier's type, "" for none
		wantMail, wantBatch bool
		wantErr             string
	}{
		{"none", ChainConfig{}, "", false, false, ""},
		{"webhook", ChainConfig{Webhook: WebhookOptions{URL: "https://hooks.example.com/k"}}, "*notify.Webhook", false, false, ""},
		{"mail", ChainConfig{Mail: mail}, "*notify.Mail", true, false, ""},
		{"batched mail", ChainConfig{Mail: mail, BatchWindow: time.Minute}, "*notify.Batcher", true, true, ""},
		{"both", ChainConfig{Webhook: WebhookOptions{URL: "https://hooks.example.com/k"}, Mail: mail, BatchWindow: time.Minute}, "notify.Multi", true, true, ""},
		{"token file missing", ChainConfig{Webhook: WebhookOptions{URL: "https://hooks.example.com/k", TokenFile: filepath.Join(t.TempDir(), "gone")}}, "", false, false, "--notify-webhook-token-file"},
		{"bad mail", ChainConfig{Mail: MailConfig{Host: "smtp.example.com"}}, "", false, false, "--notify-mail-*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewChain(tc.c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewChain = %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if c.Notifier != nil {
				got = fmt.Sprintf("%T", c.Notifier)
			}
			if got != tc.want || (c.Mail != nil) != tc.wantMail || (c.Batcher != nil) != tc.wantBatch {
				t.Errorf("notifier %s, mail %v, batcher %v; want %s, %v, %v", got, c.Mail != nil, c.Batcher != nil, tc.want, tc.wantMail, tc.wantBatch)
			}
			if m, ok := c.Notifier.(Multi); ok {
				if _, last := m[len(m)-1].(*Batcher); !last {
					t.Errorf("the batched mail is not last: %T", m[len(m)-1])
				}
			}
		})
	}
}
