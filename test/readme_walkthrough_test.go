package test_test

import (
	"context"
	"errors"
	"net"
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

// The README's walkthroughs are run here as written: each test takes a ```sh block from
// README.md (found by a line it holds), runs its commands one by one with bash against the
// built binary, and checks what the README says they show. Only what cannot run on a test
// machine is changed, and only by rewrite: fixed ports become free ones, /etc and /var paths
// become temporary ones, and `outbox` and `bin/outbox` are the binary under test.

// shellLine is one command of a README shell block and its trailing comment.
type shellLine struct {
	cmd, comment string
}

// readmeShellBlock returns the commands of the one ```sh block of README.md that holds marker:
// continuation lines joined, comment-only lines dropped.
func readmeShellBlock(t *testing.T, marker string) []shellLine {
	t.Helper()
	blocks := readmeBlocks(t, "sh")
	var found []string
	for _, b := range blocks {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md has %d ```sh blocks holding %q, want 1", len(found), marker)
	}
	var lines []shellLine
	pending := ""
	for _, raw := range strings.Split(found[0], "\n") {
		line := pending + raw
		pending = ""
		if strings.HasSuffix(strings.TrimRight(line, " "), `\`) {
			pending = strings.TrimSuffix(strings.TrimRight(line, " "), `\`) + " "
			continue
		}
		cmd, comment := splitComment(line)
		if strings.TrimSpace(cmd) == "" {
			continue
		}
		lines = append(lines, shellLine{cmd: strings.TrimSpace(cmd), comment: strings.TrimSpace(comment)})
	}
	return lines
}

// readmeBlocks returns the text of every fenced block of README.md in the given language.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && line == "```"+lang:
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// splitComment cuts a shell line at its first # that starts a comment (after a blank and
// outside quotes).
func splitComment(line string) (cmd, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}

// shellSession runs README commands in one working directory with one environment.
type shellSession struct {
	t       *testing.T
	dir     string
	env     []string
	rewrite []string // old, new pairs applied to every command
	waitFor []string // addresses a background command may listen on
	// after, when set, runs after each command (the rewritten text): a wait a reader
	// does by looking, such as for a signal's effect.
	after func(cmd string)
}

// newShellSession prepares dir: `outbox` on PATH and `bin/outbox` in dir are the binary under
// test; env holds only PATH, HOME and the given variables.
func newShellSession(t *testing.T, dir string, vars map[string]string, rewrite ...string) *shellSession {
	t.Helper()
	binDir := t.TempDir()
	if err := os.Symlink(outboxBin, filepath.Join(binDir, "outbox")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outboxBin, filepath.Join(dir, "bin", "outbox")); err != nil {
		t.Fatal(err)
	}
	env := environ(vars)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + binDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return &shellSession{t: t, dir: dir, env: env, rewrite: rewrite}
}

// result is what one command did.
type result struct {
	code int
	out  string // stdout and stderr
}

// run runs one README command: in the background when it ends in &, waiting until what it
// listens on answers; else to completion, within 30 s.
func (s *shellSession) run(line shellLine) result {
	t := s.t
	t.Helper()
	cmd := line.cmd
	for i := 0; i+1 < len(s.rewrite); i += 2 {
		cmd = strings.ReplaceAll(cmd, s.rewrite[i], s.rewrite[i+1])
	}
	if bg, ok := strings.CutSuffix(cmd, "&"); ok {
		s.background(strings.TrimSpace(bg))
		return result{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir, c.Env = s.dir, s.env
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", cmd, err)
	}
	t.Logf("$ %s\n%s(exit %d)", cmd, out, code)
	if s.after != nil {
		s.after(cmd)
	}
	return result{code: code, out: string(out)}
}

// background starts cmd and waits until every address of waitFor that it names accepts
// connections; it is stopped with SIGTERM when the test ends.
func (s *shellSession) background(cmd string) {
	t := s.t
	t.Helper()
	out := &syncBuffer{}
	c := exec.Command("bash", "-c", cmd) // bash execs a lone command: the signal reaches it
	c.Dir, c.Env = s.dir, s.env
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("$ %s &\n%s", cmd, out.String())
		}
	})
	for _, addr := range s.waitFor {
		if !strings.Contains(cmd, addr) && !(strings.Contains(cmd, "outbox run") && addr == s.waitFor[0]) {
			continue
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				break
			}
			select {
			case <-done:
				t.Fatalf("%s exited before listening on %s:\n%s", cmd, addr, out.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not listening on %s after 15s:\n%s", cmd, addr, out.String())
			}
		}
	}
}

// expect is what the README says a command shows: its exit code and text in its output.
type expect struct {
	code int
	outs []string
}

// runAll runs every line, checking the commands named in want (by a prefix of the command).
// Lines whose command starts with a prefix in skip are not run (the test does their part).
func (s *shellSession) runAll(lines []shellLine, want map[string]expect, skip ...string) {
	t := s.t
	t.Helper()
	checked := map[string]bool{}
lines:
	for _, line := range lines {
		for _, p := range skip {
			if strings.HasPrefix(line.cmd, p) {
				continue lines
			}
		}
		r := s.run(line)
		for prefix, w := range want {
			if !strings.HasPrefix(line.cmd, prefix) {
				continue
			}
			checked[prefix] = true
			if r.code != w.code {
				t.Errorf("%s: exit %d, want %d:\n%s", line.cmd, r.code, w.code, r.out)
			}
			for _, o := range w.outs {
				if !strings.Contains(r.out, o) {
					t.Errorf("%s: output lacks %q:\n%s", line.cmd, o, r.out)
				}
			}
		}
	}
	for prefix := range want {
		if !checked[prefix] {
			t.Errorf("the README block has no command starting %q any more", prefix)
		}
	}
}

// Quick start: `outbox run --dev --print` (what `make run` runs, with --print), then the
// curl and `outbox send` examples: the event is accepted, delivered, and printed whole.
func TestReadme_QuickStart(t *testing.T) {
	dir := t.TempDir()
	listen := testutil.FreeAddr(t)
	vars := map[string]string{"OUTBOX_INGEST_LISTEN": listen, "OUTBOX_DATA_DIR": filepath.Join(dir, "data")}
	agentProc := start(t, dir, vars, "run", "--dev", "--print")
	waitHealthy(t, agentProc, "http://"+listen)

	s := newShellSession(t, dir, vars, "127.0.0.1:8089", listen)
	s.runAll(readmeShellBlock(t, "curl -s -X POST http://127.0.0.1:8089/v1/track"), map[string]expect{
		"curl":              {0, []string{`{"success":true}`}},
		"bin/outbox send '": {0, []string{"sent 1 event(s)"}},
		"echo":              {0, []string{"sent 1 event(s)"}},
		"bin/outbox status": {0, []string{"queue", "last upload"}},
		"bin/outbox flush":  {0, nil},
	})
	if err := agentProc.stdout.waitFor(ctxFor(t, 10*time.Second), `"plan":"pro"`, `"traits":{"name":"Ada"}`, `"event":"Clicked"`); err != nil {
		t.Errorf("the dev collector did not print each event sent; its output:\n%s", agentProc.stdout.String())
	}
}

// A refused key pauses delivery: the sink refusing every key, the agent, one event, a flush
// that says why nothing went, and the status that says delivery is paused.
func TestReadme_RefusedKeyPausesDelivery(t *testing.T) {
	dir := t.TempDir()
	listen, sinkAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	s := newShellSession(t, dir, map[string]string{"OUTBOX_INGEST_LISTEN": listen}, "127.0.0.1:9000", sinkAddr)
	s.waitFor = []string{listen, sinkAddr}
	s.runAll(readmeShellBlock(t, "--fail 401:default &"), map[string]expect{
		"outbox send":   {0, []string{"sent 1 event(s)"}},
		"outbox flush":  {1, []string{"refuses our credentials (401): fix upload.write_key and reload"}},
		"outbox status": {0, []string{"PAUSED since", "fix upload.write_key and reload"}},
	})
}

// Reload and rotate: the file edited (here by the test, in place of $EDITOR), then the agent
// told to reload, by hand (kill -HUP) or through `outbox reload` (the block's alternatives;
// systemctl needs systemd), and `outbox status` showing the result.
func TestReadme_ReloadAndRotate(t *testing.T) {
	tests := []struct {
		name string
		skip string // the alternative not run
		want map[string]expect
	}{
		{"kill -HUP", "outbox reload", map[string]expect{
			"kill -HUP":     {0, nil},
			"outbox status": {0, []string{"last reload", "applied"}},
		}},
		{"outbox reload", "kill -HUP", map[string]expect{
			"outbox reload": {0, []string{"reload: applied", "upload.write_key"}},
			"outbox status": {0, []string{"last reload", "applied"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			collector := sinktest.Start(t, sink.Options{})
			a, base := startFileAgent(t, collector.URL()+"/v1/batch", nil)
			writeConfig(t, a.file, with(base, map[string]string{"upload.write_key": "up-new", "log.level": "debug"}))

			s := newShellSession(t, filepath.Dir(a.file), nil, "/etc/outbox/config.yaml", a.file, "/var/lib/outbox", a.dir)
			s.after = func(cmd string) {
				if strings.HasPrefix(cmd, "kill -HUP") { // a signal: its reload happens after kill returns
					a.waitLog(t, 10*time.Second, "configuration reloaded")
				}
			}
			s.runAll(readmeShellBlock(t, "systemctl reload outbox"), tt.want, "$EDITOR", "systemctl", tt.skip)
			a.waitLog(t, 10*time.Second, "configuration reloaded", "applied=log.level,upload.write_key")
		})
	}
}
