package test_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// A rejected send names the bad event once, by its index among everything sent (not within the
// request that carried it), and stores none of that request's events.
func TestSend_BadEvent_NamedOnceByItsIndexAmongAllSent(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{"OUTBOX_BATCH_INTERVAL": "1h"})
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	cases := []struct {
		name string
		good int // good events before the bad one
		want string
	}{
		{"bad event in the first request", 1, "event 1"},
		{"bad event in the second request (send splits at 500 events)", 502, "event 502"},
	}
	eventRef := regexp.MustCompile(`event \d+`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines strings.Builder
			for i := 0; i < tc.good; i++ {
				fmt.Fprintf(&lines, `{"event":"Good","userId":"u%d"}`+"\n", i)
			}
			lines.WriteString(`{"type":"track","event":"No user"}` + "\n")
			code, _, stderr := runCLI(t, t.TempDir(), cli, lines.String(), "send", "--agent", a.url)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			refs := eventRef.FindAllString(stderr, -1)
			if len(refs) != 1 || refs[0] != tc.want {
				t.Errorf("stderr names %v, want %q once:\n%s", refs, tc.want, stderr)
			}
			if !strings.Contains(stderr, "400") {
				t.Errorf("stderr does not give the status:\n%s", stderr)
			}
		})
	}
}
