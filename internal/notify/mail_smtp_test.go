package notify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify/mailpittest"
)

// TestMailpit sends through a real SMTP server, Mailpit (bin/mailpit), and reads what arrived
// through its HTTP API.
func TestMailpit(t *testing.T) {
	mp := mailpittest.Start(t, mailpittest.AcceptAny...)
	plain := func(t *testing.T, edit ...func(*MailConfig)) *Mail {
		cfg := MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: TLSNone, Username: "kustos", Password: "hunter2-SECRET", From: "Kustos <kustos@example.com>", Timeout: 10 * time.Second}
		for _, e := range edit {
			e(&cfg)
		}
		return newTestMail(t, cfg)
	}

	t.Run("a warning: subject, sender, recipient, both parts with every link", func(t *testing.T) {
		t.Parallel()
		to := newOwner()
		n := warning(to, "web")
		if err := plain(t).Send(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		got := mp.OneMessageTo(t, to)
		if got.Subject != n.Subject {
			t.Errorf("Subject %q, want %q", got.Subject, n.Subject)
		}
		if got.From == nil || got.From.Address != "kustos@example.com" || got.From.Name != "Kustos" {
			t.Errorf("From %+v", got.From)
		}
		if len(got.To) != 1 || got.To[0].Address != to {
			t.Errorf("To %+v", got.To)
		}
		if got.MessageID != MessageID(n.ID) {
			t.Errorf("Message-ID %q, want %q", got.MessageID, MessageID(n.ID))
		}
		if ct := strings.Join(got.Headers["Content-Type"], " "); !strings.HasPrefix(ct, "multipart/alternative") {
			t.Errorf("Content-Type %q", ct)
		}
		if a := got.Headers["Auto-Submitted"]; len(a) != 1 || a[0] != "auto-generated" {
			t.Errorf("Auto-Submitted %q", a)
		}
		if !strings.Contains(got.Text, "**Environment web (namespace: team-a), type: Deployment, is stale and will be deleted in 3d**") {
			t.Errorf("text part:\n%s", got.Text)
		}
		if !strings.Contains(got.HTML, "<strong>Environment web (namespace: team-a), type: Deployment, is stale and will be deleted in 3d</strong>") {
			t.Errorf("HTML part:\n%s", got.HTML)
		}
		checkLinks(t, got.Text, got.HTML, n)
	})

	t.Run("the same notice twice: one Message-ID", func(t *testing.T) {
		t.Parallel()
		to := newOwner()
		m := plain(t)
		for range 2 {
			if err := m.Send(t.Context(), warning(to, "web")); err != nil {
				t.Fatal(err)
			}
		}
		ms := mp.MessagesTo(t, to, 2)
		if len(ms) != 2 || ms[0].MessageID != ms[1].MessageID || ms[0].MessageID != MessageID(warning(to, "web").ID) {
			t.Errorf("messages %q, want two with Message-ID %s", mailpittest.Summaries(ms), MessageID(warning(to, "web").ID))
		}
	})

	t.Run("a done message", func(t *testing.T) {
		t.Parallel()
		to := newOwner()
		n := done(to, "web")
		if err := plain(t).Send(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		got := mp.OneMessageTo(t, to)
		if got.Subject != "Deployment web expired and was removed" || !strings.Contains(got.Text, "is outdated and has been deleted**") ||
			!strings.Contains(got.HTML, "is outdated and has been deleted</strong>") {
			t.Errorf("subject %q, text:\n%s\nHTML:\n%s", got.Subject, got.Text, got.HTML)
		}
	})

	t.Run("a template directory replaces the built-in templates it has", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		// As a mounted ConfigMap looks: files are links into ..data.
		data := filepath.Join(dir, "..2026_11_24_09_00_00.1")
		if err := os.Mkdir(data, 0o750); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"subject.tmpl":             `[preview] {{(index .Notices 0).Target.Name}} expires`,
			"expiry.warning.txt.tmpl":  `Hi {{.Owner}}, {{.Target.Name}} goes in {{.In}}.{{range .Links}} {{.Label}}: {{.URL}}{{end}}`,
			"expiry.warning.html.tmpl": `<p>Hi {{.Owner}}, <b>{{.Target.Name}}</b> goes in {{.In}}.</p>{{range .Links}}<a href="{{.URL}}">{{.Label}}</a>{{end}}`,
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		for name := range files {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		to := newOwner()
		n := warning(to, "web")
		if err := plain(t, func(c *MailConfig) { c.Templates = dir }).Send(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		got := mp.OneMessageTo(t, to)
		if got.Subject != "[preview] web expires" {
			t.Errorf("Subject %q", got.Subject)
		}
		if !strings.Contains(got.Text, "Hi ana, web goes in 3d. Extend 3d: "+n.Links[0].URL) || !strings.Contains(got.Text, "Sent by Kustos.") {
			t.Errorf("text part (override inside the built-in layout):\n%s", got.Text)
		}
		if !strings.Contains(got.HTML, "<p>Hi ana, <b>web</b> goes in 3d.</p>") {
			t.Errorf("HTML part:\n%s", got.HTML)
		}
		if hs := hrefs(got.HTML); len(hs) != 2 || hs[0] != n.Links[0].URL {
			t.Errorf("links %q", hs)
		}
	})

	t.Run("batches", func(t *testing.T) {
		window := 200 * time.Millisecond
		t.Run("three notices to one owner within the window: one mail", func(t *testing.T) {
			t.Parallel()
			b := NewBatcher(plain(t), BatchOptions{Window: window})
			to := newOwner()
			ns := []lifecycle.Notice{warning(to, "a"), warning(to, "b"), done(to, "c")}
			for i, err := range sendAll(t.Context(), b, ns...) {
				if err != nil {
					t.Errorf("Send %d: %v", i, err)
				}
			}
			got := mp.OneMessageTo(t, to)
			if got.Subject != "Kustos: 3 notices about your environments" {
				t.Errorf("Subject %q", got.Subject)
			}
			if want := MessageID(ids(ns)...); got.MessageID != want {
				t.Errorf("Message-ID %q, want %q", got.MessageID, want)
			}
			for _, n := range ns {
				if !strings.Contains(got.Text, "**Environment "+n.Target.Name+" ") || !strings.Contains(got.HTML, "<strong>Environment "+n.Target.Name+" ") {
					t.Errorf("%s is not in the message:\n%s", n.Target.Name, got.Text)
				}
			}
			checkLinks(t, got.Text, got.HTML, ns...)

			// The same three again (a re-send after a crash): the same Message-ID.
			for i, err := range sendAll(t.Context(), b, ns[2], ns[0], ns[1]) {
				if err != nil {
					t.Errorf("Send %d again: %v", i, err)
				}
			}
			ms := mp.MessagesTo(t, to, 2)
			if len(ms) != 2 || ms[0].MessageID != ms[1].MessageID {
				t.Errorf("messages %q, want two with one Message-ID", mailpittest.Summaries(ms))
			}
		})
		t.Run("the owner's page: one link per owner, the longest-lived", func(t *testing.T) {
			t.Parallel()
			b := NewBatcher(plain(t), BatchOptions{Window: window})
			to := newOwner()
			page := func(n lifecycle.Notice, owner, token string, expires time.Time) lifecycle.Notice {
				n.Owner = owner
				n.OwnerPage = &lifecycle.NoticeLink{Label: "All your environments", URL: "https://kustos.example/environment/?token=" + token, Expires: expires}
				return n
			}
			ns := []lifecycle.Notice{
				page(warning(to, "a"), "ana", "SECRET-ana-short", mailNow.Add(24*time.Hour)),
				page(done(to, "b"), "ana", "SECRET-ana-long", mailNow.Add(48*time.Hour)),
				page(warning(to, "c"), "ana-team", "SECRET-team", mailNow.Add(24*time.Hour)),
			}
			for i, err := range sendAll(t.Context(), b, ns...) {
				if err != nil {
					t.Errorf("Send %d: %v", i, err)
				}
			}
			got := mp.OneMessageTo(t, to)
			for _, part := range []string{got.Text, got.HTML} {
				if strings.Count(part, "/environment/?token=") != 2 || !strings.Contains(part, "SECRET-ana-long") ||
					!strings.Contains(part, "SECRET-team") || strings.Contains(part, "SECRET-ana-short") || !strings.Contains(part, "All your environments") {
					t.Errorf("want ana's longest-lived page link and ana-team's, once each:\n%s", part)
				}
			}
			if !strings.Contains(got.Text, "All your environments: https://kustos.example/environment/?token=SECRET-ana-long") {
				t.Errorf("text part:\n%s", got.Text)
			}
			if hs := hrefs(got.HTML); !slices.Contains(hs, "https://kustos.example/environment/?token=SECRET-team") {
				t.Errorf("HTML links %q", hs)
			}
			// Without the extension server, no page link.
			other := newOwner()
			if err := plain(t).Send(t.Context(), warning(other, "d")); err != nil {
				t.Fatal(err)
			}
			if got := mp.OneMessageTo(t, other); strings.Contains(got.Text, "All your environments") || strings.Contains(got.HTML, "All your environments") {
				t.Errorf("a page link without a page:\n%s", got.Text)
			}
		})
		t.Run("two owners: two mails", func(t *testing.T) {
			t.Parallel()
			b := NewBatcher(plain(t), BatchOptions{Window: window})
			ana, bob := newOwner(), newOwner()
			for i, err := range sendAll(t.Context(), b, warning(ana, "a1"), warning(bob, "b1"), warning(ana, "a2")) {
				if err != nil {
					t.Errorf("Send %d: %v", i, err)
				}
			}
			if got := mp.OneMessageTo(t, ana); !strings.Contains(got.Text, "Environment a1 ") || !strings.Contains(got.Text, "Environment a2 ") || strings.Contains(got.Text, "b1") {
				t.Errorf("ana's message:\n%s", got.Text)
			}
			if got := mp.OneMessageTo(t, bob); got.Subject != warning(bob, "b1").Subject {
				t.Errorf("bob's message: %q", got.Subject)
			}
		})
		t.Run("a full batch goes before the window ends", func(t *testing.T) {
			t.Parallel()
			b := NewBatcher(plain(t), BatchOptions{Window: time.Hour, Max: 2})
			to := newOwner()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			for i, err := range sendAll(ctx, b, warning(to, "a"), warning(to, "b")) {
				if err != nil {
					t.Errorf("Send %d: %v", i, err)
				}
			}
			if got := mp.OneMessageTo(t, to); got.MessageID != MessageID(warning(to, "a").ID, warning(to, "b").ID) {
				t.Errorf("Message-ID %q", got.MessageID)
			}
		})
		t.Run("one caller's cancellation loses nobody else's notice", func(t *testing.T) {
			t.Parallel()
			b := NewBatcher(plain(t), BatchOptions{Window: window})
			to := newOwner()
			short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- b.Send(short, warning(to, "gone")) }()
			if err := b.Send(t.Context(), warning(to, "kept")); err != nil {
				t.Fatal(err)
			}
			if err := <-res; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the caller that gave up: %v", err)
			}
			got := mp.OneMessageTo(t, to)
			if !strings.Contains(got.Text, "Environment kept ") || strings.Contains(got.Text, "gone") {
				t.Errorf("message:\n%s", got.Text)
			}
		})
	})

	t.Run("mandatory STARTTLS: a server without it is an error", func(t *testing.T) {
		t.Parallel()
		err := plain(t, func(c *MailConfig) { c.TLS, c.Username, c.Password = TLSStartTLS, "", "" }).Send(t.Context(), warning(newOwner(), "web"))
		if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
			t.Errorf("Send: %v, want an error about STARTTLS", err)
		}
	})
}

