package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// show loads the configuration as `outbox config` does, from env and args (--config, and the
// flags of the keys that have one), and returns what it prints.
func show(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	fs := pflag.NewFlagSet("outbox config", pflag.ContinueOnError)
	file := fs.String("config", "", "")
	for i := range keys {
		if keys[i].flag != "" {
			fs.String(keys[i].flag, "", "")
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	lc, err := Load(Input{File: *file, Environ: env, Flags: fs})
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := Print(&out, lc); err != nil {
		t.Fatal(err)
	}
	return out.String(), nil
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// configLines parses `outbox config` output into key → [value, source].
func configLines(t *testing.T, out string) map[string][2]string {
	t.Helper()
	m := map[string][2]string{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "KEY") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("short line %q", line)
		}
		src := f[len(f)-1]
		if len(f) >= 4 && (f[len(f)-2] == "file" || f[len(f)-2] == "env" || f[len(f)-2] == "flag") {
			src = f[len(f)-2] + " " + f[len(f)-1]
			m[f[0]] = [2]string{strings.Join(f[1:len(f)-2], " "), src}
			continue
		}
		m[f[0]] = [2]string{strings.Join(f[1:len(f)-1], " "), src}
	}
	return m
}

func TestLoad_Precedence_FlagsBeatEnvBeatFileBeatDefaults(t *testing.T) {
	file := writeFile(t, "outbox.yaml", `
data_dir: /from/file
ingest:
  listen: 127.0.0.1:1111
upload:
  endpoint: http://file.example/v1/batch
batch:
  interval: 2s
`)
	env := []string{
		"OUTBOX_INGEST_LISTEN=127.0.0.1:2222",
		"OUTBOX_UPLOAD_ENDPOINT=http://env.example/v1/batch",
		"OUTBOX_BATCH_INTERVAL=3s",
		"HOME=/root", // not ours: ignored
	}
	out, err := show(t, env, "--config", file, "--endpoint", "http://flag.example/v1/batch")
	if err != nil {
		t.Fatal(err)
	}
	got := configLines(t, out)
	cases := []struct {
		name, key, value, source string
	}{
		{"flag beats env and file", "upload.endpoint", `"http://flag.example/v1/batch"`, "flag --endpoint"},
		{"env beats file", "ingest.listen", `"127.0.0.1:2222"`, "env OUTBOX_INGEST_LISTEN"},
		{"env beats file for durations", "batch.interval", "3s", "env OUTBOX_BATCH_INTERVAL"},
		{"file beats default", "data_dir", `"/from/file"`, "file " + file},
		{"default when nothing else", "log.level", `"info"`, "default"},
		{"default size printed in bytes", "limits.max_event_bytes", "32768 (32KiB)", "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := got[tc.key]
			if g[0] != tc.value || g[1] != tc.source {
				t.Errorf("%s = %q from %q, want %q from %q", tc.key, g[0], g[1], tc.value, tc.source)
			}
		})
	}
}

func TestLoad_Errors_NameKeyAndSourceAndExit2(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		env   []string
		args  []string
		wants []string
	}{
		{name: "unknown key in the file", file: "batch:\n  intervall: 5s\n", wants: []string{"batch.intervall", "unknown", "outbox.yaml"}},
		{name: "bad duration in the file", file: "batch:\n  interval: 5 seconds\n", wants: []string{"batch.interval", "file", "duration"}},
		{name: "duration without unit", file: "upload:\n  timeout: 30\n", wants: []string{"upload.timeout", "file", "duration"}},
		{name: "bad duration in env", env: []string{"OUTBOX_SHUTDOWN_TIMEOUT=soon"}, wants: []string{"shutdown.timeout", "env OUTBOX_SHUTDOWN_TIMEOUT"}},
		{name: "bad size", file: "queue:\n  max_bytes: 12 parsecs\n", wants: []string{"queue.max_bytes", "size"}},
		{name: "zero size", env: []string{"OUTBOX_DEAD_MAX_BYTES=0"}, wants: []string{"dead.max_bytes", "greater than zero"}},
		{name: "bad enum", env: []string{"OUTBOX_QUEUE_WHEN_FULL=block"}, wants: []string{"queue.when_full", "reject, drop_oldest"}},
		{name: "bad bool", file: "upload:\n  gzip: maybe\n", wants: []string{"upload.gzip", "true or false"}},
		{name: "bad log level flag", args: []string{"--log-level", "loud"}, wants: []string{"log.level", "flag --log-level"}},
		{name: "non-loopback without auth", args: []string{"--listen", "0.0.0.0:8089"}, wants: []string{"ingest.listen", "flag --listen", "ingest.allow_unauthenticated"}},
		{name: "bad endpoint", env: []string{"OUTBOX_UPLOAD_ENDPOINT=ftp://x"}, wants: []string{"upload.endpoint", "env OUTBOX_UPLOAD_ENDPOINT"}},
		{name: "missing explicit config file", args: []string{"--config", "/nonexistent/outbox.yaml"}, wants: []string{"/nonexistent/outbox.yaml", "does not exist"}},
		{name: "malformed YAML", file: "batch: [\n", wants: []string{"outbox.yaml", "YAML"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append(args, "--config", writeFile(t, "outbox.yaml", tc.file))
			}
			_, err := show(t, tc.env, args...)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoad_Print_RedactsSecrets(t *testing.T) {
	file := writeFile(t, "outbox.yaml", `
ingest:
  write_keys: [wk-file-secret-1, wk-file-secret-2]
upload:
  endpoint: https://user:pw-secret@collector.example/v1/batch
  headers:
    Proxy-Authorization: Bearer hdr-secret
    X-Api-Key: apikey-secret
    X-Team: data
`)
	env := []string{"OUTBOX_UPLOAD_WRITE_KEY=wk-env-secret", "OUTBOX_INGEST_TOKEN=tok-env-secret"}
	out, err := show(t, env, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"wk-file-secret", "pw-secret", "hdr-secret", "apikey-secret", "wk-env-secret", "tok-env-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("output shows secret %q:\n%s", secret, out)
		}
	}
	got := configLines(t, out)
	if g := got["upload.write_key"]; g[0] != redacted || g[1] != "env OUTBOX_UPLOAD_WRITE_KEY" {
		t.Errorf("upload.write_key = %v", g)
	}
	if g := got["ingest.write_keys"]; g[0] != "[<redacted>, <redacted>]" {
		t.Errorf("ingest.write_keys = %v", g)
	}
	if !strings.Contains(got["upload.headers"][0], `x-team: "data"`) {
		t.Errorf("non-secret header hidden: %v", got["upload.headers"])
	}
}

func TestLoad_EmptyDataDirVariable_CountsAsUnset(t *testing.T) {
	out, err := show(t, []string{"OUTBOX_DATA_DIR="})
	if err != nil {
		t.Fatal(err)
	}
	if g := configLines(t, out)["data_dir"]; g != [2]string{`"./outbox-data"`, "default"} {
		t.Errorf("data_dir = %v, want the default", g)
	}
}
