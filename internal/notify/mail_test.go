package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// mailNow is the clock of every Mail in these tests: warnings' At is 3 days later.
var mailNow = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

var ownerSeq atomic.Int64

// newOwner is an address no other test sends to.
func newOwner() string { return fmt.Sprintf("owner-%d@example.com", ownerSeq.Add(1)) }

// warning is an expiry.warning notice to `to` about Deployment team-a/name, worded as the expiry
// detector words it, with two extension links.
func warning(to, name string) lifecycle.Notice {
	target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: name}
	deadline, at := mailNow.Add(71*time.Hour), mailNow.Add(72*time.Hour)
	p := expiry.Policy{Owner: "ana", OwnerAddress: to, Deadline: deadline, From: `kustos.io/ttl="3d"`, Action: expiry.ActionDelete}
	return lifecycle.Notice{
		ID: "expiry-warning|" + name + "|" + deadline.Format(time.RFC3339), Kind: expiry.NoticeWarning, To: to, Owner: "ana",
		Subject: "Deployment " + name + " expires at " + deadline.Format(time.RFC3339),
		Text:    expiry.WarningMessage(target, p, deadline, at), Target: target, Deadline: deadline, At: at,
		Links: []lifecycle.NoticeLink{
			{Label: "Extend 3d", URL: "https://kustos.example/extend?d=3d&token=SECRET-" + name + "-3d"},
			{Label: "Extend 7d", URL: "https://kustos.example/extend?d=7d&token=SECRET-" + name + "-7d"},
		},
	}
}

// done is the expiry.done notice about the same Deployment.
func done(to, name string) lifecycle.Notice {
	target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: name}
	deadline := mailNow.Add(-time.Hour)
	p := expiry.Policy{Owner: "ana", OwnerAddress: to, Deadline: deadline, Action: expiry.ActionDelete}
	return lifecycle.Notice{
		ID: "expiry-done|" + name + "|" + deadline.Format(time.RFC3339), Kind: expiry.NoticeDone, To: to, Owner: "ana",
		Subject: "Deployment " + name + " expired and was removed",
		Text:    expiry.DoneMessage(target, p, deadline, expiry.ActionDelete), Target: target, Deadline: deadline, At: mailNow,
	}
}

// inactivityAlert is the first inactivity.alert about Deployment lab/name, worded as the
// inactivity detector words it: alerts 8 hours apart, the next at +8h, the pause at +24h.
func inactivityAlert(to, name string) lifecycle.Notice {
	target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "lab", Name: name}
	idle, pauseAt := mailNow.Add(-7*24*time.Hour), mailNow.Add(24*time.Hour)
	p := inactivity.Policy{Timeout: 7 * 24 * time.Hour, MaxAlerts: 3, Action: inactivity.ActionPause, From: `kustos.io/inactivity-timeout="7d"`, Owner: "ana", OwnerAddress: to}
	d := inactivity.Verdict{Alert: true, IdleSince: idle, At: mailNow.Add(8 * time.Hour), ActAt: pauseAt, State: inactivity.State{AlertsSent: 1}}
	f := inactivity.Findings(lifecycle.KeyFor(inactivity.DetectorName, target), target, p, activity.Activity{}, d, mailNow)
	return *f.Findings[0].Notice
}

