package uploader

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
)

// NetErrorClass says whether a failed attempt may have reached the collector. It is a metric
// label and a log field (error_class), so operators can see where duplicates may come from;
// both classes take the counted retry path, since batches are idempotent by messageId.
type NetErrorClass string

// The network error classes.
const (
	// NeverSent: the request cannot have been received: DNS failure, connection refused,
	// unreachable, connect timeout, TLS handshake failure, or (with a SendTrace) any failure
	// before the request was fully written.
	NeverSent NetErrorClass = "never_sent"
	// MaybeSent: the request may have been received and processed: reset, EOF or timeout after
	// it was written, and every error not known to be NeverSent.
	MaybeSent NetErrorClass = "maybe_sent"
)

// ErrRequestNotWritten is wrapped by SendTrace.Wrap around a transport error that happened
// before the request was fully written; NetworkErrorClass reports it as NeverSent.
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
// http.Client.Timeout (whose error hides the dial). Use a SendTrace for an exact answer.
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

// SendTrace records, through net/http/httptrace, whether an attempt's request was fully written
// to the connection, which makes the NeverSent/MaybeSent split exact. Use one per attempt:
//
//	var st uploader.SendTrace
//	req, _ := http.NewRequestWithContext(st.Context(ctx), "POST", url, body)
//	resp, err := client.Do(req)
//	err = st.Wrap(err) // then Classify(resp, err, now)
//
// Without it, classification is from the error alone (see NetworkErrorClass). The zero value is
// ready to use and safe for concurrent use.
type SendTrace struct {
	written atomic.Bool
}

// Context returns ctx with a client trace that records the write. Each new connection attempt
// (a transport retry, a followed redirect) starts as not written; WroteRequest without an error
// marks it written. Hooks already in ctx keep running.
func (s *SendTrace) Context(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { s.written.Store(false) },
		WroteRequest: func(i httptrace.WroteRequestInfo) { s.written.Store(i.Err == nil) },
	})
}

// Written reports whether the last request was fully written.
func (s *SendTrace) Written() bool { return s.written.Load() }

// Wrap returns err unchanged when it is nil or the request was fully written; otherwise err
// wrapped with ErrRequestNotWritten (errors.Is still reaches err, context.Canceled included).
// Call it after http.Client.Do returned, when the transport's write has finished.
func (s *SendTrace) Wrap(err error) error {
	if err == nil || s.Written() {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRequestNotWritten, err)
}