// TestMailAuth: a Mailpit that knows one password (--smtp-auth-file) takes the message with it,
// read from a file again at each connection, and refuses a wrong one with an error that does not
// carry it.
func TestMailAuth(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("kustos:right-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mp := mailpittest.Start(t, "--smtp-auth-file", users, "--smtp-auth-allow-insecure")
	pwFile := filepath.Join(dir, "password")
	m := newTestMail(t, MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: TLSNone, Username: "kustos", PasswordFile: pwFile, From: "kustos@example.com", Timeout: 10 * time.Second})
	for _, tc := range []struct {
		name, password string
		ok             bool
	}{
		{"the right password, from the file", "right-SECRET\n", true},
		{"a wrong one (the Secret rotated, the server not yet)", "wrong-SECRET", false},
		{"the right one again", "right-SECRET", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(pwFile, []byte(tc.password), 0o600); err != nil {
				t.Fatal(err)
			}
			to := newOwner()
			err := m.Send(t.Context(), warning(to, "web"))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				mp.OneMessageTo(t, to)
				return
			}
			if err == nil || !strings.Contains(err.Error(), "535") {
				t.Fatalf("Send: %v, want the server's 535", err)
			}
			for _, secret := range []string{"SECRET", "token="} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error carries %q: %v", secret, err)
				}
			}
			if ms := mp.MessagesTo(t, to, 0); len(ms) != 0 {
				t.Errorf("delivered: %q", mailpittest.Summaries(ms))
			}
		})
	}
	// Without a username nothing is sent: this server requires a login.
	anon := newTestMail(t, MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: TLSNone, From: "kustos@example.com"})
	if err := anon.Send(t.Context(), warning(newOwner(), "web")); err == nil {
		t.Error("sent without a login to a server that requires one")
	}
}