func newTestMail(t *testing.T, cfg MailConfig) *Mail {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.From == "" {
		cfg.From = "Kustos <kustos@example.com>"
	}
	m, err := NewMail(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return mailNow }
	return m
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// hrefs are the link targets of an HTML part, unescaped.
func hrefs(h string) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(h, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// checkLinks: the text part has each link as "- [Label](URL)", the HTML part as an anchor.
func checkLinks(t *testing.T, text, htmlPart string, ns ...lifecycle.Notice) {
	t.Helper()
	got := hrefs(htmlPart)
	for _, n := range ns {
		for _, l := range n.Links {
			if !strings.Contains(text, "- ["+l.Label+"]("+l.URL+")") {
				t.Errorf("the text part lacks %s's link %q:\n%s", n.Target.Name, l.URL, text)
			}
			found := false
			for _, h := range got {
				found = found || h == l.URL
			}
			if !found {
				t.Errorf("the HTML part lacks %s's link %q; it has %q", n.Target.Name, l.URL, got)
			}
		}
	}
}

func TestMailRender(t *testing.T) {
	m := newTestMail(t, MailConfig{TLS: TLSNone})
	paused := warning("ana@example.com", "paused")
	paused.Text = expiry.WarningMessage(paused.Target, expiry.Policy{Owner: "ana", From: "x", Action: expiry.ActionPause}, paused.Deadline, paused.At)
	pausedDone := done("ana@example.com", "paused")
	pausedDone.Text = expiry.DoneMessage(pausedDone.Target, expiry.Policy{Owner: "ana"}, pausedDone.Deadline, expiry.ActionPause)
	namespace := warning("ana@example.com", "preview-42")
	namespace.Target = lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "preview-42"}
	other := lifecycle.Notice{ID: "quota|x", Kind: "quota.hint", To: "ana@example.com", Subject: "Quota of team-a is nearly used up",
		Text: "team-a uses 95% of its CPU quota.", Links: []lifecycle.NoticeLink{{Label: "Raise it", URL: "https://kustos.example/q?token=Q"}}}
	hostile := warning("ana@example.com", "hostile")
	hostile.Links = []lifecycle.NoticeLink{{Label: "<script>alert(1)</script>", URL: "javascript:alert(1)"}}

	for _, tc := range []struct {
		name        string
		ns          []lifecycle.Notice
		subject     string
		text, html  []string // substrings
		notText     []string
		notHTML     []string
		linksOf     []lifecycle.Notice
		htmlNoLinks bool
	}{
		{name: "a warning reads like env-cleaner's", ns: []lifecycle.Notice{warning("ana@example.com", "web")},
			subject: "Deployment web expires at 2026-11-27T08:00:00Z",
			text: []string{"**Environment web (namespace: team-a), type: Deployment, is stale and will be deleted in 3d**\n\nUse one of the following links to extend your environment:\n- [Extend 3d](",
				"Deployment.apps/team-a/web expires at 2026-11-27T08:00:00Z"},
			html:    []string{"<strong>Environment web (namespace: team-a), type: Deployment, is stale and will be deleted in 3d</strong>", "<li><a href="},
			notText: []string{"notices about your environments"},
			linksOf: []lifecycle.Notice{warning("ana@example.com", "web")}},
		{name: "a done message", ns: []lifecycle.Notice{done("ana@example.com", "web")},
			subject: "Deployment web expired and was removed",
			text:    []string{"**Environment web (namespace: team-a), type: Deployment, is outdated and has been deleted**"},
			html:    []string{"<strong>Environment web (namespace: team-a), type: Deployment, is outdated and has been deleted</strong>"},
			notText: []string{"Use one of the following links"}, htmlNoLinks: true},
		{name: "a pause is worded as one", ns: []lifecycle.Notice{paused, pausedDone},
			text: []string{"is stale and will be paused (scaled to zero) in 3d**", "is outdated and has been paused (scaled to zero)**"}},
		{name: "a cluster-scoped environment has no namespace", ns: []lifecycle.Notice{namespace},
			text: []string{"**Environment preview-42, type: Namespace, is stale"}},
		{name: "a warning without links does not offer any", ns: []lifecycle.Notice{func() lifecycle.Notice { n := warning("a@example.com", "w"); n.Links = nil; return n }()},
			notText: []string{"Use one of the following links"}, htmlNoLinks: true},
		{name: "an inactivity alert", ns: []lifecycle.Notice{inactivityAlert("ana@example.com", "vm-1")},
			subject: "Deployment vm-1 has been idle since 2026-11-17T09:00:00Z (alert 1 of 3)",
			text: []string{"**Environment vm-1 (namespace: lab), type: Deployment, has not been used for a while and will be stopped on 2026-11-25 09:00 UTC unless it is used before then**",
				"alert 1 of 3: it will be paused at 2026-11-25T09:00:00Z unless it is used before then"},
			html:        []string{"<strong>Environment vm-1 (namespace: lab), type: Deployment, has not been used for a while and will be stopped on 2026-11-25 09:00 UTC"},
			notText:     []string{"deleted"},
			htmlNoLinks: true},
		{name: "an inactivity alert with keep links offers them", ns: []lifecycle.Notice{func() lifecycle.Notice {
			n := inactivityAlert("ana@example.com", "vm-1")
			n.Links = []lifecycle.NoticeLink{{Label: "Keep for 1d", URL: "https://kustos.example/keep?token=K"}}
			return n
		}()},
			text: []string{"Use one of the following links to keep your environment (it is not stopped before the end):\n- [Keep for 1d](https://kustos.example/keep?token=K)"},
			html: []string{`<li><a href="https://kustos.example/keep?token=K">Keep for 1d</a></li>`}},
		{name: "an inactivity pause offers its resume link", ns: []lifecycle.Notice{{ID: "inactivity-paused|vm-1", Kind: inactivity.NoticePaused, To: "ana@example.com", Owner: "ana",
			Subject: "Deployment vm-1 is paused: it was not used", Text: "lab/vm-1 is paused (scaled to zero). It can be resumed as it was (spec.replicas: 3).",
			Target: lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "lab", Name: "vm-1"}, At: mailNow,
			Links: []lifecycle.NoticeLink{{Label: "Resume", URL: "https://kustos.example/resume?token=R"}}}},
			text: []string{"**Environment vm-1 (namespace: lab), type: Deployment, was not used for a while and has been paused**",
				"Use the following link to resume your environment as it was before the pause:\n- [Resume](https://kustos.example/resume?token=R)", "spec.replicas: 3"},
			html: []string{`<li><a href="https://kustos.example/resume?token=R">Resume</a></li>`}},
		{name: "another kind: the generic template", ns: []lifecycle.Notice{other}, subject: "Quota of team-a is nearly used up",
			text: []string{"**Quota of team-a is nearly used up**\n\nteam-a uses 95% of its CPU quota.", "- [Raise it](https://kustos.example/q?token=Q)"},
			html: []string{"<strong>Quota of team-a is nearly used up</strong>"}, linksOf: []lifecycle.Notice{other}},
		{name: "a batch lists every notice, soonest first", ns: []lifecycle.Notice{warning("a@example.com", "b"), done("a@example.com", "a")},
			subject: "Kustos: 2 notices about your environments",
			text:    []string{"Kustos has 2 notices about your environments.\n\n**Environment a (namespace: team-a), type: Deployment, is outdated", "----------\n\n**Environment b"},
			html:    []string{"<p>Kustos has 2 notices about your environments.</p>", "<hr"},
			linksOf: []lifecycle.Notice{warning("a@example.com", "b")}},
		{name: "HTML escapes the values and refuses a javascript: link", ns: []lifecycle.Notice{hostile},
			html:    []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `href="#ZgotmplZ"`},
			notHTML: []string{"<script>", "javascript:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subject, text, htmlPart, err := m.tmpl.render(sortNotices(tc.ns), mailNow)
			if err != nil {
				t.Fatal(err)
			}
			if tc.subject != "" && subject != tc.subject {
				t.Errorf("subject %q, want %q", subject, tc.subject)
			}
			for _, s := range tc.text {
				if !strings.Contains(text, s) {
					t.Errorf("the text part lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tc.notText {
				if strings.Contains(text, s) {
					t.Errorf("the text part has %q:\n%s", s, text)
				}
			}
			for _, s := range tc.html {
				if !strings.Contains(htmlPart, s) {
					t.Errorf("the HTML part lacks %q:\n%s", s, htmlPart)
				}
			}
			for _, s := range tc.notHTML {
				if strings.Contains(htmlPart, s) {
					t.Errorf("the HTML part has %q:\n%s", s, htmlPart)
				}
			}
			checkLinks(t, text, htmlPart, tc.linksOf...)
			if tc.htmlNoLinks && len(hrefs(htmlPart)) > 0 {
				t.Errorf("the HTML part has links: %q", hrefs(htmlPart))
			}
		})
	}
}

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{72 * time.Hour, "3d"},
		{72*time.Hour + 59*time.Second, "3d"},
		{30 * time.Hour, "1d 6h"},
		{24*time.Hour + 5*time.Minute, "1d"},
		{2*time.Hour + 5*time.Minute, "2h 5m"},
		{45 * time.Minute, "45m"},
		{30 * time.Second, "less than a minute"},
		{0, "no time"},
		{-time.Hour, "no time"},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			if got := until(mailNow, mailNow.Add(tc.d)); got != tc.want {
				t.Errorf("until(+%s) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
	if got := until(mailNow, time.Time{}); got != "" {
		t.Errorf("until(zero) = %q", got)
	}
}

func TestMessageID(t *testing.T) {
	one := MessageID("expiry-warning|k|2026")
	if !regexp.MustCompile(`^[0-9a-f]{32}@kustos$`).MatchString(one) {
		t.Fatalf("MessageID = %q", one)
	}
	for _, tc := range []struct {
		name string
		a, b []string
		same bool
	}{
		{"one ID, twice", []string{"x"}, []string{"x"}, true},
		{"order does not matter", []string{"a", "b", "c"}, []string{"c", "a", "b"}, true},
		{"a repeated ID does not matter", []string{"a", "b"}, []string{"a", "b", "a"}, true},
		{"one ID more", []string{"a", "b"}, []string{"a", "b", "c"}, false},
		{"the separator is not part of an ID", []string{"a\x00b"}, []string{"a", "b"}, true}, // NUL never is in an ID
		{"different IDs", []string{"a"}, []string{"b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MessageID(tc.a...) == MessageID(tc.b...); got != tc.same {
				t.Errorf("MessageID(%q) == MessageID(%q) is %v", tc.a, tc.b, got)
			}
		})
	}
}

func TestNewMailRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		d := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+strings.ReplaceAll(name, "/", "_"))
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := MailConfig{Host: "smtp.example.com", From: "kustos@example.com"}
	for _, tc := range []struct {
		name string
		edit func(*MailConfig)
		want string
	}{
		{"no host", func(c *MailConfig) { c.Host = "" }, "no SMTP host"},
		{"no sender", func(c *MailConfig) { c.From = "" }, "no sender"},
		{"a sender that is no address", func(c *MailConfig) { c.From = "kustos" }, "not an email address"},
		{"an unknown TLS mode", func(c *MailConfig) { c.TLS = "ssl" }, `TLS mode "ssl"`},
		{"a port out of range", func(c *MailConfig) { c.Port = 70000 }, "not a TCP port"},
		{"a password without a username", func(c *MailConfig) { c.Password = "pw" }, "without a username"},
		{"a password and a password file", func(c *MailConfig) { c.Username, c.Password, c.PasswordFile = "u", "pw", "/f" }, "both"},
		{"no TLS with a password to a remote host", func(c *MailConfig) { c.TLS, c.Username, c.Password = TLSNone, "u", "pw" }, "in the clear"},
		{"a CA file without certificates", func(c *MailConfig) { c.CAFile = notPEM }, "no PEM certificate"},
		{"a missing template directory", func(c *MailConfig) { c.Templates = filepath.Join(dir, "nope") }, "mail templates"},
		{"a template that does not parse", func(c *MailConfig) { c.Templates = write("expiry.warning.txt.tmpl", "{{.Target.Name") }, "expiry.warning.txt.tmpl"},
		{"a template naming a field that does not exist", func(c *MailConfig) { c.Templates = write("expiry.done.html.tmpl", "{{.Nope}}") }, "expiry.done.html.tmpl"},
		{"a kind with a text template only", func(c *MailConfig) { c.Templates = write("quota.hint.txt.tmpl", "{{.Text}}") }, "no quota.hint.html.tmpl"},
		{"a subject that renders empty", func(c *MailConfig) { c.Templates = write("subject.tmpl", "{{/* nothing */}}") }, "empty subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := NewMail(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewMail: %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error carries the password: %v", err)
			}
		})
	}
	// The loopback exception: a relay on the same host may take a password without TLS.
	if _, err := NewMail(MailConfig{Host: "127.0.0.1", TLS: TLSNone, Username: "u", Password: "pw", From: "k@example.com"}); err != nil {
		t.Errorf("none with a password to 127.0.0.1: %v", err)
	}
}

