package delivery

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
)

// NetErrorClass says whether a failed attempt may have reached the destination. It is a metric
// label and a log field (error_class), so operators can see where duplicates may come from;
// both classes take the counted retry path, since batches are idempotent by messageId.
type NetErrorClass string

// The network error classes.
const (
	// NeverSent: the request cannot have been received: DNS failure, connection refused,
	// unreachable, connect timeout, TLS handshake failure, or (when the destination traces its
	// writes, as httpdest.SendTrace does) any failure before the request was fully written.
	NeverSent NetErrorClass = "never_sent"
	// MaybeSent: the request may have been received and processed: reset, EOF or timeout after
	// it was written, and every error not known to be NeverSent.
	MaybeSent NetErrorClass = "maybe_sent"
)

// ErrRequestNotWritten marks a transport error that happened before the request was fully
// written (httpdest.SendTrace wraps it around such errors); NetworkErrorClass reports it as
// NeverSent.
var ErrRequestNotWritten = errors.New("uploader: request not fully written")

// NetworkErrorClass classifies a transport error by its type, with errors.As and errors.Is
// (never by its message). NeverSent when err is or wraps ErrRequestNotWritten, a *net.DNSError,
// a *net.OpError of a dial (refused, unreachable, connect timeout) or of a received TLS alert,
// syscall.ECONNREFUSED, or a TLS handshake error (tls.RecordHeaderError, tls.AlertError,
// *tls.CertificateVerificationError, x509 verification errors). MaybeSent otherwise, including
// timeouts and context.DeadlineExceeded that are not a dial's.
//
// From the error alone some failures before the request was written look like MaybeSent: a
// TLS handshake timeout, a connection reset during the handshake, or a dial cut short by an
// http.Client.Timeout (whose error hides the dial). A destination that traces its writes
// (httpdest.SendTrace) gives an exact answer.
func NetworkErrorClass(err error) NetErrorClass {
	if neverSent(err) {
		return NeverSent
	}
	return MaybeSent
}

func neverSent(err error) bool {
	var (
		opErr     *net.OpError
		dnsErr    *net.DNSError
		recordErr tls.RecordHeaderError
		alertErr  tls.AlertError
		verifyErr *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		rootsErr  x509.SystemRootsError
	)
	switch {
	case errors.Is(err, ErrRequestNotWritten), errors.Is(err, syscall.ECONNREFUSED):
		return true
	case errors.As(err, &opErr) && (opErr.Op == "dial" || opErr.Op == "remote error"):
		// "remote error" is how crypto/tls reports an alert received from the peer; the
		// alerts that end a connection come during the handshake.
		return true
	case errors.As(err, &dnsErr), errors.As(err, &recordErr), errors.As(err, &alertErr),
		errors.As(err, &verifyErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalid), errors.As(err, &rootsErr):
		return true
	}
	return false
}
