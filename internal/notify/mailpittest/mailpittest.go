// Package mailpittest runs a real Mailpit (bin/mailpit, built by `make testbin`) for tests of
// the mail notifier and the end-to-end tests: SMTP on a free loopback port, and its HTTP API to
// read what arrived.
package mailpittest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// TB is the part of testing.TB the server needs; make demo passes its own.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// mailpit is a real Mailpit (bin/mailpit, built by `make testbin`) on free loopback ports: SMTP
// at Port, its HTTP API at API.
type Server struct {
	Port int
	API  string

	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedBuffer
}

// Binary finds bin/mailpit the way internal/testenv finds the control plane: in
// $KUSTOS_TESTBIN, else <repo root>/bin. It fails, never skips, when it is missing.
func Binary(t TB) string {
	t.Helper()
	dir := os.Getenv(testenv.EnvTestBin)
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatalf("finding bin/mailpit (set %s): %v", testenv.EnvTestBin, err)
		}
		dir = filepath.Join(root, "bin")
	}
	path := filepath.Join(dir, "mailpit")
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("missing %s: build it with `make testbin` (hack/setup-testbin.sh)", path)
	}
	return path
}

// AcceptAny makes Mailpit accept any SMTP login, also without TLS.
var AcceptAny = []string{"--smtp-auth-accept-any", "--smtp-auth-allow-insecure"}

// Start starts Mailpit with flags (besides its ports and database); it is stopped when
// the test ends.
func Start(t TB, extra ...string) *Server {
	t.Helper()
	bin := Binary(t)
	smtpPort, httpPort := FreePort(t), FreePort(t)
	args := append([]string{
		"--smtp", "127.0.0.1:" + strconv.Itoa(smtpPort),
		"--listen", "127.0.0.1:" + strconv.Itoa(httpPort),
		"--database", filepath.Join(t.TempDir(), "mailpit.db"),
		"--smtp-disable-rdns", "--disable-version-check",
	}, extra...)
	cmd := exec.CommandContext(context.Background(), bin, args...) // stopped by Stop, not a context
	// Mailpit reads MP_* variables as settings: none of the developer's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	mp := &Server{Port: smtpPort, API: "http://127.0.0.1:" + strconv.Itoa(httpPort), cmd: cmd, done: make(chan struct{}), out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = mp.out, mp.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		close(mp.done)
	}()
	t.Cleanup(mp.Stop)

	deadline := time.Now().Add(30 * time.Second)
	for {
		if mp.ready() {
			return mp
		}
		select {
		case <-mp.done:
			t.Fatalf("mailpit exited at its start:\n%s", mp.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit did not get ready in 30s:\n%s", mp.out)
		}
	}
}

func (mp *Server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, mp.API+"/readyz", http.NoBody)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(mp.Port))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Stop ends Mailpit (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (mp *Server) Stop() {
	select {
	case <-mp.done:
		return
	default:
	}
	_ = mp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-mp.done:
	case <-time.After(10 * time.Second):
		_ = mp.cmd.Process.Kill()
		<-mp.done
	}
}

// Address, Summary and Message are the parts of Mailpit's API answers the tests read.
type Address struct {
	Name, Address string
}

type Summary struct {
	ID, MessageID, Subject, Username string
	From                             *Address
	To                               []Address
}

type Message struct {
	Summary
	Text, HTML string
	Headers    map[string][]string `json:"-"`
}

func (mp *Server) get(t TB, path string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mp.API+path, http.NoBody)
	if err != nil {
		t.Fatalf("%v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// MessagesTo returns the messages to addr (GET /api/v1/messages, then /api/v1/message/{ID} and
// its headers), once there are want of them (within 5 s; then whatever there is).
func (mp *Server) MessagesTo(t TB, addr string, want int) []Message {
	t.Helper()
	var mine []Summary
	for deadline := time.Now().Add(5 * time.Second); ; {
		var list struct {
			Messages []Summary `json:"messages"`
		}
		mp.get(t, "/api/v1/messages?limit=1000", &list)
		mine = mine[:0]
		for _, s := range list.Messages {
			for _, a := range s.To {
				if strings.EqualFold(a.Address, addr) {
					mine = append(mine, s)
					break
				}
			}
		}
		if len(mine) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := make([]Message, len(mine))
	for i, s := range mine {
		mp.get(t, "/api/v1/message/"+s.ID, &out[i])
		mp.get(t, "/api/v1/message/"+s.ID+"/headers", &out[i].Headers)
	}
	return out
}

// OneMessageTo is the only message to addr.
func (mp *Server) OneMessageTo(t TB, addr string) Message {
	t.Helper()
	ms := mp.MessagesTo(t, addr, 1)
	if len(ms) != 1 {
		t.Fatalf("%d messages to %s, want 1: %+v", len(ms), addr, Summaries(ms))
	}
	return ms[0]
}

func Summaries(ms []Message) []string {
	var s []string
	for _, m := range ms {
		s = append(s, fmt.Sprintf("%s %q", m.MessageID, m.Subject))
	}
	return s
}

func FreePort(t TB) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// selfSignedCert writes a certificate for 127.0.0.1 and localhost, its own CA, and its key, and
// returns their paths.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
