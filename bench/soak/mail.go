package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// smtpProxy stands between Kustos and Mailpit, so that the mail server can go down and come
// back on the same address without losing what it holds: while down it drops every connection,
// open or new, before the SMTP greeting.
type smtpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newSMTPProxy(target string) (*smtpProxy, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &smtpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

func (p *smtpProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *smtpProxy) close() { _ = p.ln.Close() }

func (p *smtpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *smtpProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.down {
		return false
	}
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *smtpProxy) forward(c net.Conn) {
	defer c.Close()
	if !p.track(c, true) {
		return
	}
	defer p.track(c, false)
	u, err := (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer u.Close()
	if !p.track(u, true) {
		return
	}
	defer p.track(u, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// setDown takes the mail server away (every connection cut) or brings it back.
func (p *smtpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// mailbox reads what Mailpit received through its HTTP API.
type mailbox struct {
	api string
	hc  *http.Client
}

func (m mailbox) get(ctx context.Context, path string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.api+path, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// list is every message Mailpit holds.
func (m mailbox) list(ctx context.Context) ([]Mail, error) {
	var out struct {
		Messages []struct {
			ID, MessageID, Subject string
			To                     []struct{ Address string }
			Created                time.Time
		} `json:"messages"`
	}
	if err := m.get(ctx, "/api/v1/messages?limit=100000", &out); err != nil {
		return nil, err
	}
	ms := make([]Mail, 0, len(out.Messages))
	for _, s := range out.Messages {
		to := ""
		if len(s.To) > 0 {
			to = s.To[0].Address
		}
		ms = append(ms, Mail{ID: s.ID, MessageID: s.MessageID, To: to, Subject: s.Subject, Created: s.Created})
	}
	return ms, nil
}

// text is the plain-text part of message id.
func (m mailbox) text(ctx context.Context, id string) (string, error) {
	var msg struct{ Text string }
	err := m.get(ctx, "/api/v1/message/"+id, &msg)
	return msg.Text, err
}

// extendLinks are the extension links in a warning's text part ("- [Extend by 20s](URL)").
var extendLink = regexp.MustCompile(`\]\((https?://[^)\s]+/extend\?[^)\s]+)\)`)

func extendLinks(text string) []string {
	var out []string
	for _, m := range extendLink.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}