func TestMailConfigHidesPassword(t *testing.T) {
	cfg := MailConfig{Host: "smtp.example.com", Username: "kustos", Password: "hunter2-SECRET", From: "k@example.com"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("mail", "config", cfg)
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMail(t, MailConfig{Host: "smtp.example.com", Username: "kustos", Password: "hunter2-SECRET", From: "k@example.com"})
	for _, tc := range []struct{ name, s string }{
		{"%v", fmt.Sprintf("config %v", cfg)}, {"%+v", fmt.Sprintf("config %+v", cfg)}, {"%#v", fmt.Sprintf("config %#v", cfg)}, {"%s", fmt.Sprintf("config %s", &cfg)},
		{"slog", logged.String()}, {"json", string(j)}, {"Mail", fmt.Sprintf("notifier %v", m)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.s, "hunter2") {
				t.Errorf("%s shows the password: %s", tc.name, tc.s)
			}
			if !strings.Contains(tc.s, "smtp.example.com") && tc.name != "json" {
				t.Errorf("%s does not show the host: %s", tc.name, tc.s)
			}
		})
	}
}

func TestRedactErr(t *testing.T) {
	base := errors.New("550 rejected https://k.example/x?token=T for hunter2")
	got := redactErr(base, []string{"hunter2", "https://k.example/x?token=T", ""})
	if strings.Contains(got.Error(), "hunter2") || strings.Contains(got.Error(), "token=T") || !strings.Contains(got.Error(), "550 rejected (redacted)") {
		t.Errorf("redacted: %v", got)
	}
	if errors.Unwrap(got) != nil {
		t.Errorf("a redacted error unwraps to the original")
	}
	plain := fmt.Errorf("dial: %w", context.DeadlineExceeded)
	if got := redactErr(plain, []string{"hunter2"}); !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("an error without secrets lost its chain: %v", got)
	}
}

