package test_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// The personal data the encryption-at-rest tests look for in the raw data directory.
const (
	knownEmail = "jane.doe+outbox@example.com"
	knownIP    = "198.51.100.23"
)

// identifyBatch is n identify events carrying knownEmail and knownIP.
func identifyBatch(prefix string, n int) []byte {
	body := []byte(`{"batch":[`)
	for i := range n {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"type":"identify","userId":"user-%d","messageId":"%s-%d","traits":{"email":%q},"context":{"ip":%q}}`,
			i, prefix, i, knownEmail, knownIP)
	}
	return append(body, "]}"...)
}

// keygen writes a key file with `outbox keygen` and returns its path and id.
func keygen(t *testing.T, dir, name string) (path, id string) {
	t.Helper()
	path = filepath.Join(dir, name)
	code, out, stderr := runCLI(t, dir, nil, "", "keygen", path)
	if code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id = keyring.IDOf(b).String()
	if !strings.Contains(out, id) || bytes.Contains([]byte(out), b) {
		t.Fatalf("keygen printed %q: want the key id %s and never the key", out, id)
	}
	return path, id
}

// fillDataDir leaves dead letters and queued events, all carrying knownEmail and knownIP, in a
// stopped agent's data directory: a batch the collector rejects for good (404), then events
// queued while nothing listens at the collector's address (the agent is then killed, so that
// they stay queued). dead is how many dead batches the directory holds once it is done.
func fillDataDir(t *testing.T, dir string, env map[string]string, dead int64) {
	t.Helper()
	s := sinktest.StartScript(t, "404")
	a := startAgent(t, dir, s.URL()+"/v1/batch", env)
	if code, resp := post(t, a.url+"/v1/batch", identifyBatch("dead", 3), false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	waitDead(t, a.url, dead)
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	a = startAgent(t, dir, "http://"+testutil.FreeAddr(t)+"/v1/batch", env)
	if code, resp := post(t, a.url+"/v1/batch", identifyBatch("queued", 5), false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	a.signal(t, syscall.SIGKILL)
	a.wait(t, 10*time.Second)
}

// dirBytes is every file under dir, by name, with its bytes.
func dirBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncrypt_RawDataDirHoldsEmailAndIPOnlyWithoutAKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		encrypt bool
	}{
		{"plain: the email and IP are in the queue and dead letters on disk", false},
		{"encrypted: neither is anywhere in the data directory", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{}
			if tc.encrypt {
				path, _ := keygen(t, t.TempDir(), "queue.key")
				env["OUTBOX_QUEUE_ENCRYPTION_KEY_FILES"] = path
			}
			fillDataDir(t, dir, env, 1)
			var all []byte
			for _, b := range dirBytes(t, dir) {
				all = append(all, b...)
			}
			for _, secret := range []string{knownEmail, knownIP} {
				if got := bytes.Contains(all, []byte(secret)); got != !tc.encrypt {
					t.Fatalf("data directory contains %q: %v, want %v", secret, got, !tc.encrypt)
				}
			}
			// The offline commands read through the keys: the events come back whole.
			env["OUTBOX_DATA_DIR"] = dir
			code, out, stderr := runCLI(t, t.TempDir(), env, "", "inspect", "--sample", "5")
			if code != 0 || !strings.Contains(out, "5 events") || !strings.Contains(out, knownEmail) {
				t.Fatalf("inspect: exit %d, out:\n%s\nerr: %s", code, out, stderr)
			}
			code, out, stderr = runCLI(t, t.TempDir(), env, "", "dead", "list", "--data-dir", dir)
			if code != 0 || !strings.Contains(out, "404") {
				t.Fatalf("dead list offline: exit %d, out:\n%s\nerr: %s", code, out, stderr)
			}
		})
	}
}

func TestEncrypt_WrongOrMissingKeyExits2NamingTheKeyIDAndChangesNothing(t *testing.T) {
	keys := t.TempDir()
	path, id := keygen(t, keys, "queue.key")
	other, _ := keygen(t, keys, "other.key")
	dir := t.TempDir()
	fillDataDir(t, dir, map[string]string{"OUTBOX_QUEUE_ENCRYPTION_KEY_FILES": path}, 1)
	before := dirBytes(t, dir)
	for _, tc := range []struct {
		name string
		keys string // OUTBOX_QUEUE_ENCRYPTION_KEY_FILES; "" = unset
		args []string
	}{
		{"run with another key", other, []string{"run"}},
		{"run with no key", "", []string{"run"}},
		{"inspect with another key", other, []string{"inspect"}},
		{"recover with no key", "", []string{"recover", "--force"}},
		{"compact with another key", other, []string{"compact"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := agentEnv(dir, testutil.FreeAddr(t), "http://"+testutil.FreeAddr(t)+"/v1/batch", nil)
			if tc.keys != "" {
				env["OUTBOX_QUEUE_ENCRYPTION_KEY_FILES"] = tc.keys
			}
			code, _, stderr := runCLI(t, t.TempDir(), env, "", tc.args...)
			if code != 2 || !strings.Contains(stderr, id) || !strings.Contains(stderr, "nothing was changed") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 naming key id %s", code, stderr, id)
			}
			after := dirBytes(t, dir)
			if len(after) != len(before) {
				t.Fatalf("files in the data directory: %d before, %d after", len(before), len(after))
			}
			for name, b := range before {
				// The lock file holds the pid of the last process that took the lock, not data.
				if filepath.Base(name) != "outbox.lock" && !bytes.Equal(after[name], b) {
					t.Fatalf("%s changed", name)
				}
			}
		})
	}
}

func TestEncrypt_RotationWithTwoKeyFiles_RekeyThenDecrypt(t *testing.T) {
	keys := t.TempDir()
	oldKey, _ := keygen(t, keys, "old.key")
	newKey, newID := keygen(t, keys, "new.key")
	dir := t.TempDir()
	fillDataDir(t, dir, map[string]string{"OUTBOX_QUEUE_ENCRYPTION_KEY_FILES": oldKey}, 1)

	// The new key first, the old one after it: the old records still open, new ones are sealed
	// with the new key; the new key alone cannot open the old records yet.
	both := map[string]string{"OUTBOX_DATA_DIR": dir, "OUTBOX_QUEUE_ENCRYPTION_KEY_FILES": newKey + "," + oldKey}
	fillDataDir(t, dir, both, 2)
	cwd := t.TempDir()
	code, out, stderr := runCLI(t, cwd, both, "", "inspect")
	// The queued events of the first fill went to the 404 of the second: 2 dead batches (one
	// sealed with each key) and 5 newly queued events.
	if code != 0 || !strings.Contains(out, "5 events") || !strings.Contains(out, "2 batches, 8 events") {
		t.Fatalf("inspect with both keys: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	newOnly := map[string]string{"OUTBOX_DATA_DIR": dir, "OUTBOX_QUEUE_ENCRYPTION_KEY_FILES": newKey}
	if code, _, stderr := runCLI(t, cwd, newOnly, "", "inspect"); code != 2 {
		t.Fatalf("inspect with the new key alone before rekey: exit %d, want 2; stderr:\n%s", code, stderr)
	}

	code, out, stderr = runCLI(t, cwd, both, "", "rekey")
	if code != 0 || !strings.Contains(out, newID) {
		t.Fatalf("rekey: exit %d, out %q, err %s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, cwd, newOnly, "", "inspect", "--sample", "1")
	if code != 0 || !strings.Contains(out, "2 batches, 8 events") || !strings.Contains(out, knownEmail) {
		t.Fatalf("inspect with the new key alone after rekey: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}

	code, out, stderr = runCLI(t, cwd, newOnly, "", "rekey", "--decrypt")
	if code != 0 || !strings.Contains(out, "written plain") {
		t.Fatalf("rekey --decrypt: exit %d, out %q, err %s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, cwd, map[string]string{"OUTBOX_DATA_DIR": dir}, "", "inspect")
	if code != 0 || !strings.Contains(out, "5 events") || !strings.Contains(out, "2 batches, 8 events") {
		t.Fatalf("inspect without keys after rekey --decrypt: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	if data := dirBytes(t, dir)[filepath.Join(dir, "outbox.db")]; !bytes.Contains(data, []byte(knownEmail)) {
		t.Fatal("after rekey --decrypt the data file does not hold the events in the clear")
	}
}

func TestKeygen_Writes32BytesMode0600AndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path, _ := keygen(t, dir, "queue.key")
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != keyring.KeySize || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, size %d, mode %v; want 32 bytes, 0600", err, fi.Size(), fi.Mode().Perm())
	}
	before, _ := os.ReadFile(path)
	code, _, stderr := runCLI(t, dir, nil, "", "keygen", path)
	if after, _ := os.ReadFile(path); code == 0 || !bytes.Equal(before, after) || !strings.Contains(stderr, "never overwritten") {
		t.Fatalf("keygen over an existing file: exit %d, stderr %q; want a refusal and the file unchanged", code, stderr)
	}
}

// encryptionMode is one setting the crash, power-loss and damage tests repeat under: plain,
// and with encryption at rest on (a key file written for the test).
type encryptionMode struct {
	name string
	on   bool
}

// encryptionModes are both settings, plain first.
var encryptionModes = []encryptionMode{{"plain", false}, {"encrypted", true}}

// keyFile writes a key file of 32 random bytes in a temporary directory.
func keyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "queue.key")
	if _, err := keyring.Generate(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// env returns extra (nil: none) with, when the mode encrypts, OUTBOX_QUEUE_ENCRYPTION_KEY_FILES
// set to key.
func (m encryptionMode) env(key string, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range extra {
		out[k] = v
	}
	if m.on {
		out["OUTBOX_QUEUE_ENCRYPTION_KEY_FILES"] = key
	}
	return out
}
