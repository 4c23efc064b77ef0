package test_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestRun_SymlinkedDataFile_Exits3AndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "planted.db")
	if err := os.Symlink(target, filepath.Join(dir, "outbox.db")); err != nil {
		t.Fatal(err)
	}
	p := start(t, t.TempDir(), agentEnv(dir, testutil.FreeAddr(t), "http://127.0.0.1:9/v1/batch", nil), "run")
	code, _ := p.wait(t, 20*time.Second)
	if code != 3 || !strings.Contains(p.stderr.String(), "links to") || !strings.Contains(p.stderr.String(), "does not follow a link") {
		t.Fatalf("outbox run on a symlinked outbox.db: exit %d, stderr:\n%s\nwant 3 and a message about the link", code, p.stderr.String())
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

func TestRun_WorldWritableDataDir_IsUsedWithAWarning(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	a := startAgent(t, dir, s.URL()+"/v1/batch", nil)
	a.waitLog(t, 10*time.Second, "level=WARN", "writable by its group or by everyone (mode 0777)", "chmod 0750")
}

// publicDir is a directory under the system temp dir that every user may read and enter.
func publicDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "outbox-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRun_LockPermissionDenied_Exits2WithAHint(t *testing.T) {
	pub := publicDir(t)
	dataDir := filepath.Join(pub, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "outbox")
	copyFile(t, outboxBin, bin)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run")
	cmd.Env = environ(agentEnv(dataDir, testutil.FreeAddr(t), "http://127.0.0.1:9/v1/batch", nil))
	cmd.Dir = pub
	if os.Geteuid() == 0 {
		// root may write anywhere: the agent runs as nobody, as a supervisor with the wrong
		// User= would start it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(dataDir, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "permission denied") ||
		!strings.Contains(string(out), "run outbox as the user that owns the data directory") {
		t.Fatalf("outbox run without permission on its data directory: %v, output:\n%s\nwant exit 2 with a hint", err, out)
	}
}

func TestIngest_JSONACollectorCannotReadIs400AndStoresNothing(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"OUTBOX_BATCH_INTERVAL": "1h"})
	good := `{"type":"track","userId":"u","event":"E"}`
	for _, tc := range []struct{ name, bad, want string }{
		{"invalid UTF-8", "{\"type\":\"track\",\"userId\":\"u\xff\",\"event\":\"E\"}", `"event 1: userId: invalid JSON`},
		{"a lone surrogate", `{"type":"track","userId":"u","event":"E","properties":{"n":"\ud800"}}`, `"event 1: properties: invalid JSON`},
		{"a number beyond float64", `{"type":"track","userId":"u","event":"E","properties":{"n":1e999}}`, `"event 1: properties: invalid JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, a.url+"/v1/batch", []byte(`{"batch":[`+good+`,`+tc.bad+`]}`), false)
			if code != 400 || !strings.Contains(body, tc.want) || !strings.Contains(body, `"index":1`) {
				t.Fatalf("= %d %s, want 400 naming event 1 and its field", code, body)
			}
		})
	}
	code, body := post(t, a.url+"/v1/batch", []byte(`not json`), false)
	if code != 400 || !strings.Contains(body, "not JSON") || strings.Contains(body, "got null") {
		t.Errorf("not json = %d %s, want 400 saying the body is not JSON", code, body)
	}
	code, out, stderr := runCLI(t, t.TempDir(), nil, "", "status", "--json", "--agent", a.url)
	if code != 0 || !strings.Contains(out, `"events": 0`) {
		t.Errorf("status after the refused requests: exit %d, out %s, err %s; want nothing queued", code, out, stderr)
	}
}
