package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// runRoot runs the outbox command tree with args and env, returning stdout and the error.
func runRoot(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Deps{Stdout: &out, Stderr: &errOut, Environ: env})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoot_UsageErrors_Exit2(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"unknown command", []string{"frobnicate"}},
		{"unknown flag", []string{"config", "--no-such-flag"}},
		{"extra argument", []string{"version", "extra"}},
		{"an invalid configuration value", []string{"config", "--log-level", "loud"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runRoot(t, nil, tc.args...)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit code %d for %v (err %v), want 2", code, tc.args, err)
			}
		})
	}
}