// fakeSender records the batches it is given and answers err.
type fakeSender struct {
	mu      sync.Mutex
	batches [][]lifecycle.Notice
	err     error
	delay   time.Duration
}

func (f *fakeSender) SendBatch(ctx context.Context, ns []lifecycle.Notice) error {
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, ns)
	return f.err
}

func (f *fakeSender) got() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, b := range f.batches {
		out = append(out, ids(b))
	}
	return out
}

// sendAll calls Send for each notice at once and returns their results, in order.
func sendAll(ctx context.Context, s interface {
	Send(context.Context, lifecycle.Notice) error
}, ns ...lifecycle.Notice) []error {
	errs := make([]error, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Go(func() { errs[i] = s.Send(ctx, n) })
	}
	wg.Wait()
	return errs
}

func TestBatcher(t *testing.T) {
	t.Run("notices to one recipient within the window: one batch; every Send returns its result", func(t *testing.T) {
		f := &fakeSender{err: errors.New("450 try later")}
		b := NewBatcher(f, BatchOptions{Window: 200 * time.Millisecond})
		start := time.Now()
		errs := sendAll(t.Context(), b, warning("a@example.com", "x"), warning("A@Example.com ", "y"), warning("a@example.com", "x"), warning("b@example.com", "z"))
		if took := time.Since(start); took < 200*time.Millisecond {
			t.Errorf("returned after %s, before the window closed", took)
		}
		for i, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "450") {
				t.Errorf("Send %d: %v, want the batch's error", i, err)
			}
		}
		got := f.got()
		if len(got) != 2 || len(got[0])+len(got[1]) != 3 {
			t.Errorf("batches %q, want x and y together (once each), z alone", got)
		}
	})
	t.Run("as a manager's Runnable: a batch still gathering goes when the manager stops", func(t *testing.T) {
		f := &fakeSender{}
		b := NewBatcher(f, BatchOptions{Window: time.Hour})
		if b.NeedLeaderElection() {
			t.Error("the batcher waits for leadership; every replica's notices need it")
		}
		run, stop := context.WithCancel(t.Context())
		stopped := make(chan error, 1)
		go func() { stopped <- b.Start(run) }()
		sent := make(chan error, 1)
		go func() { sent <- b.Send(t.Context(), warning("a@example.com", "x")) }()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			b.mu.Lock()
			open := len(b.open)
			b.mu.Unlock()
			if open > 0 {
				break
			}
		}
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("Start = %v", err)
		}
		if err := <-sent; err != nil {
			t.Errorf("Send = %v, want the batch sent at the stop", err)
		}
		if got := f.got(); len(got) != 1 {
			t.Errorf("batches %q, want the one gathering", got)
		}
		if err := b.Send(t.Context(), warning("a@example.com", "y")); !errors.Is(err, ErrBatcherClosed) {
			t.Errorf("Send after the stop = %v, want ErrBatcherClosed", err)
		}
	})
	t.Run("a full batch goes at once", func(t *testing.T) {
		f := &fakeSender{}
		b := NewBatcher(f, BatchOptions{Window: time.Hour, Max: 2})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for i, err := range sendAll(ctx, b, warning("a@example.com", "x"), warning("a@example.com", "y")) {
			if err != nil {
				t.Errorf("Send %d: %v", i, err)
			}
		}
		if got := f.got(); len(got) != 1 || len(got[0]) != 2 {
			t.Errorf("batches %q", got)
		}
	})
	t.Run("a caller that gives up takes its notice out; the others' still go", func(t *testing.T) {
		f := &fakeSender{}
		b := NewBatcher(f, BatchOptions{Window: 300 * time.Millisecond})
		short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		var errGone, errKept error
		var wg sync.WaitGroup
		wg.Go(func() { errGone = b.Send(short, warning("a@example.com", "gone")) })
		wg.Go(func() { errKept = b.Send(t.Context(), warning("a@example.com", "kept")) })
		wg.Wait()
		if !errors.Is(errGone, context.DeadlineExceeded) {
			t.Errorf("the caller that gave up: %v", errGone)
		}
		if errKept != nil {
			t.Errorf("the caller that waited: %v", errKept)
		}
		if got := f.got(); len(got) != 1 || len(got[0]) != 1 || !strings.Contains(got[0][0], "kept") {
			t.Errorf("batches %q, want only kept", got)
		}
	})
	t.Run("a batch everybody gave up on is never sent", func(t *testing.T) {
		f := &fakeSender{}
		b := NewBatcher(f, BatchOptions{Window: 100 * time.Millisecond})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := b.Send(ctx, warning("a@example.com", "x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Send: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		if got := f.got(); len(got) != 0 {
			t.Errorf("batches %q", got)
		}
	})
	t.Run("no recipient: nil at once", func(t *testing.T) {
		f := &fakeSender{}
		b := NewBatcher(f, BatchOptions{Window: time.Hour})
		if err := b.Send(t.Context(), warning(" ", "x")); err != nil {
			t.Errorf("Send: %v", err)
		}
		if got := f.got(); len(got) != 0 {
			t.Errorf("batches %q", got)
		}
	})
	t.Run("Close sends what waits, then refuses", func(t *testing.T) {
		f := &fakeSender{delay: 50 * time.Millisecond}
		b := NewBatcher(f, BatchOptions{Window: time.Hour})
		res := make(chan error, 1)
		go func() { res <- b.Send(t.Context(), warning("a@example.com", "x")) }()
		time.Sleep(50 * time.Millisecond)
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := f.got(); len(got) != 1 {
			t.Errorf("batches after Close %q", got)
		}
		if err := <-res; err != nil {
			t.Errorf("Send: %v", err)
		}
		if err := b.Send(t.Context(), warning("a@example.com", "y")); !errors.Is(err, ErrBatcherClosed) {
			t.Errorf("Send after Close: %v", err)
		}
	})
}
