package httpdest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// manualDeadline is a context whose deadline the test triggers: Done closes and Err becomes
// context.DeadlineExceeded when expire is called, so a timeout is tested without waiting for one.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline() *manualDeadline {
	return &manualDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (m *manualDeadline) Done() <-chan struct{} { return m.done }
func (m *manualDeadline) expire()               { m.once.Do(func() { close(m.done) }) }
func (m *manualDeadline) Err() error {
	select {
	case <-m.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// silentServer is a rawServer that accepts connections and never answers (nor completes a
// TLS handshake); accepted receives once per connection.
func silentServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 2)
	addr = rawServer(t, func(c *net.TCPConn, done <-chan struct{}) {
		defer c.Close()
		select {
		case ch <- struct{}{}:
		case <-done:
		}
		<-done
	})
	return addr, ch
}

// rawServer accepts TCP connections on 127.0.0.1 and hands each to handle, with a channel
// closed when the test ends (a handler that holds a connection waits on it).
func rawServer(t *testing.T, handle func(c *net.TCPConn, done <-chan struct{})) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { handle(c.(*net.TCPConn), done) })
		}
	})
	return ln.Addr().String()
}

// readRequest reads one whole HTTP request (headers and body) from c.
func readRequest(c net.Conn) error {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

// attempt posts a small batch the way the uploader does, optionally through a SendTrace, and
// returns the classified outcome.
func attempt(t *testing.T, client *http.Client, ctx context.Context, rawURL string, traced bool) delivery.Outcome {
	t.Helper()
	var st httpdest.SendTrace
	if traced {
		ctx = st.Context(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(`{"batch":[{"type":"track"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if traced {
		err = st.Wrap(err)
	}
	if err == nil {
		t.Fatalf("POST %s succeeded with %d; the test expects a transport error", rawURL, resp.StatusCode)
	}
	return httpdest.Classify(resp, err, time.Now())
}

func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &http.Client{Transport: tr}
}

func TestNetworkErrorClass_RealSockets(t *testing.T) {
	closedPort := func(t *testing.T) string { return "http://" + testutil.FreeAddr(t) + "/v1/batch" }
	resetAfterRequest := func(t *testing.T) string {
		return "http://" + rawServer(t, func(c *net.TCPConn, _ <-chan struct{}) {
			if readRequest(c) == nil {
				_ = c.SetLinger(0) // Close sends RST, not FIN
			}
			_ = c.Close()
		}) + "/v1/batch"
	}
	untrustedTLS := func(t *testing.T) string {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(srv.Close)
		return srv.URL + "/v1/batch"
	}
	tests := []struct {
		name   string
		server func(*testing.T) string
		want   delivery.NetErrorClass
	}{
		{"a closed port is never sent", closedPort, delivery.NeverSent},
		{"a reset after the request was read may have been sent", resetAfterRequest, delivery.MaybeSent},
		{"an untrusted self-signed certificate is never sent", untrustedTLS, delivery.NeverSent},
	}
	for _, tt := range tests {
		for _, traced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/traced=%v", tt.name, traced), func(t *testing.T) {
				o := attempt(t, newClient(), context.Background(), tt.server(t), traced)
				if o.Class != delivery.ClassRetryable || o.NetError != tt.want || o.Status != 0 {
					t.Fatalf("got %+v (%v), want retryable %s", o, o.Err, tt.want)
				}
			})
		}
	}
}

// TestNetworkErrorClass_ServerNeverAnswers: a listener that reads the request and never
// answers; the attempt ends by a client timeout and may have been sent.
func TestNetworkErrorClass_ServerNeverAnswers(t *testing.T) {
	read := make(chan struct{}, 1)
	addr := rawServer(t, func(c *net.TCPConn, done <-chan struct{}) {
		defer c.Close()
		if readRequest(c) == nil {
			select {
			case read <- struct{}{}:
			case <-done:
			}
		}
		<-done
	})
	rawURL := "http://" + addr + "/v1/batch"

	t.Run("http.Client.Timeout", func(t *testing.T) {
		// The server never answers, so a short client timeout is the only way this attempt ends;
		// nothing is asserted about timing.
		client := newClient()
		client.Timeout = 50 * time.Millisecond
		o := attempt(t, client, context.Background(), rawURL, false)
		if o.Class != delivery.ClassRetryable || o.NetError != delivery.MaybeSent || !errors.Is(o.Err, context.DeadlineExceeded) {
			t.Fatalf("got %+v (%v), want retryable maybe_sent matching context.DeadlineExceeded", o, o.Err)
		}
		<-read
	})
	t.Run("context deadline after the request was read, traced", func(t *testing.T) {
		ctx := newManualDeadline()
		go func() { <-read; ctx.expire() }()
		o := attempt(t, newClient(), ctx, rawURL, true)
		if o.Class != delivery.ClassRetryable || o.NetError != delivery.MaybeSent || !errors.Is(o.Err, context.DeadlineExceeded) {
			t.Fatalf("got %+v (%v), want retryable maybe_sent matching context.DeadlineExceeded", o, o.Err)
		}
	})
}

// TestSendTrace_TimeoutDuringTLSHandshakeIsNeverSent: a listener that accepts but never
// completes the TLS handshake. From the error alone the timeout looks maybe sent; the trace
// knows the request was never written.
func TestSendTrace_TimeoutDuringTLSHandshakeIsNeverSent(t *testing.T) {
	addr, accepted := silentServer(t)
	for _, tt := range []struct {
		traced bool
		want   delivery.NetErrorClass
	}{{false, delivery.MaybeSent}, {true, delivery.NeverSent}} {
		t.Run(fmt.Sprintf("traced=%v", tt.traced), func(t *testing.T) {
			ctx := newManualDeadline()
			go func() { <-accepted; ctx.expire() }()
			o := attempt(t, newClient(), ctx, "https://"+addr+"/v1/batch", tt.traced)
			if o.Class != delivery.ClassRetryable || o.NetError != tt.want || !errors.Is(o.Err, context.DeadlineExceeded) {
				t.Fatalf("got %+v (%v), want retryable %s matching context.DeadlineExceeded", o, o.Err, tt.want)
			}
		})
	}
}

func TestSendTrace_CanceledContextStaysAborted(t *testing.T) {
	addr, accepted := silentServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-accepted; cancel() }()
	o := attempt(t, newClient(), ctx, "http://"+addr+"/v1/batch", true)
	if o.Class != delivery.ClassAborted || !errors.Is(o.Err, context.Canceled) || o.NetError != "" {
		t.Fatalf("got %+v (%v), want aborted with context.Canceled", o, o.Err)
	}
}

func TestSendTrace_WrapKeepsNilAndWrittenErrors(t *testing.T) {
	var st httpdest.SendTrace
	if st.Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	err := st.Wrap(io.EOF)
	if !errors.Is(err, delivery.ErrRequestNotWritten) || !errors.Is(err, io.EOF) {
		t.Fatalf("Wrap before any write = %v, want ErrRequestNotWritten wrapping io.EOF", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(st.Context(context.Background()), http.MethodPost, srv.URL, strings.NewReader("{}"))
	resp, err := newClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !st.Written() || st.Wrap(io.EOF) != io.EOF {
		t.Fatal("after a written request, Wrap must return the error unchanged")
	}
}
