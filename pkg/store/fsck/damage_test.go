package fsck_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
)

// damagedStore writes n events into a fresh store in a temp dir and closes it.
func damagedStore(t *testing.T, n int) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	lossFill(t, dir, n, 0)
	return dir, filepath.Join(dir, store.FileName)
}

func TestOpen_DamagedStructureIsRefusedBeforeBboltReadsIt(t *testing.T) {
	cases := []struct {
		name   string
		damage func(data []byte, ps int, root uint64) []byte
		want   string
	}{
		{"meta page 0 zeroed", func(d []byte, ps int, _ uint64) []byte { clear(d[:ps]); return d }, "meta page 0"},
		{"meta page 1 with a flipped byte", func(d []byte, ps int, _ uint64) []byte { d[ps+40] ^= 0x10; return d }, "meta page 1"},
		{"events root page of random bytes", func(d []byte, ps int, r uint64) []byte {
			copy(d[int(r)*ps:], bytes.Repeat([]byte{0x5a, 0xc3, 0x17}, ps/3))
			return d
		}, "page "},
		{"file cut in half", func(d []byte, _ int, _ uint64) []byte { return d[:len(d)/2] }, "truncated"},
		{"a bucket's name damaged", func(d []byte, _ int, _ uint64) []byte { return fsck.RenameEvents(t, d) }, "not outbox's buckets"},
		{"100 bytes", func(d []byte, _ int, _ uint64) []byte { return d[:100] }, "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := damagedStore(t, 3000)
			data, _ := os.ReadFile(path)
			ps, root := fsck.EventsRoot(t, data)
			data = tc.damage(data, ps, root)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := store.Open(dir, store.Options{})
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "outbox recover --data-dir "+dir) {
				t.Fatalf("Open: %v, want a *CorruptError naming %s and outbox recover", err, path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want it to say %q", err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("Open changed the damaged file")
			}
		})
	}
}

func TestRecover_BucketWithADamagedNameStillSavesItsEvents(t *testing.T) {
	dir, path := damagedStore(t, 3000)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, fsck.RenameEvents(t, data), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := fsck.Recover(dir)
	if err != nil || rep.Saved != 3000 {
		t.Fatalf("recover: %+v, %v; want all 3000 events saved", rep, err)
	}
}

func TestRecover_CannotWriteTheFreshFile_FailsSayingSoAndChangesNothing(t *testing.T) {
	dir, path := damagedStore(t, 500)
	data, _ := os.ReadFile(path)
	clear(data[:4096]) // meta page 0: not healthy
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the fresh file must go (a full or read-only disk does the same).
	if err := os.MkdirAll(filepath.Join(path+".recover", "in-the-way"), 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := fsck.Recover(dir)
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("recover: %v, want an error saying nothing was changed", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("the damaged file was changed")
	}
	if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 0 {
		t.Fatalf("the damaged file was moved aside: %v", moved)
	}
}

func TestRecover_TruncatedFileSalvagesTheReadablePages(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 2000, 0)
	path := filepath.Join(dir, store.FileName)
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(dir, store.Options{})
	var ce *store.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("open truncated file: %v, want *CorruptError", err)
	}
	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved == 0 || rep.Saved >= 2000 || rep.Unreadable == 0 {
		t.Fatalf("recover of a half file: %+v", rep)
	}
	ids, _ := lossDrain(t, dir)
	if len(ids) != rep.Saved {
		t.Fatalf("drained %d, report says %d saved", len(ids), rep.Saved)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("order lost at %d: %s after %s", i, ids[i], ids[i-1])
		}
	}
}
