package submittest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kustos-dev/kustos/internal/submit"
)

// Path is where the server takes new submissions: URL() is the server's address and Path.
const Path = "/submissions"

// Options configure a Server.
type Options struct {
	// Dir, when set, receives each accepted archive as NAME.zip (written to a .part file while
	// the upload goes, renamed when the checksum matched). Empty: archives are counted and
	// discarded.
	Dir string
	// Token, when set, is the bearer token every request must carry (401 otherwise).
	Token string
}

// Submission is an accepted archive.
type Submission struct {
	Name   string
	Bytes  int64
	SHA256 string
	// Path is the stored ZIP ("" when discarded).
	Path string
}

// Server is the reference submission server.
type Server struct {
	o   Options
	srv *httptest.Server

	mu        sync.Mutex
	sessions  map[string]*session
	accepted  []Submission
	rejected  int
	requests  map[string]int
	cutAt     int64 // offset at which the next PATCH is cut, -1: none
	failures  []failure
	corruptAt int64 // offset of the byte flipped in transit, -1: none
	rollBack  int64 // offset the session falls back to at the next cut, -1: none
	// cutConfirmation drops the connection of the next accepted completion before its answer.
	cutConfirmation bool
}

type failure struct {
	method     string
	status     int
	retryAfter string
}

type session struct {
	mu     sync.Mutex
	name   string
	offset int64
	sum    hash.Hash
	file   *os.File // nil when discarding
	done   *submit.Completion
}

// Start serves on a loopback port.
func Start(o Options) (*Server, error) {
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o750); err != nil {
			return nil, err
		}
	}
	s := &Server{o: o, sessions: map[string]*session{}, requests: map[string]int{}, cutAt: -1, corruptAt: -1, rollBack: -1}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// URL is the submission endpoint, for `kustos submit --to`.
func (s *Server) URL() string { return s.srv.URL + Path }

// Close stops the server and removes unfinished uploads.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		ss.mu.Lock()
		if ss.file != nil && ss.done == nil {
			ss.file.Close()
			os.Remove(ss.file.Name())
		}
		ss.mu.Unlock()
		delete(s.sessions, id)
	}
}

// CutOnceAt makes the server commit the bytes of the next PATCH up to offset, then drop the
// connection without an answer, once.
func (s *Server) CutOnceAt(offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutAt = offset
}

// RollBackOnceAt cuts the next PATCH when the session reaches offset at, as CutOnceAt, and
// then holds only the first to bytes: a server restarted from an older checkpoint. It needs
// Options.Dir (the hash is computed again from the stored bytes).
func (s *Server) RollBackOnceAt(at, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutAt, s.rollBack = at, to
}

// CutConfirmationOnce accepts the next completion and drops the connection instead of
// confirming it: the client must ask again and be confirmed, with one submission stored.
func (s *Server) CutConfirmationOnce() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutConfirmation = true
}

// FailNext answers the next n requests of method ("" for any) with status and, when set,
// Retry-After, before looking at them.
func (s *Server) FailNext(method string, n, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{method: method, status: status, retryAfter: retryAfter})
	}
}

// CorruptAt flips the byte at offset as it arrives, as a faulty network or disk would, once.
func (s *Server) CorruptAt(offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corruptAt = offset
}

// Accepted lists the submissions accepted so far.
func (s *Server) Accepted() []Submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Submission(nil), s.accepted...)
}

