package httpdest

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/outboxhq/outbox/pkg/delivery"
)

// SendTrace records, through net/http/httptrace, whether an attempt's request was fully written
// to the connection, which makes the NeverSent/MaybeSent split exact. Use one per attempt:
//
//	var st httpdest.SendTrace
//	req, _ := http.NewRequestWithContext(st.Context(ctx), "POST", url, body)
//	resp, err := client.Do(req)
//	err = st.Wrap(err) // then Classify(resp, err, now)
//
// Without it, classification is from the error alone (see delivery.NetworkErrorClass). The zero
// value is ready to use and safe for concurrent use.
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
// wrapped with delivery.ErrRequestNotWritten (errors.Is still reaches err, context.Canceled included).
// Call it after http.Client.Do returned, when the transport's write has finished.
func (s *SendTrace) Wrap(err error) error {
	if err == nil || s.Written() {
		return err
	}
	return fmt.Errorf("%w: %w", delivery.ErrRequestNotWritten, err)
}
