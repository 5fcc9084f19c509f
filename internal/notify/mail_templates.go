package notify

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/template"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The built-in mail templates. A directory given as MailConfig.Templates (a ConfigMap mounted as
// files) replaces any of them by file name; the ones it lacks stay built in:
//
//	subject.tmpl                  the Subject line (text/template, data MailData)
//	mail.txt.tmpl, mail.html.tmpl the whole text and HTML part (data MailData; each notice's own
//	                              part is in MailNotice.Body and MailNotice.HTML)
//	KIND.txt.tmpl, KIND.html.tmpl one notice of that Kind (data MailNotice): expiry.warning,
//	                              expiry.done, inactivity.alert, inactivity.paused; a directory may add templates
//	                              for other kinds
//	notice.txt.tmpl, notice.html.tmpl  a notice of a kind without templates of its own
//
// *.txt.tmpl and subject.tmpl are text/template, *.html.tmpl html/template (which escapes the
// notice's values and refuses URLs that are not http(s), mailto or relative). Every template is
// parsed and tried on a sample when the Mail is made, so a broken one stops the start, not a send.
//
//go:embed templates/*.tmpl
var builtinTemplates embed.FS

const (
	subjectTemplate  = "subject.tmpl"
	layoutName       = "mail"
	fallbackKind     = "notice"
	textSuffix       = ".txt.tmpl"
	htmlSuffix       = ".html.tmpl"
	maxTemplateBytes = 256 << 10
)

// MailData is what subject.tmpl, mail.txt.tmpl and mail.html.tmpl are executed with: the notices
// of one message (one, or a batch to one recipient, soonest action first).
type MailData struct {
	// To is the recipient's address.
	To string
	// Subject is the rendered subject.tmpl (empty while subject.tmpl itself is executed).
	Subject string
	Notices []MailNotice
	// OwnerPages are the links to the owners' pages (.Label, .URL, .Expires), one per owner the
	// notices name (usually one: a recipient is one owner), the longest-lived of the notices'
	// own; none without the extension server.
	OwnerPages []lifecycle.NoticeLink
}

// ownerPages is one owner's page link per owner of ns, the latest-expiring, in the order the
// owners first appear.
func ownerPages(ns []lifecycle.Notice) []lifecycle.NoticeLink {
	var owners []string
	best := map[string]lifecycle.NoticeLink{}
	for _, n := range ns {
		if n.OwnerPage == nil {
			continue
		}
		cur, seen := best[n.Owner]
		if !seen {
			owners = append(owners, n.Owner)
		}
		if !seen || n.OwnerPage.Expires.After(cur.Expires) {
			best[n.Owner] = *n.OwnerPage
		}
	}
	out := make([]lifecycle.NoticeLink, 0, len(owners))
	for _, o := range owners {
		out = append(out, best[o])
	}
	return out
}

// MailNotice is one notice as the templates see it: the lifecycle.Notice's fields (.ID, .Kind,
// .To, .Owner, .Subject, .Text, .Target.Kind/.Namespace/.Name, .Deadline, .At, .Links with
// .Label and .URL, and .OwnerPage, which the layouts show once per owner as MailData.OwnerPages)
// and a few derived for the wording.
type MailNotice struct {
	lifecycle.Notice
	// Action is what happens (happened) to the environment: "deleted", or "paused (scaled to
	// zero)" when the notice's text says so.
	Action string
	// In is how long until At, when the message is rendered, as "3d", "1d 6h", "45m", "less
	// than a minute" or "no time" (At has passed; "" without At).
	In string
	// Body and HTML are this notice rendered by its kind's text and HTML template, for the
	// mail.*.tmpl layouts (empty while the kind's own template is executed).
	Body string
	HTML htmltemplate.HTML
}

// templateFuncs are the functions the templates may call besides the built-in ones.
var templateFuncs = map[string]any{
	// utc formats a time as "2006-01-02 15:04 UTC".
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
}

// mailTemplates are the parsed templates.
type mailTemplates struct {
	subject *template.Template
	text    map[string]*template.Template     // by kind; layoutName for the layout
	html    map[string]*htmltemplate.Template // by kind; layoutName for the layout
}

// loadTemplates parses the built-in templates, each replaced by the file of the same name in dir
// when dir is set and has one, and tries them on a sample.
func loadTemplates(dir string) (*mailTemplates, error) {
	sources := map[string]string{}
	builtin, err := fs.Sub(builtinTemplates, "templates")
	if err != nil {
		return nil, err
	}
	if err := readTemplates(builtin, sources); err != nil {
		return nil, err
	}
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("mail templates: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("mail templates: %s is not a directory", dir)
		}
		if err := readTemplates(os.DirFS(dir), sources); err != nil {
			return nil, fmt.Errorf("mail templates in %s: %w", dir, err)
		}
	}
	t := &mailTemplates{text: map[string]*template.Template{}, html: map[string]*htmltemplate.Template{}}
	for name, src := range sources {
		switch {
		case name == subjectTemplate:
			t.subject, err = template.New(name).Funcs(templateFuncs).Parse(src)
		case strings.HasSuffix(name, textSuffix):
			t.text[strings.TrimSuffix(name, textSuffix)], err = template.New(name).Funcs(templateFuncs).Parse(src)
		case strings.HasSuffix(name, htmlSuffix):
			t.html[strings.TrimSuffix(name, htmlSuffix)], err = htmltemplate.New(name).Funcs(templateFuncs).Parse(src)
		}
		if err != nil {
			return nil, fmt.Errorf("mail template %s: %w", name, err)
		}
	}
	for kind := range t.text {
		if _, ok := t.html[kind]; !ok {
			return nil, fmt.Errorf("mail template %s%s has no %s%s beside it", kind, textSuffix, kind, htmlSuffix)
		}
	}
	for kind := range t.html {
		if _, ok := t.text[kind]; !ok {
			return nil, fmt.Errorf("mail template %s%s has no %s%s beside it", kind, htmlSuffix, kind, textSuffix)
		}
	}
	if err := t.try(); err != nil {
		return nil, err
	}
	return t, nil
}

