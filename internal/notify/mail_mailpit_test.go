package notify

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// mailpit is a real Mailpit (bin/mailpit, built by `make testbin`) on free loopback ports: SMTP
// at Port, its HTTP API at API.
type mailpit struct {
	Port int
	API  string

	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedBuffer
}

// mailpitBinary finds bin/mailpit the way internal/testenv finds the control plane: in
// $KUSTOS_TESTBIN, else <repo root>/bin. It fails, never skips, when it is missing.
func mailpitBinary(t *testing.T) string {
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

// acceptAny makes Mailpit accept any SMTP login, also without TLS.
var acceptAny = []string{"--smtp-auth-accept-any", "--smtp-auth-allow-insecure"}

// startMailpit starts Mailpit with flags (besides its ports and database); it is stopped when
// the test ends.
func startMailpit(t *testing.T, extra ...string) *mailpit {
	t.Helper()
	bin := mailpitBinary(t)
	smtpPort, httpPort := freePort(t), freePort(t)
	args := append([]string{
		"--smtp", "127.0.0.1:" + strconv.Itoa(smtpPort),
		"--listen", "127.0.0.1:" + strconv.Itoa(httpPort),
		"--database", filepath.Join(t.TempDir(), "mailpit.db"),
		"--smtp-disable-rdns", "--disable-version-check",
	}, extra...)
	cmd := exec.Command(bin, args...)
	// Mailpit reads MP_* variables as settings: none of the developer's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	mp := &mailpit{Port: smtpPort, API: "http://127.0.0.1:" + strconv.Itoa(httpPort), cmd: cmd, done: make(chan struct{}), out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = mp.out, mp.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		close(mp.done)
	}()
	t.Cleanup(mp.stop)

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

func (mp *mailpit) ready() bool {
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
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(mp.Port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// stop ends Mailpit (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (mp *mailpit) stop() {
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

// mpAddress, mpSummary and mpMessage are the parts of Mailpit's API answers the tests read.
type mpAddress struct {
	Name, Address string
}

type mpSummary struct {
	ID, MessageID, Subject, Username string
	From                             *mpAddress
	To                               []mpAddress
}

type mpMessage struct {
	mpSummary
	Text, HTML string
	Headers    map[string][]string `json:"-"`
}

func (mp *mailpit) get(t *testing.T, path string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mp.API+path, http.NoBody)
	if err != nil {
		t.Fatal(err)
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

// messagesTo returns the messages to addr (GET /api/v1/messages, then /api/v1/message/{ID} and
// its headers), once there are want of them (within 5 s; then whatever there is).
func (mp *mailpit) messagesTo(t *testing.T, addr string, want int) []mpMessage {
	t.Helper()
	var mine []mpSummary
	for deadline := time.Now().Add(5 * time.Second); ; {
		var list struct {
			Messages []mpSummary `json:"messages"`
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
	out := make([]mpMessage, len(mine))
	for i, s := range mine {
		mp.get(t, "/api/v1/message/"+s.ID, &out[i])
		mp.get(t, "/api/v1/message/"+s.ID+"/headers", &out[i].Headers)
	}
	return out
}

// oneMessageTo is the only message to addr.
func (mp *mailpit) oneMessageTo(t *testing.T, addr string) mpMessage {
	t.Helper()
	ms := mp.messagesTo(t, addr, 1)
	if len(ms) != 1 {
		t.Fatalf("%d messages to %s, want 1: %+v", len(ms), addr, summaries(ms))
	}
	return ms[0]
}

func summaries(ms []mpMessage) []string {
	var s []string
	for _, m := range ms {
		s = append(s, fmt.Sprintf("%s %q", m.MessageID, m.Subject))
	}
	return s
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// selfSignedCert writes a certificate for 127.0.0.1 and localhost, its own CA, and its key, and
// returns their paths.
func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailpit test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// lockedBuffer collects a process's output.
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
