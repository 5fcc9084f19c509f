package submit_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/submit"
	"github.com/kustos-dev/kustos/internal/submit/submittest"
)

const chunk = 64 << 10

// source is an archive of a tree with 300 KiB of random bytes (almost five chunks), and a
// count of how often it was written.
func source(t *testing.T) (submit.Source, []byte, *atomic.Int32) {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(dir, "disk.img"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("answers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	var want bytes.Buffer
	if err := submit.Archive(root, &want, func(submit.Skip) {}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	return func(w io.Writer) error {
		calls.Add(1)
		return submit.Archive(root, w, func(submit.Skip) {})
	}, want.Bytes(), &calls
}

func client(token string) *submit.Client {
	return &submit.Client{Token: token, Name: "exam-1", MaxAttempts: 4, ChunkSize: chunk,
		BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, RequestTimeout: 10 * time.Second}
}

// TestUpload: the client against the reference server, with the faults a real network and
// server have. An accepted submission is the archive's bytes, once; a refused one leaves
// nothing behind.
func TestUpload(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(s *submittest.Server)
		client func(c *submit.Client)
		// wantErr: the upload fails with an error saying this; "": it succeeds.
		wantErr string
		// writes: how often the archive is written (1: a resume came from the chunk in memory).
		writes int32
		check  func(t *testing.T, s *submittest.Server, elapsed time.Duration)
	}{
		{name: "no fault", writes: 1},
		{name: "5xx twice then success", writes: 1,
			fault: func(s *submittest.Server) { s.FailNext(http.MethodPatch, 2, http.StatusServiceUnavailable, "") },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if n := s.Requests(http.MethodPatch); n != 7 {
					t.Errorf("%d PATCH requests, want 5 chunks and 2 failed", n)
				}
			}},
		{name: "Retry-After is waited for", writes: 1,
			fault: func(s *submittest.Server) { s.FailNext(http.MethodPost, 1, http.StatusTooManyRequests, "1") },
			check: func(t *testing.T, _ *submittest.Server, elapsed time.Duration) {
				if elapsed < time.Second {
					t.Errorf("the upload took %s after a Retry-After: 1", elapsed)
				}
			}},
		{name: "cut mid-chunk, resumed from the chunk in memory", writes: 1,
			fault: func(s *submittest.Server) { s.CutOnceAt(2*chunk + 1000) },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if n := s.Requests(http.MethodHead); n != 1 {
					t.Errorf("%d HEAD requests, want one after the cut", n)
				}
			}},
		{name: "server rolled back behind the chunk: the archive written again, the prefix skipped", writes: 2,
			fault: func(s *submittest.Server) { s.RollBackOnceAt(3*chunk+10, chunk+7) }},
		{name: "completion cut: asked again, confirmed once", writes: 1,
			fault: func(s *submittest.Server) { s.CutConfirmationOnce() },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if n := s.Requests(http.MethodPost); n != 3 {
					t.Errorf("%d POST requests, want the session's and the completion twice", n)
				}
			}},
		{name: "byte flipped in transit: mismatch, nothing kept", writes: 1, wantErr: "checksum mismatch",
			fault: func(s *submittest.Server) { s.CorruptAt(chunk + 5) },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if s.Rejected() != 1 {
					t.Errorf("rejected %d, want 1", s.Rejected())
				}
			}},
		{name: "wrong token: 401 is final", wantErr: "HTTP 401", writes: 0,
			client: func(c *submit.Client) { c.Token = "wrong" },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if n := s.Requests(http.MethodPost); n != 1 {
					t.Errorf("%d POST requests, want 1 (no retry)", n)
				}
			}},
		{name: "5xx every time: gives up after max attempts", wantErr: "4 attempts in a row failed", writes: 1,
			fault: func(s *submittest.Server) { s.FailNext(http.MethodPatch, 100, http.StatusBadGateway, "") },
			check: func(t *testing.T, s *submittest.Server, _ time.Duration) {
				if n := s.Requests(http.MethodPatch); n != 4 {
					t.Errorf("%d PATCH requests, want 4", n)
				}
			}},
		{name: "a bad name is refused before any request", wantErr: "only letters", writes: 0,
			client: func(c *submit.Client) { c.Name = "a/x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := submittest.Start(submittest.Options{Dir: t.TempDir(), Token: "s3cret"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.fault != nil {
				tc.fault(s)
			}
			c := client("s3cret")
			if tc.client != nil {
				tc.client(c)
			}
			src, want, writes := source(t)
			to, _ := url.Parse(s.URL())
			start := time.Now()
			res, err := c.Upload(context.Background(), to, src)
			elapsed := time.Since(start)
			if tc.check != nil {
				tc.check(t, s, elapsed)
			}
			if got := writes.Load(); got != tc.writes {
				t.Errorf("the archive was written %d times, want %d", got, tc.writes)
			}
			if strings.Contains(errString(err), "s3cret") {
				t.Errorf("the error shows the token: %v", err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				if a := s.Accepted(); len(a) != 0 {
					t.Errorf("the server accepted %+v", a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(want)
			if res.Bytes != int64(len(want)) || res.SHA256 != hex.EncodeToString(sum[:]) || res.Name != "exam-1" || res.URL != s.URL() {
				t.Errorf("result %+v, want %d bytes, %x", res, len(want), sum)
			}
			a := s.Accepted()
			if len(a) != 1 {
				t.Fatalf("accepted %+v, want one submission", a)
			}
			stored, err := os.ReadFile(a[0].Path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stored, want) {
				t.Errorf("the server stored %d bytes that differ from the %d of the archive", len(stored), len(want))
			}
		})
	}
}

// TestUploadTokenStaysHome: the token goes to --to's host only — not to a session URL on
// another host, nor along a redirect.
func TestUploadTokenStaysHome(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer other.Close()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		{"a session on another host", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", other.URL+"/steal")
			w.WriteHeader(http.StatusCreated)
		}, "another host"},
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		}, "redirects are not followed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			src, _, _ := source(t)
			to, _ := url.Parse(srv.URL + "/submissions?sig=abc")
			_, err := client("s3cret").Upload(context.Background(), to, src)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "sig=abc") {
				t.Errorf("the error shows the query: %v", err)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the other host got %d requests", n)
			}
		})
	}
}

// TestUploadNoServer: a refused connection is retried, then reported with the address and
// without the query.
func TestUploadNoServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	to, _ := url.Parse(addr + "/submissions?token=abc")
	src, _, _ := source(t)
	_, err := client("").Upload(context.Background(), to, src)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "4 attempts") {
		t.Fatalf("err = %v, want connection refused after 4 attempts", err)
	}
	if strings.Contains(err.Error(), "token=abc") {
		t.Errorf("the error shows the query: %v", err)
	}
	var he *submit.HTTPError
	if errors.As(err, &he) {
		t.Errorf("a refused connection reported as an HTTP answer: %v", he)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
