package main

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
)

func TestSourceLine_SaysWhyASourceIsPaused(t *testing.T) {
	until := time.Now().Add(30 * time.Second)
	tests := []struct {
		name string
		src  agent.SourceStatus
		want []string // every one must appear
		not  []string // none may
	}{
		{"a source not paused says nothing of a pause",
			agent.SourceStatus{Name: "a", Events: 3, InFlight: 1},
			[]string{"3 events", "1 in flight"}, []string{"PAUSED"}},
		{"a Retry-After says until when",
			agent.SourceStatus{Name: "a", Paused: true, PausedReason: "retry_after", PausedUntil: &until},
			[]string{"PAUSED: the collector asked to wait (Retry-After) until " + clock(&until)}, nil},
		{"refused credentials say the refusal, the key to fix and the next probe",
			agent.SourceStatus{Name: "a", Paused: true, PausedReason: "auth_refused", PausedCode: "401",
				PausedKey: "sources.a.upload_write_key", PausedUntil: &until},
			[]string{"PAUSED: credentials refused (401): fix sources.a.upload_write_key", "next probe at " + clock(&until)}, nil},
		{"an open breaker says the endpoint is failing",
			agent.SourceStatus{Name: "a", Paused: true, PausedReason: "breaker_open"},
			[]string{"PAUSED: its endpoint is failing"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := sourceLine(tt.src)
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(line, n) {
					t.Errorf("line %q has %q", line, n)
				}
			}
		})
	}
}
