package config

import (
	"strings"
	"testing"
)

const sourcesFile = `
upload:
  write_key: wk-default-secret
sources:
  app-a:
    write_keys: [ingest-a-secret]
    upload_write_key: upload-a-secret
    max_bytes: 1MiB
  app-eu:
    write_keys: [ingest-eu-secret]
    endpoint: https://user:pw@events.eu1.segmentapis.com/v1/batch
    headers:
      X-Region: eu
`

func TestSources_PerNameKeysLoadFromFileAndEnvAndNeverPrintSecrets(t *testing.T) {
	file := writeFile(t, "outbox.yaml", sourcesFile)
	out, err := show(t, []string{"OUTBOX_SOURCES_APP_EU_UPLOAD_WRITE_KEY=upload-eu-secret", "OUTBOX_SOURCES_RELAY=true"}, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"secret", "user:pw"} {
		if strings.Contains(out, secret) {
			t.Fatalf("outbox config shows a secret (%s):\n%s", secret, out)
		}
	}
	for _, want := range []string{
		"sources.app-a.write_keys         [<redacted>]",
		"sources.app-a.upload_write_key   <redacted>",
		"sources.app-a.max_bytes          1048576 (1MiB)",
		"env OUTBOX_SOURCES_APP_EU_UPLOAD_WRITE_KEY",
		`sources.app-eu.headers           {x-region: "eu"}`, // header names are case-insensitive; YAML keys arrive lower case
		"sources.app-eu.endpoint          \"https://REDACTED@events.eu1.segmentapis.com/v1/batch\"",
		"sources.relay                    true",
		"sources.max                      64",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("outbox config lacks %q:\n%s", want, out)
		}
	}
	lc, err := Load(Input{File: file, Environ: []string{"OUTBOX_SOURCES_APP_EU_UPLOAD_WRITE_KEY=upload-eu-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lc.Config.Sources.Named["app-eu"].UploadWriteKey; got != "upload-eu-secret" {
		t.Fatalf("app-eu's upload key from the environment: %q", got)
	}
	if got := lc.Config.AgentConfig(nil).Sources.Keys["ingest-a-secret"]; got != "app-a" {
		t.Fatalf("the agent's source of ingest-a's key: %q, want app-a", got)
	}
}

func TestSources_BadPerNameConfigurationIsRefusedWithItsKey(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		want       string
	}{
		{name: "an unknown key of a source", file: "sources:\n  app-a:\n    upload_key: x\n", want: "unknown configuration key sources.app-a.upload_key"},
		{name: "a name that starts with neither a letter nor a digit", file: "sources:\n  _x:\n    endpoint: https://x.test/v1/batch\n", want: `source name "_x"`},
		{name: "a source's endpoint that is not a URL", file: "sources:\n  app-a:\n    endpoint: nope\n", want: "sources.app-a.endpoint (from file"},
		{name: "a key listed by two sources, without printing it", file: "sources:\n  a:\n    write_keys: [dup-secret]\n  b:\n    write_keys: [dup-secret]\n", want: "a key selects one source"},
		{name: "a reserved name", file: "sources:\n  relay-x:\n    endpoint: https://x.test/v1/batch\n", want: "names starting with relay- are those of relay sources"},
		{name: "more sources than sources.max", file: "sources:\n  max: 2\n  a:\n    upload_write_key: k\n  b:\n    upload_write_key: k\n", want: "more than sources.max 2"},
		{name: "relay mode off loopback without a token or mTLS", file: "ingest:\n  listen: 0.0.0.0:8089\n  write_keys: [k]\nsources:\n  relay: true\n", want: "sources.relay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			if tt.file != "" {
				args = []string{"--config", writeFile(t, "outbox.yaml", tt.file)}
			}
			_, err := show(t, tt.env, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "dup-secret") {
				t.Fatalf("error shows a secret: %v", err)
			}
		})
	}
}
