package github

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Classes of failure. Client methods return *APIError values for which errors.Is matches one
// of these (and the underlying go-github or transport error).
var (
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("conflict")
	ErrValidation    = errors.New("validation failed")
	ErrAlreadyExists = errors.New("already exists") // a 422 that also matches ErrValidation
	ErrRateLimited   = errors.New("rate limited")
	ErrNotMergeable  = errors.New("not mergeable")
	ErrUnauthorized  = errors.New("unauthorized or forbidden")
	ErrUnavailable   = errors.New("github unavailable") // 5xx, timeouts, network
	// ErrCredentials: GitHub refused the configured credentials (wrong App ID, private key,
	// installation ID, repository, or token), or the token file cannot be used. Retrying
	// without a configuration change cannot help; see *CredentialsError for the flag to fix.
	ErrCredentials = errors.New("github credentials misconfigured")
)

// APIError is a classified failure of one Client call.
type APIError struct {
	Op         string    // e.g. "create pull request"
	StatusCode int       // 0 when no response
	Message    string    // GitHub's message, e.g. "A pull request already exists for acme:kustos/x."
	Reset      time.Time // for ErrRateLimited: when to try again (zero if unknown)
	kinds      []error
	err        error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "github %s: %v", e.Op, e.kinds[0])
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	} else if e.err != nil && e.StatusCode == 0 {
		b.WriteString(": " + e.err.Error())
	}
	if !e.Reset.IsZero() {
		b.WriteString(", retry after " + e.Reset.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Unwrap exposes the classes and the underlying error to errors.Is/As.
func (e *APIError) Unwrap() []error {
	out := append([]error{}, e.kinds...)
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}

// RetryAt implements lifecycle.RetryAfter: when a rate-limited call may be retried (Reset,
// when known).
func (e *APIError) RetryAt() (time.Time, bool) { return e.Reset, !e.Reset.IsZero() }

// RetryAt returns when a rate-limited call may be retried. lifecycle.RetryAt finds the same
// through the RetryAt methods of *APIError and *RateLimitError.
func RetryAt(err error) (time.Time, bool) {
	var ae *APIError
	if errors.As(err, &ae) && !ae.Reset.IsZero() {
		return ae.Reset, true
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return rl.Reset, true
	}
	return time.Time{}, false
}

var kindLabels = map[error]string{
	ErrNotFound: "not_found", ErrConflict: "conflict", ErrValidation: "validation",
	ErrRateLimited: "rate_limited", ErrNotMergeable: "not_mergeable",
	ErrUnauthorized: "unauthorized", ErrUnavailable: "unavailable", ErrCredentials: "credentials",
}

// classify wraps err from a go-github call with op and a class, and counts it.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	ae := &APIError{Op: op, err: err}
	var (
		cred  *CredentialsError
		ours  *RateLimitError
		prim  *gh.RateLimitError
		abuse *gh.AbuseRateLimitError
		er    *gh.ErrorResponse
		ne    net.Error
	)
	switch {
	case errors.Is(err, ErrRefMoved):
		ae.kinds = []error{ErrRefMoved}
	case errors.As(err, &cred):
		// before the *url.Error around it, which would read as a network fault
		ae.kinds, ae.StatusCode, ae.Message = []error{ErrCredentials}, cred.StatusCode, cred.detail()
	case errors.As(err, &ours):
		ae.kinds, ae.Reset = []error{ErrRateLimited}, ours.Reset
	case errors.As(err, &prim):
		ae.kinds, ae.Reset, ae.Message = []error{ErrRateLimited}, prim.Rate.Reset.Time, prim.Message
		if prim.Response != nil {
			ae.StatusCode = prim.Response.StatusCode
		}
	case errors.As(err, &abuse):
		ae.kinds, ae.Message = []error{ErrRateLimited}, abuse.Message
		if abuse.Response != nil {
			ae.StatusCode = abuse.Response.StatusCode
		}
		if d := abuse.GetRetryAfter(); d > 0 {
			ae.Reset = time.Now().Add(d)
		}
	case errors.As(err, &er):
		ae.Message = errorMessage(er)
		if er.Response != nil {
			ae.StatusCode = er.Response.StatusCode
		}
		switch c := ae.StatusCode; {
		case c == http.StatusNotFound || c == http.StatusGone:
			ae.kinds = []error{ErrNotFound}
		case c == http.StatusConflict:
			ae.kinds = []error{ErrConflict}
		case c == http.StatusUnprocessableEntity:
			ae.kinds = []error{ErrValidation}
			switch lm := strings.ToLower(ae.Message); {
			case strings.Contains(lm, "already exists"):
				ae.kinds = append(ae.kinds, ErrAlreadyExists)
			case strings.Contains(lm, "not a fast forward"):
				ae.kinds = append(ae.kinds, ErrConflict) // the branch moved: rebuild or force
			}
		case c == http.StatusMethodNotAllowed:
			ae.kinds = []error{ErrNotMergeable}
		case c == http.StatusTooManyRequests:
			ae.kinds = []error{ErrRateLimited}
			if d, ok := retryAfter(er.Response.Header, time.Now()); ok {
				ae.Reset = time.Now().Add(d)
			}
		case c == http.StatusUnauthorized || c == http.StatusForbidden:
			ae.kinds = []error{ErrUnauthorized}
		case c >= 500:
			ae.kinds = []error{ErrUnavailable}
		}
	case errors.Is(err, context.Canceled):
		// the caller gave up: not a GitHub fault
		ae.kinds = []error{context.Canceled}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		ae.kinds = []error{ErrUnavailable}
	}
	if len(ae.kinds) == 0 {
		ae.kinds = []error{errors.New("request failed")}
		errorsTotal.WithLabelValues("other").Inc()
	} else if l, ok := kindLabels[ae.kinds[0]]; ok {
		errorsTotal.WithLabelValues(l).Inc()
	}
	return ae
}

// errorMessage joins GitHub's message with its per-field errors.
func errorMessage(er *gh.ErrorResponse) string {
	parts := []string{}
	if er.Message != "" {
		parts = append(parts, er.Message)
	}
	for _, e := range er.Errors {
		switch {
		case e.Message != "":
			parts = append(parts, e.Message)
		case e.Code != "":
			parts = append(parts, strings.TrimSpace(e.Resource+" "+e.Field+" "+e.Code))
		}
	}
	return strings.Join(parts, ": ")
}
