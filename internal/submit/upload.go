package submit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Source writes the archive to w, the same bytes every time: Upload calls it once, and again
// for each resume that the chunk in memory cannot cover.
type Source func(w io.Writer) error

// Result is what the command prints on success: the submission's name, its size and SHA-256 as
// the server confirmed them, and the destination without credentials.
type Result struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url"`
}

// Defaults of a Client's zero fields.
const (
	DefaultMaxAttempts    = 5
	DefaultChunkSize      = 8 << 20
	DefaultRequestTimeout = 5 * time.Minute
	DefaultBaseBackoff    = time.Second
	DefaultMaxBackoff     = time.Minute
	// maxRetryAfter bounds how long a server's Retry-After makes the client wait.
	maxRetryAfter = 15 * time.Minute
)

// Client uploads an archive through the upload protocol (docs/submission.md).
type Client struct {
	// HTTP sends the requests; nil: NewHTTPClient's.
	HTTP *http.Client
	// Token, when set, is sent as Authorization: Bearer with every request. It is never part of
	// an error or a notice.
	Token string
	// Name names the submission (CheckName).
	Name string
	// MaxAttempts bounds the attempts in a row that bring the server's offset no further: the
	// first and its retries. A cut after progress starts the count again.
	MaxAttempts int
	// ChunkSize is the bytes one PATCH carries, and so the memory the upload holds.
	ChunkSize int
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration
	// BaseBackoff and MaxBackoff shape the wait before a retry: BaseBackoff doubled for each
	// failed attempt in a row, at most MaxBackoff, with jitter; a longer Retry-After wins.
	BaseBackoff, MaxBackoff time.Duration
	// Notify, when set, is told of every retry in one line.
	Notify func(string)
}

// NewHTTPClient is the client's default HTTP client: it follows no redirect, because a
// redirect could carry the token to another host.
func NewHTTPClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Errors a failed upload wraps.
var (
	// ErrMismatch: the server's size or SHA-256 of what it received differs from the archive's;
	// the server kept nothing.
	ErrMismatch = errors.New("checksum mismatch")
	// ErrSourceChanged: writing the archive again for a resume gave other bytes.
	ErrSourceChanged = errors.New("the directory changed during the upload")
	// ErrProtocol: the server's answer does not follow the protocol.
	ErrProtocol = errors.New("protocol error")
)

// HTTPError is an answer with a status the request did not expect.
type HTTPError struct {
	Method     string
	Status     int
	RetryAfter time.Duration
	// Detail is the start of the answer's body, on one line.
	Detail string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.Method, e.Status, http.StatusText(e.Status))
	if e.Status >= 300 && e.Status < 400 {
		msg += " (redirects are not followed)"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Retryable: 5xx, 408 and 429 may pass on another try; other answers will not.
func (e *HTTPError) Retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests
}

// transportError is a request that got no answer: a refused or reset connection, a timeout.
type transportError struct {
	method, url string
	err         error
}

