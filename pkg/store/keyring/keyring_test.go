package keyring_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/store/keyring"
)

func TestLoad_RefusesBadKeyFilesNamingTheFileNeverTheBytes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.key", bytes.Repeat([]byte{'k'}, keyring.KeySize))
	short := write("short.key", []byte("kkkkkkkkkkkkkkkk"))
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"a file that does not exist", []string{filepath.Join(dir, "none.key")}, "does not exist"},
		{"a file of the wrong length", []string{short}, "holds 16 bytes"},
		{"the same key twice", []string{good, good}, "given twice"},
		{"an empty name", []string{" "}, "empty file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keyring.Load(tc.paths)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "kkkk") {
				t.Fatalf("Load = %v, want an error saying %q and no key bytes", err, tc.want)
			}
		})
	}
	kr, err := keyring.Load(nil)
	if err != nil || kr.Len() != 0 {
		t.Fatalf("Load of no files = %v, %v; want an empty keyring", kr, err)
	}
	if _, ok := kr.Sealing(); ok {
		t.Fatal("an empty keyring seals")
	}
}

func TestGenerate_WritesAKeyThatLoadsAndNeverOverwrites(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.key")
	id, err := keyring.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.Load([]string{p})
	if err != nil || kr.IDs()[0] != id || len(id.String()) != 8 {
		t.Fatalf("Load = %v, %v; want the generated key with id %s", kr.IDs(), err, id)
	}
	if _, err := keyring.Generate(p); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Fatalf("second Generate = %v, want a refusal", err)
	}
}