// Rejected counts completions refused for a size or SHA-256 mismatch.
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// Requests counts the requests the server got by method (faults included).
func (s *Server) Requests(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.Method]++
	for i, f := range s.failures {
		if f.method != "" && f.method != r.Method {
			continue
		}
		s.failures = append(s.failures[:i], s.failures[i+1:]...)
		s.mu.Unlock()
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, "injected failure", f.status)
		return
	}
	s.mu.Unlock()
	if s.o.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) != 1 {
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
	}
	if r.URL.Path == Path {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST creates an upload session", http.StatusMethodNotAllowed)
			return
		}
		s.create(w, r)
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, Path+"/")
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if !ok || ss == nil {
		http.Error(w, "no such upload session", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodHead:
		ss.mu.Lock()
		w.Header().Set(submit.HeaderOffset, submit.FormatOffset(ss.offset))
		ss.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	case http.MethodPatch:
		s.patch(w, r, ss)
	case http.MethodPost:
		s.complete(w, r, ss)
	default:
		w.Header().Set("Allow", "HEAD, PATCH, POST")
		http.Error(w, "HEAD, PATCH or POST", http.StatusMethodNotAllowed)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	name := r.Header.Get(submit.HeaderName)
	if err := submit.CheckName(name); err != nil {
		http.Error(w, submit.HeaderName+": "+err.Error(), http.StatusBadRequest)
		return
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ss := &session{name: name, sum: sha256.New()}
	if s.o.Dir != "" {
		f, err := os.Create(filepath.Join(s.o.Dir, name+"."+id+".part"))
		if err != nil {
			http.Error(w, "cannot store: "+err.Error(), http.StatusInternalServerError)
			return
		}
		ss.file = f
	}
	s.mu.Lock()
	s.sessions[id] = ss
	s.mu.Unlock()
	w.Header().Set("Location", Path+"/"+id)
	w.Header().Set(submit.HeaderOffset, "0")
	w.WriteHeader(http.StatusCreated)
}

// patch appends the body at the session's offset, committing as it reads, so that a cut keeps
// what arrived.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, ss *session) {
	if ct := r.Header.Get("Content-Type"); ct != submit.ContentTypeChunk {
		http.Error(w, "Content-Type must be "+submit.ContentTypeChunk, http.StatusUnsupportedMediaType)
		return
	}
	at, err := submit.ParseOffset(r.Header.Get(submit.HeaderOffset))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// A request that still appends (its client gave up on it) ends when its connection does;
	// this one waits for it, then compares offsets.
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.done != nil {
		w.Header().Set(submit.HeaderOffset, submit.FormatOffset(ss.offset))
		http.Error(w, "the session is complete", http.StatusConflict)
		return
	}
	if at != ss.offset {
		w.Header().Set(submit.HeaderOffset, submit.FormatOffset(ss.offset))
		http.Error(w, fmt.Sprintf("%s %d, the server holds %d", submit.HeaderOffset, at, ss.offset), http.StatusConflict)
		return
	}
	s.mu.Lock()
	cut, corrupt := s.cutAt, s.corruptAt
	s.mu.Unlock()
	buf := make([]byte, 256<<10)
	for {
		want := len(buf)
		if cut >= ss.offset && cut-ss.offset < int64(want) {
			want = int(cut - ss.offset)
		}
		n, rerr := r.Body.Read(buf[:want])
		if n > 0 {
			if corrupt >= ss.offset && corrupt < ss.offset+int64(n) {
				buf[corrupt-ss.offset] ^= 0xff
				s.mu.Lock()
				s.corruptAt = -1
				s.mu.Unlock()
				corrupt = -1
			}
			if err := ss.append(buf[:n]); err != nil {
				http.Error(w, "cannot store: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if cut >= 0 && ss.offset == cut {
			s.mu.Lock()
			s.cutAt = -1
			to := s.rollBack
			s.rollBack = -1
			s.mu.Unlock()
			if to >= 0 {
				if err := ss.truncate(to); err != nil {
					panic(fmt.Errorf("submittest: rolling back: %w", err))
				}
			}
			hijackAndClose(w)
			return
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return // the client went away; what arrived is committed
		}
	}
	w.Header().Set(submit.HeaderOffset, submit.FormatOffset(ss.offset))
	w.WriteHeader(http.StatusNoContent)
}

func (ss *session) append(p []byte) error {
	if ss.file != nil {
		if _, err := ss.file.Write(p); err != nil {
			return err
		}
	}
	ss.sum.Write(p)
	ss.offset += int64(len(p))
	return nil
}

// truncate keeps the first n bytes of the stored upload and hashes them again.
func (ss *session) truncate(n int64) error {
	if ss.file == nil || n > ss.offset {
		return errors.New("a roll back needs Options.Dir and an offset already held")
	}
	if err := ss.file.Truncate(n); err != nil {
		return err
	}
	ss.sum.Reset()
	if _, err := io.Copy(ss.sum, io.NewSectionReader(ss.file, 0, n)); err != nil {
		return err
	}
	if _, err := ss.file.Seek(n, io.SeekStart); err != nil {
		return err
	}
	ss.offset = n
	return nil
}

// complete accepts the session when the client's size and SHA-256 are those of what arrived;
// a mismatch removes what arrived. A completed session is confirmed again on a repeat.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, ss *session) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<10))
	if err != nil {
		return
	}
	c, err := submit.ParseCompletion(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.done != nil {
		if ss.done.Size == c.Size && ss.done.SHA256 == c.SHA256 {
			writeJSON(w, http.StatusOK, ss.done)
			return
		}
		http.Error(w, "the session was completed with another size or checksum", http.StatusUnprocessableEntity)
		return
	}
	if c.Size != ss.offset {
		w.Header().Set(submit.HeaderOffset, submit.FormatOffset(ss.offset))
		http.Error(w, fmt.Sprintf("size %d, the server holds %d bytes", c.Size, ss.offset), http.StatusConflict)
		return
	}
	got := hex.EncodeToString(ss.sum.Sum(nil))
	if got != c.SHA256 {
		s.discard(r, ss)
		s.mu.Lock()
		s.rejected++
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("SHA-256 %s, the server received %s; nothing kept", c.SHA256, got), http.StatusUnprocessableEntity)
		return
	}
	sub := Submission{Name: ss.name, Bytes: ss.offset, SHA256: got}
	if ss.file != nil {
		part := ss.file.Name()
		if err := ss.file.Close(); err != nil {
			http.Error(w, "cannot store: "+err.Error(), http.StatusInternalServerError)
			return
		}
		sub.Path = filepath.Join(s.o.Dir, ss.name+".zip")
		if err := os.Rename(part, sub.Path); err != nil {
			http.Error(w, "cannot store: "+err.Error(), http.StatusInternalServerError)
			return
		}
		ss.file = nil
	}
	ss.done = &submit.Completion{Name: ss.name, Size: sub.Bytes, SHA256: got}
	s.mu.Lock()
	s.accepted = append(s.accepted, sub)
	cut := s.cutConfirmation
	s.cutConfirmation = false
	s.mu.Unlock()
	if cut {
		hijackAndClose(w)
		return
	}
	writeJSON(w, http.StatusOK, ss.done)
}

// discard forgets a session whose checksum did not match, and what it stored.
func (s *Server) discard(r *http.Request, ss *session) {
	if ss.file != nil {
		ss.file.Close()
		os.Remove(ss.file.Name())
		ss.file = nil
	}
	id := strings.TrimPrefix(r.URL.Path, Path+"/")
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", submit.ContentTypeJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(mustJSON(v))))
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(v))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// hijackAndClose drops the connection without an answer: what a cut looks like to the client.
func hijackAndClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(errors.Join(errors.New("submittest: cannot cut the connection"), err))
	}
	conn.Close()
}

// TB is what WriteTree needs of a test.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// WriteTree writes files below dir, for a test's volume to submit: a name is a slash-separated
// path, a name ending in "/" an (empty) directory; parents are made as needed.
func WriteTree(t TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