func (e *transportError) Error() string { return e.method + " " + e.url + ": " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// offsetConflict is the server saying it holds another offset than the client assumed (409).
type offsetConflict struct{ offset int64 }

func (e *offsetConflict) Error() string {
	return fmt.Sprintf("the server holds %d bytes, not the offset sent (HTTP 409)", e.offset)
}

// regenerate asks Upload to write the archive again and resume at offset.
type regenerate struct{ offset int64 }

func (e *regenerate) Error() string { return fmt.Sprintf("resume at %d", e.offset) }

// Upload sends the archive src writes to the submission endpoint to, and returns once the
// server confirmed its size and SHA-256.
func (c *Client) Upload(ctx context.Context, to *url.URL, src Source) (Result, error) {
	if err := CheckName(c.Name); err != nil {
		return Result{}, err
	}
	u := &upload{c: c.withDefaults(), to: to, src: src}
	for {
		loc, err := u.create(ctx)
		if err == nil {
			u.session = loc
			break
		}
		if err := u.retry(ctx, err, 0); err != nil {
			return Result{}, err
		}
	}
	offset := int64(0)
	for {
		size, sum, err := u.send(ctx, offset)
		var rg *regenerate
		if errors.As(err, &rg) {
			offset = rg.offset
			continue
		}
		if err != nil {
			return Result{}, err
		}
		for {
			res, err := u.complete(ctx, size, sum)
			if err == nil {
				return res, nil
			}
			if rerr := u.retry(ctx, err, size); rerr != nil {
				return Result{}, rerr
			}
			var conflict *offsetConflict
			if errors.As(err, &conflict) {
				if conflict.offset > size {
					return Result{}, fmt.Errorf("%w: the server holds %d bytes, the archive has %d", ErrProtocol, conflict.offset, size)
				}
				offset = conflict.offset
				break
			}
		}
	}
}

func (c *Client) withDefaults() *Client {
	d := *c
	if d.HTTP == nil {
		d.HTTP = NewHTTPClient()
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.ChunkSize <= 0 {
		d.ChunkSize = DefaultChunkSize
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = DefaultRequestTimeout
	}
	if d.BaseBackoff <= 0 {
		d.BaseBackoff = DefaultBaseBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultMaxBackoff
	}
	if d.Notify == nil {
		d.Notify = func(string) {}
	}
	return &d
}

// upload is one Upload's state.
type upload struct {
	c       *Client
	to      *url.URL
	session *url.URL
	src     Source
	// failures counts the failed attempts in a row since the server's offset last grew past
	// progress.
	failures int
	progress int64
}

// retry decides after a failed attempt: nil when another may go (after waiting), else the
// error to end with. offset is how far the server is known to have come.
func (u *upload) retry(ctx context.Context, err error, offset int64) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
	}
	if !retryable(err) {
		return err
	}
	if offset > u.progress {
		u.progress, u.failures = offset, 0
	}
	u.failures++
	if u.failures >= u.c.MaxAttempts {
		return fmt.Errorf("%w (%d attempts in a row failed)", err, u.failures)
	}
	wait := backoff(u.c.BaseBackoff, u.c.MaxBackoff, u.failures)
	var he *HTTPError
	if errors.As(err, &he) && he.RetryAfter > wait {
		wait = min(he.RetryAfter, maxRetryAfter)
	}
	u.c.Notify(fmt.Sprintf("attempt %d of %d failed: %v; retrying in %s", u.failures, u.c.MaxAttempts, err, wait.Round(time.Millisecond)))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

// retryable: answers that may pass on another try, and requests that got no answer, except
// for a certificate the client does not trust.
func retryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Retryable()
	}
	var conflict *offsetConflict
	if errors.As(err, &conflict) {
		return true
	}
	var te *transportError
	if !errors.As(err, &te) {
		return false
	}
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	return !errors.As(err, &unknown) && !errors.As(err, &invalid) && !errors.As(err, &hostname) && !errors.As(err, &verify)
}

// backoff is base·2^(n-1), at most max, with jitter: a random point in its upper half.
func backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + rand.N(d-half+1) //nolint:gosec // G404: jitter only spreads retries

}

// create opens the upload session and returns its URL, which must be on the endpoint's scheme
// and host: the token goes nowhere else.
func (u *upload) create(ctx context.Context) (*url.URL, error) {
	resp, err := u.do(ctx, http.MethodPost, u.to, nil, func(h http.Header) { h.Set(HeaderName, u.c.Name) })
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, httpError(http.MethodPost, resp)
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("%w: POST: HTTP 201 without a Location", ErrProtocol)
	}
	s, err := u.to.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: POST: the session's Location does not parse", ErrProtocol)
	}
	if s.Scheme != u.to.Scheme || s.Host != u.to.Host || s.User != nil {
		return nil, fmt.Errorf("%w: POST: the session is at %s, another host than --to's %s", ErrProtocol, Redact(s), u.to.Host)
	}
	return s, nil
}

// send writes the archive, skips (hashing it) what the server has up to from, and sends the
// rest in chunks. A failed chunk is sent again from the server's offset while that lies in the
// chunk in memory; otherwise send returns *regenerate with the offset to resume at. It returns
// the archive's size and SHA-256 once all of it is sent.
func (u *upload) send(ctx context.Context, from int64) (int64, string, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(u.src(pw))
	}()
	defer func() {
		pr.CloseWithError(errors.New("upload stopped"))
		<-done
	}()
	h := sha256.New()
	r := io.TeeReader(pr, h)
	if n, err := io.CopyN(io.Discard, r, from); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, "", fmt.Errorf("%w: the archive has %d bytes now, the server already holds %d", ErrSourceChanged, n, from)
		}
		return 0, "", fmt.Errorf("writing the archive: %w", err)
	}
	buf := make([]byte, u.c.ChunkSize)
	offset := from
	for {
		n, rerr := io.ReadFull(r, buf)
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return 0, "", fmt.Errorf("writing the archive: %w", rerr)
		}
		start := offset
		data := buf[:n]
		for len(data) > 0 {
			got, err := u.patch(ctx, offset, data)
			if err == nil && got == offset+int64(len(data)) {
				offset = got
				break
			}
			if err == nil {
				err = &offsetConflict{offset: got}
			}
			if rerr := u.retry(ctx, err, offset); rerr != nil {
				return 0, "", rerr
			}
			var conflict *offsetConflict
			if errors.As(err, &conflict) {
				offset = conflict.offset
			} else if offset, err = u.head(ctx); err != nil {
				return 0, "", err
			}
			if offset < start {
				return 0, "", &regenerate{offset: offset}
			}
			if offset > start+int64(n) {
				return 0, "", fmt.Errorf("%w: the server holds %d bytes, more than the %d sent", ErrProtocol, offset, start+int64(n))
			}
			data = buf[offset-start : n]
		}
		if rerr != nil {
			return offset, hex.EncodeToString(h.Sum(nil)), nil
		}
	}
}

