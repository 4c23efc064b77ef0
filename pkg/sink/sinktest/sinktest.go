// Package sinktest starts a sink for a test and closes it when the test ends.
package sinktest

import (
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
)

// Start starts a sink on 127.0.0.1 with opts and closes it on t.Cleanup. It fails the test at
// once when the sink cannot start.
func Start(t testing.TB, opts sink.Options) *sink.Server {
	t.Helper()
	s, err := sink.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatalf("sinktest: start sink: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// StartScript starts a sink playing the fault spec (sink.ParseFaults syntax), failing the test
// when the spec does not parse.
func StartScript(t testing.TB, spec string) *sink.Server {
	t.Helper()
	sc, err := sink.ParseFaults(spec)
	if err != nil {
		t.Fatalf("sinktest: %v", err)
	}
	return Start(t, sink.Options{Script: sc})
}
