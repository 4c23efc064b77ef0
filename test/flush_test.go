package test_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// With its output going to a pipe (a log, a CI job), flush prints plain progress lines, not a
// redrawn bar with carriage returns and a made-up rate.
func TestFlush_NotATerminal_PrintsPlainProgressLines(t *testing.T) {
	s := sinktest.StartScript(t, "200:delay=400ms:default")
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_BATCH_INTERVAL":   "1h",
		"OUTBOX_BATCH_MAX_EVENTS": "10",
	})
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	var lines strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&lines, `{"event":"Slow","userId":"u%d"}`+"\n", i)
	}
	if code, out, stderr := runCLI(t, t.TempDir(), cli, lines.String(), "send", "--agent", a.url); code != 0 {
		t.Fatalf("send: exit %d, out %q, err %q", code, out, stderr)
	}
	code, out, stderr := runCLI(t, t.TempDir(), cli, "", "flush", "--wait", "20s", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "flushed: 40 event(s)") {
		t.Fatalf("flush: exit %d, out %q, err %q", code, out, stderr)
	}
	if !strings.Contains(stderr, "flush: ") || !strings.Contains(stderr, " of 40 events uploaded, ") {
		t.Errorf("no plain progress line on stderr: %q", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") || strings.Contains(stderr, "/s") {
		t.Errorf("stderr has a redrawn bar or a rate: %q", stderr)
	}
}
