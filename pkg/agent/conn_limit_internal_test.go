package agent

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLimitListener_AcceptsTheNextConnectionOnlyWhenOneCloses(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitListener(inner, 2)
	defer l.Close()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String()) // the kernel queues them
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	third := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			third <- c
		}
		close(third)
	}()
	select {
	case <-third:
		t.Fatal("a third connection was accepted while two were open (max 2)")
	default:
	}
	_ = first.Close()
	_ = first.Close() // a second Close frees nothing more
	select {
	case c, ok := <-third:
		if !ok {
			t.Fatal("Accept failed after a slot was freed")
		}
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the third connection was not accepted after the first closed")
	}
	if n := len(l.(*connLimiter).sem); n != 1 {
		t.Errorf("%d slots held, want 1 (the second connection)", n)
	}
}

func TestLimitListener_CloseEndsAWaitingAccept(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitListener(inner, 1)
	c, _ := net.Dial("tcp", inner.Addr().String())
	defer c.Close()
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	_ = l.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("waiting Accept after Close = %v, want net.ErrClosed", err)
	}
}

func TestBodyFailed_ATimedOutReadIs408WithoutSocketAddresses(t *testing.T) {
	// A real read deadline on a real connection: the error the server's body reader gives.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(-time.Second))
	_, readErr := c.Read(make([]byte, 1))
	if readErr == nil {
		t.Fatal("read past its deadline succeeded")
	}
	a := &Agent{cfg: Config{}.withDefaults()}
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"a read deadline is 408", readErr, http.StatusRequestTimeout},
		{"a reset connection is 400", &net.OpError{Op: "read", Net: "tcp", Addr: c.LocalAddr(), Err: errors.New("connection reset by peer")}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			a.bodyFailed(rec, classifyReadErr(tc.err), false)
			if rec.Code != tc.code {
				t.Fatalf("answer %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			if strings.Contains(rec.Body.String(), "127.0.0.1") {
				t.Errorf("answer %s names a socket address", rec.Body)
			}
		})
	}
}
