package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Replace writes the pair over certFile and keyFile the way a renewal tool does: each file is
// written beside its target and renamed over it, so a reader sees either the old file or the
// new one, never half of one. Between the two renames the files do not match.
func (kp *KeyPair) Replace(t testing.TB, certFile, keyFile string) {
	t.Helper()
	for _, f := range []struct {
		path string
		b    []byte
	}{{certFile, kp.CertPEM}, {keyFile, kp.KeyPEM}} {
		tmp := f.path + ".new"
		WriteFile(t, tmp, f.b)
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
}

// SecretDir lays out a directory like a Kubernetes secret volume: tls.crt and tls.key are
// symlinks through ..data, itself a symlink to a timestamped directory; Swap replaces ..data
// atomically, as the kubelet does on a secret update.
type SecretDir struct {
	t   testing.TB
	Dir string
	n   int
}

// NewSecretDir makes a secret directory in a fresh temporary directory holding kp.
func NewSecretDir(t testing.TB, kp *KeyPair) *SecretDir {
	t.Helper()
	d := &SecretDir{t: t, Dir: t.TempDir()}
	d.Swap(kp)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(d.Dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// CertFile is the certificate's path, the one a consumer of the secret is configured with.
func (d *SecretDir) CertFile() string { return filepath.Join(d.Dir, "tls.crt") }

// KeyFile is the private key's path, beside CertFile.
func (d *SecretDir) KeyFile() string { return filepath.Join(d.Dir, "tls.key") }

// Swap writes kp into a new timestamped directory and points ..data at it in one rename.
func (d *SecretDir) Swap(kp *KeyPair) {
	d.t.Helper()
	d.n++
	ts := fmt.Sprintf("..2026_12_02_%d", d.n)
	if err := os.Mkdir(filepath.Join(d.Dir, ts), 0o700); err != nil {
		d.t.Fatal(err)
	}
	kp.Write(d.t, filepath.Join(d.Dir, ts))
	tmp := filepath.Join(d.Dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Dir, "..data")); err != nil {
		d.t.Fatal(err)
	}
}