// patch appends data at offset and returns the server's offset after it.
func (u *upload) patch(ctx context.Context, offset int64, data []byte) (int64, error) {
	resp, err := u.do(ctx, http.MethodPatch, u.session, data, func(h http.Header) {
		h.Set(HeaderOffset, FormatOffset(offset))
		h.Set("Content-Type", ContentTypeChunk)
	})
	if err != nil {
		return 0, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		return offsetOf(http.MethodPatch, resp)
	case http.StatusConflict:
		got, err := offsetOf(http.MethodPatch, resp)
		if err != nil {
			return 0, err
		}
		return 0, &offsetConflict{offset: got}
	}
	return 0, httpError(http.MethodPatch, resp)
}

// head asks the server for its offset, retrying.
func (u *upload) head(ctx context.Context) (int64, error) {
	for {
		resp, err := u.do(ctx, http.MethodHead, u.session, nil, nil)
		if err == nil {
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
				return offsetOf(http.MethodHead, resp)
			}
			err = httpError(http.MethodHead, resp)
		}
		if err := u.retry(ctx, err, u.progress); err != nil {
			return 0, err
		}
	}
}

// complete sends the size and SHA-256; the server answers 200 only when they match what it
// holds.
func (u *upload) complete(ctx context.Context, size int64, sum string) (Result, error) {
	body, _ := json.Marshal(Completion{Size: size, SHA256: sum})
	resp, err := u.do(ctx, http.MethodPost, u.session, body, func(h http.Header) { h.Set("Content-Type", ContentTypeJSON) })
	if err != nil {
		return Result{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		got, err := ParseCompletion(resp.body)
		if err != nil {
			return Result{}, fmt.Errorf("%w: the server's confirmation: %w", ErrProtocol, err)
		}
		if got.Size != size || got.SHA256 != sum {
			return Result{}, fmt.Errorf("%w: the server confirmed %d bytes with SHA-256 %s, the archive has %d bytes with SHA-256 %s",
				ErrMismatch, got.Size, got.SHA256, size, sum)
		}
		return Result{Name: u.c.Name, Bytes: size, SHA256: sum, URL: Redact(u.to)}, nil
	case http.StatusConflict:
		got, err := offsetOf(http.MethodPost, resp)
		if err != nil {
			return Result{}, err
		}
		return Result{}, &offsetConflict{offset: got}
	case http.StatusUnprocessableEntity:
		return Result{}, fmt.Errorf("%w: the server refused %d bytes with SHA-256 %s: %s", ErrMismatch, size, sum, detail(resp.body))
	}
	return Result{}, httpError(http.MethodPost, resp)
}

// response is an answer with the start of its body read (answers of this protocol are short).
type response struct {
	*http.Response
	body []byte
}

// maxAnswer bounds the body read of an answer.
const maxAnswer = 4 << 10

// do sends one request, bounded by RequestTimeout, with the token.
func (u *upload) do(ctx context.Context, method string, to *url.URL, body []byte, set func(http.Header)) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, u.c.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, to.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, Redact(to), err)
	}
	req.ContentLength = int64(len(body))
	if body == nil {
		req.Body = http.NoBody
	}
	if u.c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+u.c.Token)
	}
	if set != nil {
		set(req.Header)
	}
	resp, err := u.c.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &transportError{method: method, url: Redact(to), err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, &transportError{method: method, url: Redact(to), err: err}
	}
	return &response{Response: resp, body: data}, nil
}

func offsetOf(method string, resp *response) (int64, error) {
	n, err := ParseOffset(resp.Header.Get(HeaderOffset))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: HTTP %d: %w", ErrProtocol, method, resp.StatusCode, err)
	}
	return n, nil
}

func httpError(method string, resp *response) *HTTPError {
	e := &HTTPError{Method: method, Status: resp.StatusCode, Detail: detail(resp.body)}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = time.Until(t)
		}
	}
	return e
}

// detail is the start of an answer's body on one printable line.
func detail(body []byte) string {
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(body), "?"))
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Redact is u without user information, query or fragment: what may be printed of a
// destination that can carry credentials.
func Redact(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}
