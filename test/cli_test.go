package test_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// runCLI runs outbox to completion in dir and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, dir string, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	p := startIn(t, dir, env, stdin, args...)
	code, _ := p.wait(t, 20*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

func TestRun_ConfigErrors_Exit2NamingTheKey(t *testing.T) {
	cases := []struct {
		name  string
		file  string // written as ./outbox.yaml in the working directory
		env   map[string]string
		args  []string
		wants []string
	}{
		{name: "unknown key in ./outbox.yaml", file: "batch:\n  intervall: 1s\n", wants: []string{"batch.intervall", "outbox.yaml"}},
		{name: "bad duration", env: map[string]string{"OUTBOX_BATCH_INTERVAL": "5"}, wants: []string{"batch.interval", "OUTBOX_BATCH_INTERVAL"}},
		{name: "non-loopback listen without auth", args: []string{"--listen", "0.0.0.0:0"}, wants: []string{"ingest.listen", "ingest.allow_unauthenticated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "outbox.yaml"), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"OUTBOX_DATA_DIR": filepath.Join(dir, "data")}
			for k, v := range tc.env {
				env[k] = v
			}
			code, _, stderr := runCLI(t, dir, env, "", append([]string{"run"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestRun_SecondAgentOnSameDataDir_Exits1AtOnce(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	startAgent(t, dir, s.URL()+"/v1/batch", nil)

	env := agentEnv(dir, testutil.FreeAddr(t), s.URL()+"/v1/batch", nil)
	p := start(t, t.TempDir(), env, "run")
	code, took := p.wait(t, 10*time.Second)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if took > 5*time.Second {
		t.Errorf("took %s to give up; a locked data directory must fail at once", took)
	}
	if msg := p.stderr.String(); !strings.Contains(msg, "in use by another outbox process") || !strings.Contains(msg, dir) {
		t.Errorf("stderr does not say the data directory is in use:\n%s", msg)
	}
}

func TestConfigCommand_RedactsSecretsAndShowsSources(t *testing.T) {
	dir := t.TempDir()
	file := "ingest:\n  token: tok-in-file-secret\nupload:\n  headers:\n    Proxy-Authorization: Bearer hdr-secret\n"
	if err := os.WriteFile(filepath.Join(dir, "outbox.yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OUTBOX_UPLOAD_WRITE_KEY": "wk-env-secret", "OUTBOX_INGEST_WRITE_KEYS": "k1-secret,k2-secret"}
	code, out, stderr := runCLI(t, dir, env, "", "config", "--data-dir", "/srv/outbox")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"tok-in-file-secret", "hdr-secret", "wk-env-secret", "k1-secret", "k2-secret"} {
		if strings.Contains(out+stderr, secret) {
			t.Errorf("outbox config printed the secret %q:\n%s", secret, out)
		}
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	wants := map[string][]string{
		"upload.write_key":  {"<redacted>", "env OUTBOX_UPLOAD_WRITE_KEY"},
		"ingest.write_keys": {"[<redacted>, <redacted>]", "env OUTBOX_INGEST_WRITE_KEYS"},
		"ingest.token":      {"<redacted>", "file ./outbox.yaml"},
		"upload.headers":    {"proxy-authorization: <redacted>"},
		"data_dir":          {"/srv/outbox", "flag --data-dir"},
		"batch.interval":    {"5s", "default"},
	}
	for key, parts := range wants {
		for _, p := range parts {
			if !strings.Contains(lines[key], p) {
				t.Errorf("line for %s = %q, want it to contain %q", key, lines[key], p)
			}
		}
	}
}

func TestClientCommands_SendStatusFlushDead_AgainstRunningAgent(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{"OUTBOX_BATCH_INTERVAL": "1h"})
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	cwd := t.TempDir()

	code, out, stderr := runCLI(t, cwd, cli, "", "send", "--agent", a.url,
		`{"type":"track","event":"CLI","userId":"u-cli-1"}`, `{"event":"Inferred","anonymousId":"a-cli-2"}`)
	if code != 0 || !strings.Contains(out, "sent 2 event(s)") {
		t.Fatalf("send: exit %d, out %q, err %q", code, out, stderr)
	}

	lines := `{"type":"identify","userId":"u-stdin-1","traits":{"plan":"pro"}}` + "\n\n" + `{"event":"Piped","userId":"u-stdin-2"}` + "\n"
	code, out, stderr = runCLI(t, cwd, cli, lines, "send", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "sent 2 event(s)") {
		t.Fatalf("send from stdin: exit %d, out %q, err %q", code, out, stderr)
	}
	code, _, stderr = runCLI(t, cwd, cli, `{"userId":"no-type"}`, "send", "--agent", a.url)
	if code != 2 || !strings.Contains(stderr, "stdin line 1") {
		t.Errorf("send of an event with no inferable type: exit %d, err %q; want 2 naming the line", code, stderr)
	}

	code, out, stderr = runCLI(t, cwd, cli, "", "status", "--json", "--agent", a.url)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	var st struct {
		Queue struct{ Events int64 }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Queue.Events != 4 {
		t.Fatalf("status --json = %s (%v), want 4 queued events (batch.interval is 1h)", out, err)
	}

	code, out, stderr = runCLI(t, cwd, cli, "", "flush", "--wait", "10s", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "queue is empty") {
		t.Fatalf("flush: exit %d, out %q, err %q", code, out, stderr)
	}
	if got := s.Stats().Unique; got != 4 {
		t.Errorf("after flush the sink has %d events, want 4", got)
	}

	code, out, stderr = runCLI(t, cwd, cli, "", "status", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "0 events") || !strings.Contains(out, "not waiting") {
		t.Errorf("status table: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}

	code, out, stderr = runCLI(t, cwd, cli, "", "dead", "list", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "no dead letters") {
		t.Errorf("dead list: exit %d, out %q, err %q", code, out, stderr)
	}

	// A stopped agent: the client commands say how to fix it and exit 1.
	code, _, stderr = runCLI(t, cwd, cli, "", "status", "--agent", "http://"+testutil.FreeAddr(t))
	if code != 1 || !strings.Contains(stderr, "outbox run") {
		t.Errorf("status against nothing: exit %d, stderr %q", code, stderr)
	}
}
