package cloudevent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/client"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TypeCleaned is the CloudEvent type Kustos sends when a Cleaner's cleanup is done. The
// Cleaner's CRD documents it for spec.cloudEventSink.
const TypeCleaned = "io.kustos.cleaner.cleaned"

// Defaults of the Sender's fields.
const (
	DefaultSource      = "kustos"
	DefaultRetries     = 5
	DefaultBackoff     = 500 * time.Millisecond
	DefaultHTTPTimeout = 10 * time.Second

	maxRetries = 30
)

var (
	// ErrNotDelivered is wrapped by every error of Send: the sink did not acknowledge the event.
	// Send's errors match lifecycle.ErrNotDelivered too, which the detectors know.
	ErrNotDelivered = errors.New("cloudevent not delivered")
	// ErrRejected is wrapped, with ErrNotDelivered, when the sink answered with a 4xx that a
	// retry cannot change (anything but 408, 409, 425 and 429): the event itself, or the
	// credentials, are what the sink refuses.
	ErrRejected = errors.New("cloudevent rejected by the sink")
)

// defaultHTTP is shared by all Senders without an HTTP client, so that they share connections.
// A sink is a tenant's URL: the client refuses every destination but public addresses
// (internal/egress's default policy) and follows no redirect.
var defaultHTTP = (&egress.Guard{Detector: "cloudevent"}).Client(DefaultHTTPTimeout)

// Sender sends CloudEvents to sinks. The zero value is usable; a Sender may be used concurrently.
type Sender struct {
	// HTTP sends the requests; nil: an internal/egress client that reaches public addresses
	// only, with a DefaultHTTPTimeout timeout. A sink is a tenant's URL: give it an egress
	// Guard's client (--allowed-destinations), never a plain one. Its timeout bounds each
	// attempt, ctx the whole of Send.
	HTTP *http.Client
	// Source is the events' source attribute, e.g. "kustos" or a URI of the cluster
	// (default DefaultSource).
	Source string
	// Retries is how often a failed attempt is retried (0: DefaultRetries, negative: never). At
	// most 30, and fewer when Backoff·2^Retries would not fit a time.Duration (292 years).
	Retries int
	// Backoff is the wait before the first retry; it doubles with each further one
	// (default DefaultBackoff).
	Backoff time.Duration
}

// Send delivers one structured-mode JSON CloudEvent (application/cloudevents+json) of type
// TypeCleaned to sink, with data encoded as JSON (datacontenttype application/json). id must be
// stable for one cleanup (the Cleaner's UID and generation, say) so that receivers can drop the
// duplicates a retry after a crash sends. subject names what was cleaned ("ns/name").
//
// It returns nil only when the sink acknowledged the event (2xx); otherwise an error wrapping
// ErrNotDelivered and, when the sink rejected the event, ErrRejected, or egress.ErrRefused when
// the sink's destination is refused (then it is not retried). The error's text is for the
// Cleaner's author: it names the sink (without credentials) and only the class of the failure
// ("HTTP 5xx", "timeout", "destination refused"); Detail(err) adds what the sink answered and the
// network's error, for the operator's log. When ctx ends, Send returns at once with an error
// that also wraps ctx's cause.
func (s *Sender) Send(ctx context.Context, sink, id, subject string, data any) error {
	target, err := url.Parse(sink)
	if err != nil {
		// url.Parse's error repeats the URL, userinfo and all.
		return &notDelivered{msg: "cloudevent: the sink is not a URL"}
	}
	where := redact(target)
	if (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return &notDelivered{msg: fmt.Sprintf("cloudevent: the sink %s is not an http(s) URL", where)}
	}

	e := cloudevents.NewEvent()
	e.SetID(id)
	e.SetType(TypeCleaned)
	e.SetSource(s.source())
	e.SetSubject(subject)
	if err := e.SetData(cloudevents.ApplicationJSON, data); err != nil {
		return &notDelivered{msg: fmt.Sprintf("cloudevent: encoding event %q: %v", id, err), cause: err}
	}

	// A refused destination ends the retries: cancelling sendCtx stops the SDK's backoff.
	sendCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rec := &recorder{next: s.httpClient().Transport, refused: cancel}
	if rec.next == nil {
		rec.next = http.DefaultTransport
	}
	hc := *s.httpClient()
	hc.Transport = rec
	p, err := cehttp.New(cehttp.WithTarget(target.String()), cehttp.WithIsRetriableFunc(retriable))
	if err != nil {
		return &notDelivered{msg: "cloudevent: " + scrub(err.Error(), target)}
	}
	p.Client = &hc
	c, err := client.New(p, client.WithTimeNow(), client.WithForceStructured())
	if err != nil {
		return &notDelivered{msg: "cloudevent: " + scrub(err.Error(), target)}
	}
	if retries, period := s.schedule(); retries > 0 {
		sendCtx = cloudevents.ContextWithRetriesExponentialBackoff(sendCtx, period, retries)
	}
	res := c.Send(sendCtx, e)
	if cloudevents.IsACK(res) {
		return nil
	}
	return rec.failure(ctx, res, where, id, target)
}

