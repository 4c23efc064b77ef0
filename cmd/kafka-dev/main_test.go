package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
)

func TestRun_BadFlags_AreRefusedBeforeAnythingStarts(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-brokers", "0"}, "-brokers must be at least 1"},
		{[]string{"-no-such-flag"}, "not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%v) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}

// lockedBuffer collects a subprocess's output for the test to poll.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitOutput polls out until it holds want, failing after d or when the process has exited.
func waitOutput(t *testing.T, out *lockedBuffer, exited <-chan struct{}, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(out.String(), want) {
		select {
		case <-exited:
			t.Fatalf("make run-kafka exited before printing %q; output:\n%s", want, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s; output:\n%s", want, d, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMakeRunKafka_CtrlC_ExitsZero runs `make run-kafka` as a newcomer does, sends it an event,
// and presses Ctrl-C: SIGINT to the whole foreground process group (make and what it runs).
// The record is printed, the agent flushes and stops, kafka-dev exits 0 and make reports no
// error (under `go run` it printed "make: *** [Makefile:…: run-kafka] Error 1").
func TestMakeRunKafka_CtrlC_ExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent and runs make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The agent is built here, and make told that its build target is done (-o build), so
	// that the test does not also build bin/e2e-cli.
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "outbox"), "github.com/outboxhq/outbox/cmd/outbox").CombinedOutput(); err != nil {
		t.Fatalf("go build outbox: %v\n%s", err, out)
	}
	listen := testutil.FreeAddr(t)

	var out lockedBuffer
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "-o", "build", "run-kafka", "BIN="+bin)
	// kafka-dev passes the caller's OUTBOX_* settings to the agent: a free port and a
	// temporary queue instead of 127.0.0.1:8089 and ./outbox-data.
	cmd.Env = append(os.Environ(), "OUTBOX_INGEST_LISTEN="+listen, "OUTBOX_DATA_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group
	// The agent, in a process group of its own, could hold the output pipes after a kill.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
			return
		default:
		}
		// A failed test still stops the agent through kafka-dev (SIGINT, then its SIGTERM).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	waitOutput(t, &out, exited, `msg="agent listening"`, 3*time.Minute)
	resp, err := http.Post("http://"+listen+"/v1/track", "application/json",
		strings.NewReader(`{"type":"track","event":"Hello","userId":"u1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/track: %s", resp.Status)
	}
	waitOutput(t, &out, exited, "kafka-dev: record", 30*time.Second)
	if text := out.String(); !strings.Contains(text[strings.Index(text, "kafka-dev: record"):], `"event":"Hello"`) {
		t.Errorf("the record printed is not the event sent:\n%s", text)
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(40 * time.Second):
		t.Fatalf("make run-kafka did not exit within 40s of Ctrl-C; output:\n%s", out.String())
	}
	// GNU make ends a Ctrl-C by raising SIGINT on itself once its recipe has exited, as for
	// `make run` (the shell shows 130 and nothing is printed); a recipe that exits non-zero
	// makes it print "make: *** [...] Error 1" instead, checked below.
	var ee *exec.ExitError
	if waitErr != nil && !(errors.As(waitErr, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
		t.Errorf("make run-kafka after Ctrl-C: %v, want exit 0 or make's own SIGINT; output:\n%s", waitErr, out.String())
	}
	if strings.Contains(out.String(), "make: ***") {
		t.Errorf("make reported an error after Ctrl-C:\n%s", out.String())
	}
}
