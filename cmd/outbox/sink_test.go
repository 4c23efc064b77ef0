package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
)

// Every fault spec `outbox sink --help` shows, in its text and its examples, is one that
// --fail accepts.
func TestSinkHelp_EveryFaultExampleParses(t *testing.T) {
	cmd := newSinkCommand(&app{})
	long := cmd.Long
	from, to := strings.Index(long, "Examples:"), strings.Index(long, "Steps are played")
	if from < 0 || to < from {
		t.Fatalf("sink --help has no fault examples section:\n%s", long)
	}
	var specs []string
	for _, m := range regexp.MustCompile(`(?m)^  (\S+) {2,}\S`).FindAllStringSubmatch(long[from:to], -1) {
		specs = append(specs, m[1])
	}
	for _, m := range regexp.MustCompile(`--fail '([^']+)'`).FindAllStringSubmatch(cmd.Example, -1) {
		specs = append(specs, m[1])
	}
	if len(specs) < 6 {
		t.Fatalf("found only %d examples (%v) in sink --help", len(specs), specs)
	}
	for _, spec := range specs {
		if _, err := sink.ParseFaults(spec); err != nil {
			t.Errorf("sink --help shows %q, which --fail rejects: %v", spec, err)
		}
	}
}

func TestSink_ModifierWithoutResponse_UsageErrorShowsTheFix(t *testing.T) {
	_, err := runRoot(t, nil, "sink", "--listen", "127.0.0.1:0", "--fail", "503x2,delay=3s:default")
	if exitCode(err) != exitUsage {
		t.Fatalf("exit code %d (err %v), want %d", exitCode(err), err, exitUsage)
	}
	if !strings.Contains(err.Error(), "200:delay=3s:default") {
		t.Errorf("error %q does not show the modifier after a response", err)
	}
}

func TestSink_UnknownResponse_ErrorListsEveryResponseWord(t *testing.T) {
	_, err := runRoot(t, nil, "sink", "--listen", "127.0.0.1:0", "--fail", "boom")
	if exitCode(err) != exitUsage {
		t.Fatalf("exit code %d (err %v), want %d", exitCode(err), err, exitUsage)
	}
	for _, word := range []string{"ok", "reset", "reset-before-body", "reset-after-body", "hang"} {
		if !strings.Contains(err.Error(), word) {
			t.Errorf("error %q does not list %s", err, word)
		}
	}
}
