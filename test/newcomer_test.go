package test_test

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
)

// `outbox sink --print` prints every event it accepts, one JSON line each, as an agent
// delivers them.
func TestSink_Print_ShowsEachEventAnAgentDelivers(t *testing.T) {
	sinkAddr := testutil.FreeAddr(t)
	collector := start(t, t.TempDir(), nil, "sink", "--listen", sinkAddr, "--print")
	if err := collector.stdout.waitFor(ctxFor(t, 10*time.Second), "sink listening on"); err != nil {
		t.Fatalf("sink did not start:\n%s%s", collector.stdout.String(), collector.stderr.String())
	}
	dir := t.TempDir()
	a := startAgent(t, dir, "http://"+sinkAddr+"/v1/batch", nil)
	code, _, stderr := runCLI(t, t.TempDir(), map[string]string{"OUTBOX_DATA_DIR": dir}, `{"event":"Signed Up","userId":"u1","properties":{"plan":"pro"}}`+"\n", "send", "--agent", a.url, "-")
	if code != 0 {
		t.Fatalf("outbox send -: exit %d\n%s", code, stderr)
	}
	if err := collector.stdout.waitFor(ctxFor(t, 10*time.Second), `"properties":{"plan":"pro"}`); err != nil {
		t.Fatalf("the sink did not print the event:\n%s", collector.stdout.String())
	}
	for _, line := range strings.Split(collector.stdout.String(), "\n") {
		if strings.Contains(line, `"plan":"pro"`) && !strings.HasPrefix(line, "{") {
			t.Errorf("the event is not a JSON line of its own: %q", line)
		}
	}
}

func TestRun_PrintWithoutDev_IsAUsageError(t *testing.T) {
	code, _, stderr := runCLI(t, t.TempDir(), map[string]string{"OUTBOX_DATA_DIR": t.TempDir()}, "", "run", "--print")
	if code != 2 || !strings.Contains(stderr, "--print needs --dev") || !strings.Contains(stderr, "outbox sink --print") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 naming --dev and outbox sink --print", code, stderr)
	}
}

// The command line adds its own way to another directory to the library's message.
func TestRun_LockedDataDir_NamesTheDataDirFlag(t *testing.T) {
	dir := t.TempDir()
	startAgent(t, dir, "http://"+testutil.FreeAddr(t)+"/v1/batch", nil)
	p := start(t, t.TempDir(), agentEnv(dir, testutil.FreeAddr(t), "http://127.0.0.1:1/v1/batch", nil), "run")
	if code, _ := p.wait(t, 10*time.Second); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if msg := p.stderr.String(); !strings.Contains(msg, "use another data directory (--data-dir)") {
		t.Errorf("stderr does not name --data-dir:\n%s", msg)
	}
}