// retriable says which HTTP answers a retry may change: server errors, and the 4xx that mean
// "not now" (timeout, conflict, too early, too many requests). The SDK retries failed
// connections regardless.
func retriable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

func (s *Sender) httpClient() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return defaultHTTP
}

func (s *Sender) source() string {
	if s.Source != "" {
		return s.Source
	}
	return DefaultSource
}

func (s *Sender) retries() int {
	switch {
	case s.Retries < 0:
		return 0
	case s.Retries == 0:
		return DefaultRetries
	}
	return s.Retries
}

// schedule returns the SDK's retry parameters: it waits period·2^n before retry n (n from 1),
// so period is half of Backoff. The SDK does not check that product for overflow, and a negative
// wait would panic; retries are cut to what fits.
func (s *Sender) schedule() (retries int, period time.Duration) {
	retries = min(s.retries(), maxRetries)
	backoff := s.Backoff
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	period = max(backoff/2, time.Nanosecond)
	for retries > 0 && period > time.Duration(math.MaxInt64>>retries) {
		retries--
	}
	return retries, period
}

// recorder is the HTTP transport under the SDK: it remembers what the sink last answered, so that
// Send's error can say it in its own words. The SDK's results differ in shape with and without
// retries, wrap each other, and quote the sink's whole answer.
type recorder struct {
	next http.RoundTripper
	// refused is called when the destination is refused: a retry cannot change that.
	refused func(error)

	mu       sync.Mutex
	requests int
	status   int    // of the last response; 0 when the last request got none
	answer   []byte // the first bytes of the last response body, when not 2xx
	err      error  // of the last request without a response
}

