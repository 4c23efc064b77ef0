package test_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// With its output going to a pipe (a log, a CI job), flush prints plain progress lines, not a
// redrawn bar with carriage returns and a made-up rate.
func TestFlush_NotATerminal_PrintsPlainProgressLines(t *testing.T) {
	s := sinktest.StartScript(t, "200:delay=300ms:default")
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_BATCH_INTERVAL":   "1h",
		"OUTBOX_BATCH_MAX_EVENTS": "10",
	})
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	var lines strings.Builder
	// The worker starts on full batches during the send; 10 batches of 300 ms leave the flush
	// several polls' worth of work.
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&lines, `{"event":"Slow","userId":"u%d"}`+"\n", i)
	}
	if code, out, stderr := runCLI(t, t.TempDir(), cli, lines.String(), "send", "--agent", a.url); code != 0 {
		t.Fatalf("send: exit %d, out %q, err %q", code, out, stderr)
	}
	code, out, stderr := runCLI(t, t.TempDir(), cli, "", "flush", "--wait", "20s", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "flushed: ") {
		t.Fatalf("flush: exit %d, out %q, err %q", code, out, stderr)
	}
	if !regexp.MustCompile(`(?m)^flush: \d+ of \d+ events uploaded, \d+ left$`).MatchString(stderr) {
		t.Errorf("no plain progress line on stderr: %q", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") || strings.Contains(stderr, "/s") {
		t.Errorf("stderr has a redrawn bar or a rate: %q", stderr)
	}
}
