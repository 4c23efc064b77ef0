package main_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestE2ECLI_EmptySequencesSucceedWithNoBatches(t *testing.T) {
	t.Parallel()
	s := sinktest.Start(t, sink.Options{})

	out := runCLI(t, obj{"writeKey": "wk", "apiHost": s.URL(), "sequences": []obj{seq(0)}, "cdnHost": "ignored"})

	out.wantExit(t, 0, true)
	if out.SentBatches != 0 || len(s.Requests()) != 0 {
		t.Errorf("sentBatches %d, requests %d; want no upload", out.SentBatches, len(s.Requests()))
	}
}

func TestE2ECLI_RefusedEventFailsTheRunButOthersAreDelivered(t *testing.T) {
	t.Parallel()
	s := sinktest.Start(t, sink.Options{})
	events := []obj{
		{"type": "track", "event": "E", "userId": "u", "messageId": "good-1"},
		{"type": "track", "event": "E", "messageId": "no-user"},
		{"type": "track", "event": "E", "userId": "u", "messageId": "good-2"},
	}

	out := runCLI(t, obj{"writeKey": "wk", "apiHost": s.URL(), "sequences": []obj{seq(0, events...)}})

	out.wantExit(t, 1, false)
	if !strings.Contains(out.Error, "sequences[0].events[1]") || !strings.Contains(out.Error, "userId") {
		t.Errorf("error %q does not name the refused event and its field", out.Error)
	}
	if out.SentBatches != 1 || len(s.Events()) != 2 {
		t.Errorf("sentBatches %d, events delivered %d; want the 2 good events in 1 batch", out.SentBatches, len(s.Events()))
	}
}

func TestE2ECLI_RetryWaitPastTheDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	s := sinktest.StartScript(t, "429:ra=120:default")

	out := runCLI(t, obj{"writeKey": "wk", "apiHost": s.URL(), "sequences": []obj{seq(0, sixEvents()[0])}},
		"--timeout", "30s")

	out.wantExit(t, 1, false)
	if n := len(s.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1 (no wait started)", n)
	}
	if !strings.Contains(out.Error, "rate_limit wait") || !strings.Contains(out.Error, "--timeout deadline") ||
		!strings.Contains(out.Error, "1 event(s) not delivered") {
		t.Errorf("error %q does not explain the wait past the deadline", out.Error)
	}
}

func TestE2ECLI_SIGTERMStopsTheRunAndRemovesTheDataDir(t *testing.T) {
	t.Parallel()
	s := sinktest.StartScript(t, "hang:default")
	p := startCLI(t, obj{"writeKey": "wk", "apiHost": s.URL(), "sequences": []obj{seq(0, sixEvents()[0])}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatalf("no upload arrived: %v", err)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := p.finish(t)

	out.wantExit(t, 1, false)
	if !strings.Contains(out.Error, "interrupted") || !strings.Contains(out.Error, "1 event(s) not delivered") {
		t.Errorf("error %q does not report the interruption", out.Error)
	}
}
