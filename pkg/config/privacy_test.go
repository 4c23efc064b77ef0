package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_PrivacyKeys(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "hash.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "outbox.yaml")
	yaml := "privacy:\n  rules:\n    - context.ip=mask\n    - traits.email = hash\n  hash_key_file: " + key + "\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	lc, err := Load(Input{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lc.Config.Privacy.Rules, ","); got != "context.ip=mask,traits.email = hash" {
		t.Errorf("privacy.rules = %q", got)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"unknown action", []string{"OUTBOX_PRIVACY_RULES=context.ip=blur"},
			`configuration key privacy.rules (from env OUTBOX_PRIVACY_RULES): privacy.rules: bad scrub rule "context.ip=blur": unknown action "blur"`},
		{"bad path", []string{"OUTBOX_PRIVACY_RULES=context..ip=mask"}, "empty key"},
		{"hash rule without a key file", []string{"OUTBOX_PRIVACY_RULES=traits.email=hash"},
			"configuration keys privacy.hash_key_file (from default) and privacy.rules (from env OUTBOX_PRIVACY_RULES)"},
		{"key file missing", []string{"OUTBOX_PRIVACY_HASH_KEY_FILE=" + filepath.Join(dir, "none")}, "cannot read the hash key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Input{Environ: tc.env})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v; want %q", err, tc.want)
			}
		})
	}
}
