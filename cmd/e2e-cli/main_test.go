package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// binPath is the e2e-cli binary built once by TestMain; every test drives it as a subprocess.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e2e-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-cli test: temp dir:", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "e2e-cli")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-cli test: build:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is the stdout line of the contract.
type result struct {
	Success     bool   `json:"success"`
	SentBatches int    `json:"sentBatches"`
	Error       string `json:"error"`
}

// outcome is one finished run of the binary.
type outcome struct {
	result
	Code   int
	Stderr string
}

// runCLI runs the binary with --input in (a string is passed as is, anything else is JSON
// encoded) and args, and checks the output contract (see process.finish).
func runCLI(t *testing.T, in any, args ...string) outcome {
	t.Helper()
	p := startCLI(t, in, args...)
	return p.finish(t)
}

// process is a started run of the binary.
type process struct {
	cmd            *exec.Cmd
	tmp            string
	stdout, stderr bytes.Buffer
}

// startCLI starts the binary with TMPDIR set to a fresh directory, which must end empty.
func startCLI(t *testing.T, in any, args ...string) *process {
	t.Helper()
	doc, ok := in.(string)
	if !ok {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("encode input: %v", err)
		}
		doc = string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p := &process{tmp: t.TempDir()}
	p.cmd = exec.CommandContext(ctx, binPath, append([]string{"--input", doc}, args...)...)
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start e2e-cli: %v", err)
	}
	return p
}

// finish waits for the process and checks the output contract on every run: exactly one JSON
// line on stdout with success and sentBatches (and error exactly when success is false), and
// the temporary data directory gone at exit.
func (p *process) finish(t *testing.T) outcome {
	t.Helper()
	err := p.cmd.Wait()
	out := outcome{Stderr: p.stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.Code = ee.ExitCode()
	default:
		t.Fatalf("run e2e-cli: %v\nstderr:\n%s", err, out.Stderr)
	}
	out.result = decodeLine(t, p.stdout.String(), out.Stderr)
	if left, _ := os.ReadDir(p.tmp); len(left) != 0 {
		t.Errorf("temporary data directory left behind: %v", left)
	}
	return out
}

// decodeLine checks that stdout is exactly one JSON line in the contract's shape.
func decodeLine(t *testing.T, stdout, stderr string) result {
	t.Helper()
	if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout is not exactly one line: %q\nstderr:\n%s", stdout, stderr)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil {
		t.Fatalf("stdout is not a JSON object: %v: %q", err, stdout)
	}
	for k := range keys {
		if k != "success" && k != "sentBatches" && k != "error" {
			t.Errorf("stdout has unexpected key %q: %s", k, stdout)
		}
	}
	if keys["success"] == nil || keys["sentBatches"] == nil {
		t.Fatalf("stdout lacks success or sentBatches: %s", stdout)
	}
	var r result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("decode stdout: %v: %s", err, stdout)
	}
	if _, hasErr := keys["error"]; hasErr == r.Success {
		t.Errorf("error must be present exactly when success is false: %s", stdout)
	}
	return r
}

// wantExit fails the test unless the run ended with code and success as given.
func (o outcome) wantExit(t *testing.T, code int, success bool) {
	t.Helper()
	if o.Code != code || o.Success != success {
		t.Fatalf("exit %d success %v, want exit %d success %v; error %q\nstderr:\n%s",
			o.Code, o.Success, code, success, o.Error, o.Stderr)
	}
}

// obj is a JSON object in an input.
type obj = map[string]any

// seq is one input sequence.
func seq(delayMs int, events ...obj) obj {
	return obj{"delayMs": delayMs, "events": events}
}

// jsonEqual reports whether two JSON texts encode the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