// readTemplates reads the template files of fsys into sources, by name: subject.tmpl,
// *.txt.tmpl, *.html.tmpl. Other files are ignored, and so are the "..data" links and
// "..2006_01_02…" directories of a mounted ConfigMap.
func readTemplates(fsys fs.FS, sources map[string]string) error {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || (name != subjectTemplate && !strings.HasSuffix(name, textSuffix) && !strings.HasSuffix(name, htmlSuffix)) {
			continue
		}
		f, err := fsys.Open(name)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
		_ = f.Close()
		if err != nil {
			return err
		}
		if len(b) > maxTemplateBytes {
			return fmt.Errorf("%s is larger than %d bytes", name, maxTemplateBytes)
		}
		sources[name] = string(b)
	}
	return nil
}

// try renders a sample of every kind with its links, so that an execution error (a field that
// does not exist) shows when the templates are loaded.
func (t *mailTemplates) try() error {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ns []lifecycle.Notice
	for kind := range t.text {
		if kind == layoutName {
			continue
		}
		ns = append(ns, lifecycle.Notice{ID: "sample|" + kind, Kind: kind, To: "owner@example.com", Owner: "owner",
			Subject: "Deployment preview expires", Text: "Deployment.apps/team/preview expires.",
			Target:   lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team", Name: "preview"},
			Deadline: now.Add(72 * time.Hour), At: now.Add(73 * time.Hour),
			Links:     []lifecycle.NoticeLink{{Label: "Extend 3d", URL: "https://kustos.example/extend?token=sample"}},
			OwnerPage: &lifecycle.NoticeLink{Label: "All your environments", URL: "https://kustos.example/environment/?token=sample", Expires: now.Add(240 * time.Hour)}})
	}
	// One message with every kind, and one with a single notice (the subject's other branch).
	if _, _, _, err := t.render(ns, now); err != nil {
		return err
	}
	_, _, _, err := t.render(ns[:1], now)
	return err
}

// render returns the subject, text part and HTML part of one message holding ns.
func (t *mailTemplates) render(ns []lifecycle.Notice, now time.Time) (subject, text, html string, err error) {
	data := MailData{To: strings.TrimSpace(ns[0].To), Notices: make([]MailNotice, len(ns)), OwnerPages: ownerPages(ns)}
	var buf bytes.Buffer
	for i, n := range ns {
		mn := MailNotice{Notice: n, Action: actionOf(n), In: until(now, n.At)}
		kind := n.Kind
		if _, ok := t.text[kind]; !ok || kind == layoutName {
			kind = fallbackKind
		}
		buf.Reset()
		if err := t.text[kind].Execute(&buf, mn); err != nil {
			return "", "", "", fmt.Errorf("mail template %s%s: %w", kind, textSuffix, err)
		}
		body := buf.String()
		buf.Reset()
		if err := t.html[kind].Execute(&buf, mn); err != nil {
			return "", "", "", fmt.Errorf("mail template %s%s: %w", kind, htmlSuffix, err)
		}
		mn.Body, mn.HTML = strings.TrimSpace(body), htmltemplate.HTML(strings.TrimSpace(buf.String())) //nolint:gosec // G203: the output of html/template, escaped there
		data.Notices[i] = mn
	}
	buf.Reset()
	if err := t.subject.Execute(&buf, data); err != nil {
		return "", "", "", fmt.Errorf("mail template %s: %w", subjectTemplate, err)
	}
	// A header is one line.
	data.Subject = strings.Join(strings.Fields(buf.String()), " ")
	if data.Subject == "" {
		return "", "", "", errors.New("mail template " + subjectTemplate + " rendered an empty subject")
	}
	buf.Reset()
	if err := t.text[layoutName].Execute(&buf, data); err != nil {
		return "", "", "", fmt.Errorf("mail template %s%s: %w", layoutName, textSuffix, err)
	}
	text = buf.String()
	buf.Reset()
	if err := t.html[layoutName].Execute(&buf, data); err != nil {
		return "", "", "", fmt.Errorf("mail template %s%s: %w", layoutName, htmlSuffix, err)
	}
	return data.Subject, text, buf.String(), nil
}

// actionOf says what happens to the environment. A Notice does not carry the action: the expiry
// detector's texts (expiry.WarningMessage, DoneMessage) say "paused (scaled to zero)" for a
// pause; everything else removes it.
func actionOf(n lifecycle.Notice) string {
	if strings.Contains(n.Text, "paused (scaled to zero)") || strings.HasSuffix(n.Subject, " was paused") {
		return "paused (scaled to zero)"
	}
	return "deleted"
}

// until renders at-now in at most two units, rounded down to the minute: "3d", "1d 6h", "2h 5m",
// "45m", "less than a minute"; "no time" once at has passed, "" without at.
func until(now, at time.Time) string {
	if at.IsZero() {
		return ""
	}
	d := at.Sub(now)
	if d <= 0 {
		return "no time"
	}
	if d < time.Minute {
		return "less than a minute"
	}
	mins := int64(d / time.Minute)
	days, hours, minutes := mins/(24*60), mins/60%24, mins%60
	var parts []string
	for _, p := range []struct {
		n    int64
		unit string
	}{{days, "d"}, {hours, "h"}, {minutes, "m"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d%s", p.n, p.unit))
		} else if len(parts) > 0 {
			break // "1d 0h 5m" says no more than "1d"
		}
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, " ")
}
