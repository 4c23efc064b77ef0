package test_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
)

// outboxBin is the binary built by TestMain.
var outboxBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outbox-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outboxBin = filepath.Join(dir, "outbox")
	args := []string{"build", "-o", outboxBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/outboxhq/outbox/cmd/outbox")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building outbox:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and the test, which can
// wait for a line to be written (waitFor).
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next Write; nil when nobody waits
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// waitFor blocks until the buffer holds every one of subs, or ctx ends (its error is returned).
func (s *syncBuffer) waitFor(ctx context.Context, subs ...string) error {
	for {
		s.mu.Lock()
		text := s.b.String()
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(text, sub)
		}
		if all {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// environ is the subprocess environment: PATH and HOME plus the given OUTBOX_* variables only,
// so that the developer's own OUTBOX_* settings cannot leak in.
func environ(vars map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if _, ok := vars["GORACE"]; !ok {
		// A race-enabled binary sleeps 1 s at exit by default, which would count against
		// the shutdown deadlines the tests measure.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// proc is a running outbox subprocess.
type proc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error // set when done is closed
}

// start runs outbox with args in dir (its working directory) and env.
func start(t testing.TB, dir string, env map[string]string, args ...string) *proc {
	t.Helper()
	return startIn(t, dir, env, "", args...)
}

// startIn is start with stdin as the process's standard input.
func startIn(t testing.TB, dir string, env map[string]string, stdin string, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(outboxBin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = environ(env)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.Stdin = strings.NewReader(stdin)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("outbox %v reported a data race", args)
		}
		if t.Failed() {
			t.Logf("outbox %v stderr:\n%s", args, p.stderr.String())
		}
	})
	return p
}

// wait waits for the process to exit, at most d, and returns its exit code (-1 when it was
// killed by a signal) and how long the wait took.
func (p *proc) wait(t testing.TB, d time.Duration) (int, time.Duration) {
	t.Helper()
	begin := time.Now()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("outbox did not exit within %s; stderr:\n%s", d, p.stderr.String())
	}
	took := time.Since(begin)
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0, took
	case errors.As(p.err, &ee):
		return ee.ExitCode(), took
	}
	t.Fatalf("waiting for outbox: %v", p.err)
	return -1, took
}

// waitLog waits until the process has logged every one of subs on stderr, at most d; the
// test fails when it has not.
func (p *proc) waitLog(t testing.TB, d time.Duration, subs ...string) {
	t.Helper()
	if err := p.stderr.waitFor(ctxFor(t, d), subs...); err != nil {
		t.Fatalf("outbox did not log %q within %s; stderr:\n%s", subs, d, p.stderr.String())
	}
}

func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// agent is an `outbox run` subprocess with its base URL.
type agent struct {
	*proc
	url string
}

// agentEnv is the configuration of a test agent: data dir, a free listen address, the sink's
// endpoint, a short batch interval and a 2 s shutdown timeout; extra overrides win.
func agentEnv(dataDir, listen, endpoint string, extra map[string]string) map[string]string {
	env := map[string]string{
		"OUTBOX_DATA_DIR":           dataDir,
		"OUTBOX_INGEST_LISTEN":      listen,
		"OUTBOX_UPLOAD_ENDPOINT":    endpoint,
		"OUTBOX_BATCH_INTERVAL":     "50ms",
		"OUTBOX_SHUTDOWN_TIMEOUT":   "2s",
		"OUTBOX_RETRY_BACKOFF_BASE": "20ms",
		"OUTBOX_RETRY_BACKOFF_CAP":  "200ms",
		"OUTBOX_LOG_LEVEL":          "debug",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// startAgent runs `outbox run` on dataDir against endpoint and waits until /healthz answers.
func startAgent(t testing.TB, dataDir, endpoint string, extra map[string]string) *agent {
	t.Helper()
	listen := testutil.FreeAddr(t)
	p := start(t, t.TempDir(), agentEnv(dataDir, listen, endpoint, extra), "run")
	a := &agent{proc: p, url: "http://" + listen}
	waitHealthy(t, p, a.url)
	return a
}

// waitHealthy polls url's /healthz until it answers 200, failing when p exits first.
func waitHealthy(t testing.TB, p *proc, url string) {
	t.Helper()
	waitHealthyWith(t, p, url, http.DefaultClient)
}

// waitHealthyWith is waitHealthy through hc (an HTTPS agent's client).
func waitHealthyWith(t testing.TB, p *proc, url string, hc *http.Client) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err := hc.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("outbox run exited before it was ready (%v); stderr:\n%s", p.err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox run not ready after 15s; stderr:\n%s", p.stderr.String())
		}
	}
}

// post sends body to the agent's path, gzipped when gz, and returns the status and body.
func post(t testing.TB, url string, body []byte, gz bool) (int, string) {
	t.Helper()
	code, text, err := tryPost(url, body, gz)
	if err != nil {
		t.Fatal(err)
	}
	return code, text
}

func tryPost(url string, body []byte, gz bool) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if gz {
		body = gzipBytes(body)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(b.String()), nil
}
