package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runRootCanceled runs the command tree with a context that is already canceled, so that a
// `run` that wrongly gets past validation stops at once (returning nil) instead of serving.
func runRootCanceled(t *testing.T, env []string, args ...string) error {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Deps{Stdout: &out, Stderr: &errOut, Environ: env})
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return cmd.ExecuteContext(ctx)
}

func TestConfigAndRun_RejectTheSameConfigurations_NamingKeysAndSources(t *testing.T) {
	noPEM := writeFile(t, "ca.pem", "not a certificate\n")
	cases := []struct {
		name  string
		file  string // YAML written to a temporary outbox.yaml, passed with --config
		env   []string
		args  []string
		wants []string // "{file}" stands for the file's path
	}{
		{name: "an empty write key in the file names the key and the file",
			file:  "ingest:\n  write_keys: [\"\"]\n",
			wants: []string{"configuration key ingest.write_keys (from file {file})", "must not be empty"}},
		{name: "a backoff cap below the default base names the cap the user set and its file",
			file:  "retry:\n  backoff_cap: 100ms\n",
			wants: []string{"retry.backoff_cap (from file {file})", "retry.backoff_base (from default)", "500ms", "100ms"}},
		{name: "a base above the cap names both keys with their own sources",
			file:  "retry:\n  backoff_cap: 1s\n",
			env:   []string{"OUTBOX_RETRY_BACKOFF_BASE=2s"},
			wants: []string{"retry.backoff_base (from env OUTBOX_RETRY_BACKOFF_BASE)", "retry.backoff_cap (from file {file})"}},
		{name: "an event limit above the request limit names both keys",
			env:   []string{"OUTBOX_LIMITS_MAX_REQUEST_BYTES=1000"},
			wants: []string{"limits.max_event_bytes (from default)", "limits.max_request_bytes (from env OUTBOX_LIMITS_MAX_REQUEST_BYTES)"}},
		{name: "the uploader's rule that a batch holds one event names both keys",
			file:  "batch:\n  max_bytes: 1000\n",
			wants: []string{"batch.max_bytes (from file {file})", "limits.max_event_bytes (from default)"}},
		{name: "a CA file without a certificate is refused before run opens anything",
			env:   []string{"OUTBOX_UPLOAD_CA_FILE=" + noPEM},
			wants: []string{"configuration key upload.ca_file (from env OUTBOX_UPLOAD_CA_FILE)", "no PEM certificate"}},
		{name: "an empty --data-dir is refused",
			args:  []string{"--data-dir", ""},
			wants: []string{"configuration key data_dir (from flag --data-dir)", "must not be empty"}},
		{name: "an empty data_dir in the file is refused",
			file:  "data_dir: \"\"\n",
			wants: []string{"configuration key data_dir (from file {file})", "must not be empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			file := ""
			if tc.file != "" {
				file = writeFile(t, "outbox.yaml", tc.file)
				args = append(args, "--config", file)
			}
			args = append(args, tc.args...)
			// run must not reach the default data directory or listen address if it got that far.
			env := append([]string{"OUTBOX_INGEST_LISTEN=127.0.0.1:0"}, tc.env...)
			if !slices.Contains(tc.args, "--data-dir") && !strings.Contains(tc.file, "data_dir") {
				env = append(env, "OUTBOX_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
			}
			var msgs []string
			for _, command := range []string{"config", "run"} {
				err := runRootCanceled(t, env, append([]string{command}, args...)...)
				if err == nil {
					t.Fatalf("outbox %s accepted the configuration", command)
				}
				if code := exitCode(err); code != exitUsage {
					t.Errorf("outbox %s: exit code %d, want %d (err %v)", command, code, exitUsage, err)
				}
				for _, w := range tc.wants {
					if w = strings.ReplaceAll(w, "{file}", file); !strings.Contains(err.Error(), w) {
						t.Errorf("outbox %s: error %q does not contain %q", command, err, w)
					}
				}
				msgs = append(msgs, err.Error())
			}
			if msgs[0] != msgs[1] {
				t.Errorf("config and run disagree:\n config: %s\n run:    %s", msgs[0], msgs[1])
			}
		})
	}
}
