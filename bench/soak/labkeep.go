package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// labKeep is --inactivity-keep-periods: one keep, short, so that a kept lab still idle at its
// end is alerted and paused within the run.
const labKeep = 45 * time.Second

var keepLink = regexp.MustCompile(`\]\((https?://[^)\s]+/keep\?[^)\s]+)\)`)

// keepLinks are the keep links in an alert's text part ("- [Keep for 45s](URL)").
func keepLinks(text string) []string {
	var out []string
	for _, m := range keepLink.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

// tryKeep is the owner of an idle lab keeping it through the newest alert about it that arrived
// since its last use: GET of the link, then POST of the page's form, as a browser. false: no
// such alert (nothing was done).
func (l *labs) tryKeep(ctx context.Context, e *labEnv) bool {
	if l.mail == nil {
		return false
	}
	since, ok := l.check.LabIdleSince(e.ns, e.name)
	if !ok {
		return false
	}
	ms, err := l.mail.list(ctx)
	if err != nil {
		return false
	}
	id := ""
	var newest time.Time
	for _, m := range ms {
		if strings.EqualFold(m.To, ownerOf(e.name)) && m.Created.After(since) && m.Created.After(newest) && !strings.Contains(m.Subject, "paused") {
			id, newest = m.ID, m.Created
		}
	}
	if id == "" {
		return false
	}
	text, err := l.mail.text(ctx, id)
	if err != nil {
		return false
	}
	links := keepLinks(text)
	if len(links) == 0 {
		return false
	}
	link := links[0]
	if code, _, err := l.owner.retrying(ctx, http.MethodGet, link); err != nil || code != http.StatusOK {
		l.note("the owner's GET of lab %s/%s's keep link: %d %v", e.ns, e.name, code, err)
		l.count("lab-kept-refused")
		return true
	}
	at := time.Now()
	code, _, err := l.owner.retrying(ctx, http.MethodPost, link)
	if err != nil || code != http.StatusOK {
		// Refused (paused meanwhile, used since the alert, or the link used): nothing kept.
		l.note("the owner's POST of lab %s/%s's keep link: %d %v", e.ns, e.name, code, err)
		l.count("lab-kept-refused")
		return true
	}
	l.check.LabKept(e.ns, e.name, at, at.Add(labKeep))
	l.count("lab-kept")
	l.note("lab %s/%s kept by its owner for %s", e.ns, e.name, labKeep)
	return true
}