// TestMailNoRecipient: a Notice without To (webhook-only setups) is skipped without a connection.
func TestMailNoRecipient(t *testing.T) {
	m := newTestMail(t, MailConfig{Host: "127.0.0.1", Port: mailpittest.FreePort(t), TLS: TLSNone}) // nothing listens there
	for _, to := range []string{"", "  "} {
		n := warning(to, "web")
		if err := m.Send(t.Context(), n); err != nil {
			t.Errorf("Send with To %q: %v", to, err)
		}
		if err := m.SendBatch(t.Context(), []lifecycle.Notice{n, n}); err != nil {
			t.Errorf("SendBatch with To %q: %v", to, err)
		}
	}
}

// TestMailTLS: STARTTLS and implicit TLS to a Mailpit with a certificate of its own CA.
func TestMailTLS(t *testing.T) {
	cert, key := selfSignedCert(t)
	for _, tc := range []struct {
		name    string
		mode    TLSMode
		flag    string
		trusted bool
		want    string // error substring; "" delivered
	}{
		{"starttls", TLSStartTLS, "--smtp-require-starttls", true, ""},
		{"implicit tls", TLSImplicit, "--smtp-require-tls", true, ""},
		{"starttls to an untrusted certificate", TLSStartTLS, "--smtp-require-starttls", false, "certificate"},
		{"implicit tls to an untrusted certificate", TLSImplicit, "--smtp-require-tls", false, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := mailpittest.Start(t, "--smtp-auth-accept-any", "--smtp-tls-cert", cert, "--smtp-tls-key", key, tc.flag)
			cfg := MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: tc.mode, Username: "kustos", Password: "hunter2-SECRET", From: "kustos@example.com", Timeout: 10 * time.Second}
			if tc.trusted {
				cfg.CAFile = cert
			}
			to := newOwner()
			n := warning(to, "web")
			err := newTestMail(t, cfg).Send(t.Context(), n)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Send: %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := mp.OneMessageTo(t, to)
			if got.MessageID != MessageID(n.ID) {
				t.Errorf("Message-ID %q", got.MessageID)
			}
			checkLinks(t, got.Text, got.HTML, n)
		})
	}
}

// TestMailServerDown: a server that is not there fails the send, directly and through a batch,
// with an error that names the server but carries neither the password nor a link.
func TestMailServerDown(t *testing.T) {
	mp := mailpittest.Start(t, mailpittest.AcceptAny...)
	mp.Stop()
	m := newTestMail(t, MailConfig{Host: "127.0.0.1", Port: mp.Port, TLS: TLSNone, Username: "kustos", Password: "hunter2-SECRET", From: "kustos@example.com", Timeout: 5 * time.Second})
	to := newOwner()
	direct := m.Send(t.Context(), warning(to, "web"))
	batched := sendAll(t.Context(), NewBatcher(m, BatchOptions{Window: 100 * time.Millisecond}), warning(to, "a"), warning(to, "b"))
	for _, tc := range []struct {
		name string
		err  error
	}{{"Send", direct}, {"batch, first caller", batched[0]}, {"batch, second caller", batched[1]}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			msg := tc.err.Error()
			if !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, to) {
				t.Errorf("the error does not say where: %v", msg)
			}
			for _, secret := range []string{"hunter2", "SECRET", "token=", "kustos.example"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error carries %q: %v", secret, msg)
				}
			}
		})
	}
}
