package testutil_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
)

// endTB records how MissingTool ends a test, instead of ending the real one.
type endTB struct {
	testing.TB
	failed, skipped string
}

func (e *endTB) Helper()                        {}
func (e *endTB) Fatalf(format string, a ...any) { e.failed = fmt.Sprintf(format, a...) }
func (e *endTB) Skipf(format string, a ...any)  { e.skipped = fmt.Sprintf(format, a...) }

func TestMissingTool_FailsUnderCIAndSkipsElsewhere(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		fail bool
	}{
		{"true", true},
		{"1", true},
		{"TRUE", true},
		{"", false},
		{"false", false},
		{"0", false},
		{"yes", false}, // not a boolean: a local run
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			e := &endTB{TB: t}
			testutil.MissingTool(e, "no frobnicator on PATH")
			msg := e.skipped
			if tc.fail {
				msg = e.failed
			}
			if (e.failed != "") != tc.fail || (e.skipped != "") == tc.fail {
				t.Fatalf("failed %q, skipped %q; want it to fail: %v", e.failed, e.skipped, tc.fail)
			}
			if !strings.Contains(msg, "no frobnicator on PATH") {
				t.Errorf("message %q does not say why", msg)
			}
		})
	}
}