// answerLimit is how much of a sink's answer Send's error quotes.
const answerLimit = 200

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	var answer []byte
	if err == nil && resp.StatusCode/100 != 2 {
		// Read the start of the answer now: the SDK reads it only in some of its paths.
		answer, err = io.ReadAll(io.LimitReader(resp.Body, answerLimit))
		if err != nil {
			_ = resp.Body.Close()
			resp = nil
		} else {
			resp.Body = &prefixedBody{Reader: io.MultiReader(bytes.NewReader(answer), resp.Body), Closer: resp.Body}
		}
	}
	if err != nil && errors.Is(err, egress.ErrRefused) && r.refused != nil {
		r.refused(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.status, r.answer, r.err = 0, answer, err
	if err != nil {
		return nil, err
	}
	r.status = resp.StatusCode
	return resp, nil
}

// prefixedBody is a response body whose start was read already.
type prefixedBody struct {
	io.Reader
	io.Closer
}

// failure explains why the event was not delivered: in its message the class of the failure
// only, in its detail what the sink answered and the network's error.
func (r *recorder) failure(ctx context.Context, res error, where, id string, target *url.URL) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	tries := fmt.Sprintf("%d request", r.requests)
	if r.requests != 1 {
		tries += "s"
	}
	if cause := context.Cause(ctx); cause != nil {
		return &notDelivered{
			msg:   fmt.Sprintf("cloudevent: sending event %q to %s stopped after %s: %v", id, where, tries, cause),
			cause: cause,
		}
	}
	switch {
	case r.status != 0:
		class := egress.StatusClass(r.status)
		answer := fmt.Sprintf("%d %s", r.status, http.StatusText(r.status))
		if text := oneLine(string(r.answer)); text != "" {
			answer += ": " + scrub(text, target)
		}
		if r.status >= 400 && r.status < 500 && !retriable(r.status) {
			msg := fmt.Sprintf("cloudevent: sink %s rejected event %q: %s", where, id, class)
			return &notDelivered{msg: msg, detail: msg + " (" + answer + ")", rejected: true}
		}
		msg := fmt.Sprintf("cloudevent: sink %s did not acknowledge event %q after %s: %s", where, id, tries, class)
		return &notDelivered{msg: msg, detail: msg + " (" + answer + ")"}
	case r.err != nil:
		err := r.err
		// The client's *url.Error quotes the URL, with the user name; the cause does not.
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			err = uerr.Err
		}
		class := egress.Failure(err)
		if errors.Is(err, egress.ErrRefused) {
			msg := fmt.Sprintf("cloudevent: sink %s: %s (not a destination this Kustos may send to)", where, class)
			return &notDelivered{msg: msg, detail: msg + " (" + scrub(err.Error(), target) + ")", refused: true}
		}
		msg := fmt.Sprintf("cloudevent: sink %s could not be reached for event %q (%s): %s", where, id, tries, class)
		return &notDelivered{msg: msg, detail: msg + " (" + scrub(err.Error(), target) + ")"}
	default:
		// No request was made: the SDK failed before it.
		msg := fmt.Sprintf("cloudevent: event %q for %s could not be sent", id, where)
		return &notDelivered{msg: msg, detail: msg + ": " + scrub(res.Error(), target)}
	}
}

// notDelivered is the error of a delivery that failed. Its message is written here, not
// composed of the SDK's and net/http's, which quote the sink URL and its whole answer; that
// answer and the network's error are in detail, for the operator only.
type notDelivered struct {
	msg      string
	detail   string // msg and what the sink answered or the network said ("": msg)
	rejected bool   // ErrRejected
	refused  bool   // egress.ErrRefused
	cause    error  // ctx's, when it ended
}

func (e *notDelivered) Error() string { return e.msg }
func (e *notDelivered) Unwrap() error { return e.cause }
func (e *notDelivered) Is(target error) bool {
	return target == ErrNotDelivered || target == lifecycle.ErrNotDelivered || (e.rejected && target == ErrRejected) || (e.refused && target == egress.ErrRefused)
}

// Detail is the message with what the sink answered (the start of its body) or the network's
// error (addresses, TLS names): for the operator's log, never for the Cleaner's status or Events.
func (e *notDelivered) Detail() string {
	if e.detail == "" {
		return e.msg
	}
	return e.detail
}

// Detail returns err's operator detail when Send returned it, else err's text.
func Detail(err error) string {
	var nd *notDelivered
	if errors.As(err, &nd) {
		return nd.Detail()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// redact returns u without its userinfo, for messages.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// scrub removes u's userinfo, in any form it may take, from a message that came from elsewhere.
func scrub(msg string, u *url.URL) string {
	if u.User == nil {
		return msg
	}
	p, hasPassword := u.User.Password()
	hasPassword = hasPassword && p != ""
	if hasPassword {
		msg = strings.ReplaceAll(msg, u.User.Username()+":"+p, "[redacted]")
	}
	if s := u.User.String(); s != "" {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	if hasPassword {
		msg = strings.ReplaceAll(msg, p, "[redacted]")
		msg = strings.ReplaceAll(msg, url.QueryEscape(p), "[redacted]")
	}
	return msg
}

// oneLine folds a sink's answer into one line of printable text.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
