package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
)

// agentProc is one `outbox run` subprocess listening on a loopback port.
type agentProc struct {
	cmd     *exec.Cmd
	url     string // http://127.0.0.1:PORT
	logPath string
	started time.Time // just before the process was started
	exited  chan struct{}
	exitAt  time.Time // set before exited is closed
	waitErr error     // set before exited is closed
	hc      *http.Client
}

// agentSpec says how to start the agent.
type agentSpec struct {
	bin      string   // path of the outbox binary
	dataDir  string   // --data-dir
	endpoint string   // --endpoint
	env      []string // extra OUTBOX_* variables
	logPath  string   // stdout and stderr go here
}

// startAgent starts `outbox run` on a free loopback port. The environment is the bench's own
// without any OUTBOX_* variable (the agent refuses unknown ones), plus spec.env; the working
// directory is the data directory's parent, so no stray ./outbox.yaml is read.
func startAgent(spec agentSpec) (*agentProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(spec.logPath)
	if err != nil {
		return nil, fmt.Errorf("agent log: %w", err)
	}
	cmd := exec.Command(spec.bin, "run", "--data-dir", spec.dataDir, "--listen", addr,
		"--endpoint", spec.endpoint, "--log-level", "warn")
	cmd.Dir = filepath.Dir(spec.dataDir)
	cmd.Env = append(cleanEnv(), spec.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	p := &agentProc{
		cmd:     cmd,
		url:     "http://" + addr,
		logPath: spec.logPath,
		exited:  make(chan struct{}),
		hc:      &http.Client{Timeout: 5 * time.Second},
	}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w (run `make build` first, or pass -outbox)", spec.bin, err)
	}
	go func() {
		err := cmd.Wait()
		p.exitAt = time.Now()
		p.waitErr = err
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid is the agent's process id.
func (p *agentProc) pid() int { return p.cmd.Process.Pid }

// waitReady polls GET /readyz every 5 ms until it answers 200, and returns the time from
// process start to that answer.
func (p *agentProc) waitReady(ctx context.Context) (time.Duration, error) {
	hc := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/readyz", nil)
		res, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		select {
		case <-p.exited:
			return 0, fmt.Errorf("agent exited before it was ready (%v)%s", p.waitErr, p.logTail())
		case <-ctx.Done():
			return 0, fmt.Errorf("agent not ready: %w%s", ctx.Err(), p.logTail())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// status fetches GET /v1/status.
func (p *agentProc) status(ctx context.Context) (agent.Status, error) {
	var st agent.Status
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/v1/status", nil)
	res, err := p.hc.Do(req)
	if err != nil {
		return st, fmt.Errorf("agent status: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("agent status: HTTP %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("agent status: %w", err)
	}
	return st, nil
}

// waitStatus polls the status every 20 ms until cond holds or ctx ends.
func (p *agentProc) waitStatus(ctx context.Context, cond func(agent.Status) bool) (agent.Status, error) {
	for {
		st, err := p.status(ctx)
		if err == nil && cond(st) {
			return st, nil
		}
		select {
		case <-p.exited:
			return st, fmt.Errorf("agent exited (%v)%s", p.waitErr, p.logTail())
		case <-ctx.Done():
			return st, fmt.Errorf("waiting on agent status (last: %+v, err %v): %w", st, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// terminate sends SIGTERM and waits up to limit for the exit; past it, the process is killed.
// It returns the time from the signal to the exit and the exit code.
func (p *agentProc) terminate(limit time.Duration) (time.Duration, int, error) {
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, -1, fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(sent), -1, fmt.Errorf("agent still running %s after SIGTERM; killed%s", limit, p.logTail())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		code = ee.ExitCode()
	} else if p.waitErr != nil {
		return p.exitAt.Sub(sent), -1, p.waitErr
	}
	return p.exitAt.Sub(sent), code, nil
}

// kill ends the process if it still runs (cleanup after a failure).
func (p *agentProc) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// logTail returns the end of the agent's log, for error messages.
func (p *agentProc) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nagent log (" + p.logPath + "):\n" + strings.TrimSpace(string(b))
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// cleanEnv is the bench's environment without OUTBOX_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OUTBOX_") {
			env = append(env, kv)
		}
	}
	return env
}
