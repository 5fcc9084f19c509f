package admission

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// TestServerOnlyWithAPort: no server without a port; with one, HTTP/1.1 only, on every replica.
func TestServerOnlyWithAPort(t *testing.T) {
	if s := NewServer(ServerOptions{}, nil); s != nil {
		t.Errorf("port 0: got a server %T, want none", s)
	}
	s, ok := NewServer(ServerOptions{Port: 9443, Host: "127.0.0.1"}, nil).(*webhook.DefaultServer)
	if !ok {
		t.Fatal("port 9443: no server")
	}
	if s.Options.Port != 9443 || s.Options.Host != "127.0.0.1" || s.Options.CertDir != DefaultCertDir {
		t.Errorf("server options %+v", s.Options)
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, opt := range s.Options.TLSOpts {
		opt(cfg)
	}
	if !slices.Equal(cfg.NextProtos, []string{"http/1.1"}) {
		t.Errorf("ALPN %q, want HTTP/1.1 only", cfg.NextProtos)
	}
	if s.NeedLeaderElection() {
		t.Error("the webhook server waits for leadership; every replica must serve")
	}
}

// TestSetupRefuses: a bad port or a missing certificate stops `kustos run` at once with
// the flag to change, before the manager would fail starting its server.
func TestSetupRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		o    ServerOptions
		want string
	}{
		{ServerOptions{Port: -1}, "--webhook-port=-1: want a port"},
		{ServerOptions{Port: 70000}, "--webhook-port=70000: want a port"},
		{ServerOptions{Port: 9443, CertDir: dir}, "--webhook-port=9443: no serving certificate: " + dir + "/tls.crt does not exist"},
	} {
		err := Setup(nil, tc.o, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := Setup(nil, ServerOptions{}, nil, nil, nil); err != nil {
		t.Errorf("port 0: %v", err)
	}
}
