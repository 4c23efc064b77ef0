package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

// DataFile returns the path of the data file of the queue in dir.
func DataFile(dir string) string { return filepath.Join(dir, store.FileName) }

// FlipOnDisk damages every copy of marker in the file at path in place, as bit rot under a
// running store would: the last byte of each occurrence is inverted through a write to the
// file, which an open bbolt sees at once through its shared mapping. Every occurrence, because
// copy-on-write leaves older copies of a page in free pages and the live one may be any of them.
// The file is written at the offsets only, never truncated, so a mapping stays valid.
func FlipOnDisk(t testing.TB, path, marker string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte(marker))
		if i < 0 {
			break
		}
		at := off + i + len(marker) - 1
		if _, err := f.WriteAt([]byte{data[at] ^ 0xff}, int64(at)); err != nil {
			t.Fatal(err)
		}
		n++
		off = at + 1
	}
	if n == 0 {
		t.Fatalf("marker %q not in %s", marker, path)
	}
}
