package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"syscall"
)

// The classes of failure a tenant may be told (Failure's results).
const (
	FailureRefused     = "destination refused"
	FailureDNS         = "DNS failure"
	FailureTimeout     = "timeout"
	FailureConnRefused = "connection refused"
	FailureTLS         = "TLS error"
	FailureCancelled   = "cancelled"
	FailureOther       = "connection failed"
)

// Failure is the class of a request's failure, for the tenant who named the destination:
// whether the destination was refused, not found, slow, closed, spoke bad TLS, or failed
// otherwise. The error itself (addresses the name resolved to, a server's banner, a certificate's
// names) stays in the operator's log.
func Failure(err error) string {
	var (
		dns     *net.DNSError
		netErr  net.Error
		record  tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRefused):
		return FailureRefused
	case errors.As(err, &dns):
		return FailureDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	case errors.Is(err, context.Canceled):
		return FailureCancelled
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailureConnRefused
	case errors.As(err, &record), errors.As(err, &alert), errors.As(err, &verify),
		errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return FailureTLS
	}
	return FailureOther
}

// StatusClass is an HTTP status as a tenant is told it: its class ("HTTP 5xx"), not the
// server's reason phrase or body.
func StatusClass(code int) string {
	if code < 100 || code > 999 {
		return "HTTP status " + strconv.Itoa(code)
	}
	return "HTTP " + strconv.Itoa(code/100) + "xx"
}
