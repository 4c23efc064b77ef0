package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
)

// benchSink is a loopback pkg/sink that keeps counters only (no bodies, no JSON validation:
// the sink must not compete with what is measured) and remembers when the first batch
// arrived.
type benchSink struct {
	*sink.Server
	first atomic.Int64 // UnixNano of the first decoded batch request; 0 before
}

// startSink starts a sink on 127.0.0.1 playing script.
func startSink(script sink.Script) (*benchSink, error) {
	s := &benchSink{}
	srv, err := sink.Start("127.0.0.1:0", sink.Options{
		Script:        script,
		DiscardEvents: true,
		NoValidate:    true,
		MaxRequests:   16,
		Respond: func(_ sink.Request, scripted sink.Response) sink.Response {
			s.first.CompareAndSwap(0, time.Now().UnixNano())
			return scripted
		},
	})
	if err != nil {
		return nil, err
	}
	s.Server = srv
	return s, nil
}

// endpoint is the sink's batch URL.
func (s *benchSink) endpoint() string { return s.URL() + "/v1/batch" }

// firstAt is when the first batch arrived (zero if none did).
func (s *benchSink) firstAt() time.Time {
	n := s.first.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// pausedScript is a collector that rate-limits everything for 300 s: the worker makes one
// attempt and then sleeps, so it does not compete with what is measured.
func pausedScript() sink.Script {
	return sink.Script{Default: sink.Response{Status: 429, RetryAfter: "300"}}
}

// faultScript answers 20% 503 and 5% 429 + Retry-After: 1, else 200 (faultMixSpec, the drain
// under faults), drawing with seed.
func faultScript(seed uint64) (sink.Script, error) {
	return sink.ParseFaults(fmt.Sprintf("%s,seed=%d", faultMixSpec, seed))
}
