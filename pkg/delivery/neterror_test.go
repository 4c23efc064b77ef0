package delivery_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
)

func TestNetworkErrorClass_ByType(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/batch",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}}
	}
	conn := func(op string, err error) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/batch",
			Err: &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}}
	}
	tests := []struct {
		name string
		err  error
		want delivery.NetErrorClass
	}{
		{"DNS failure is never sent", &url.Error{Op: "Post", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}}, delivery.NeverSent},
		{"bare DNS error is never sent", &net.DNSError{Err: "server misbehaving", Name: "x"}, delivery.NeverSent},
		{"connection refused is never sent", dial(syscall.ECONNREFUSED), delivery.NeverSent},
		{"host unreachable is never sent", dial(syscall.EHOSTUNREACH), delivery.NeverSent},
		{"network unreachable is never sent", dial(syscall.ENETUNREACH), delivery.NeverSent},
		{"connect timeout is never sent", dial(os.ErrDeadlineExceeded), delivery.NeverSent},
		{"bare ECONNREFUSED is never sent", syscall.ECONNREFUSED, delivery.NeverSent},
		{"TLS record header error is never sent", fmt.Errorf("Post: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), delivery.NeverSent},
		{"TLS local alert is never sent", fmt.Errorf("Post: %w", tls.AlertError(40)), delivery.NeverSent},
		{"TLS remote alert is never sent", &net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}, delivery.NeverSent},
		{"untrusted certificate is never sent", &url.Error{Op: "Post", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, delivery.NeverSent},
		{"hostname mismatch is never sent", x509.HostnameError{Host: "example.com"}, delivery.NeverSent},
		{"expired certificate is never sent", x509.CertificateInvalidError{Reason: x509.Expired}, delivery.NeverSent},
		{"an error marked not written is never sent", fmt.Errorf("%w: %w", delivery.ErrRequestNotWritten, io.EOF), delivery.NeverSent},
		{"reset after writing may have been sent", conn("read", syscall.ECONNRESET), delivery.MaybeSent},
		{"broken pipe while writing may have been sent", conn("write", syscall.EPIPE), delivery.MaybeSent},
		{"EOF may have been sent", &url.Error{Op: "Post", Err: io.EOF}, delivery.MaybeSent},
		{"unexpected EOF may have been sent", io.ErrUnexpectedEOF, delivery.MaybeSent},
		{"read timeout may have been sent", conn("read", os.ErrDeadlineExceeded), delivery.MaybeSent},
		{"context deadline may have been sent", &url.Error{Op: "Post", Err: context.DeadlineExceeded}, delivery.MaybeSent},
		{"an unknown error may have been sent", errors.New("malformed HTTP response"), delivery.MaybeSent},
		{"an error message mentioning refusal is not trusted", errors.New("connection refused"), delivery.MaybeSent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := delivery.NetworkErrorClass(tt.err); got != tt.want {
				t.Fatalf("NetworkErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
