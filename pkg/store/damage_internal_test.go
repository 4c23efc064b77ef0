package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// damagedStore writes n events into a fresh store in a temp dir and closes it.
func damagedStore(t *testing.T, n int) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	s, err := Open(dir, Options{NoSync: true, CompactMinBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 100 {
		var evs [][]byte
		for j := i; j < min(i+100, n); j++ {
			evs = append(evs, fmt.Appendf(nil, `{"messageId":"m%06d","pad":"%0200d"}`, j, j))
		}
		if err := s.Append(context.Background(), evs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, FileName)
}

// eventsRoot returns the page size and the root page of the events bucket, read
// with the page walker from the newest meta page.
func eventsRoot(t *testing.T, data []byte) (ps int, root uint64) {
	t.Helper()
	m, valid := metaPages(data)
	if valid != 2 {
		t.Fatal("fixture without two valid meta pages")
	}
	f := &pageFile{data: data, pageSize: m.pageSize, seen: map[uint64]bool{}}
	f.walk(m.root, 0, func(flags uint32, k, v []byte) {
		if flags&bucketLeafFlag != 0 && bytes.Equal(k, format.BucketEvents) {
			root = binary.LittleEndian.Uint64(v)
		}
	})
	if root == 0 {
		t.Fatal("events bucket is inline; write more events")
	}
	return m.pageSize, root
}

// renameEvents damages the name of the events bucket in the root page.
func renameEvents(t *testing.T, data []byte) []byte {
	t.Helper()
	m, _ := metaPages(data)
	pg := data[int(m.root)*m.pageSize : int(m.root+1)*m.pageSize]
	i := bytes.Index(pg, format.BucketEvents)
	if i < 0 {
		t.Fatal("no events bucket in the root page")
	}
	pg[i+2] = 'f'
	return data
}

// overwrite writes b at off into the file (seen at once through bbolt's shared map).
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
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
		{"a bucket's name damaged", func(d []byte, _ int, _ uint64) []byte { return renameEvents(t, d) }, "not outbox's buckets"},
		{"100 bytes", func(d []byte, _ int, _ uint64) []byte { return d[:100] }, "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := damagedStore(t, 3000)
			data, _ := os.ReadFile(path)
			ps, root := eventsRoot(t, data)
			data = tc.damage(data, ps, root)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			_, err := Open(dir, Options{})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "outbox recover --data-dir "+dir) {
				t.Fatalf("Open: %v, want a *CorruptError naming %s and outbox recover", err, path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want it to say %q", err, tc.want)
			}
			if took := time.Since(begin); took > time.Second {
				t.Errorf("Open took %s to refuse the file", took)
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
	if err := os.WriteFile(path, renameEvents(t, data), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := Recover(dir)
	if err != nil || rep.Saved != 3000 {
		t.Fatalf("recover: %+v, %v; want all 3000 events saved", rep, err)
	}
}

// TestStore_PageDamagedWhileOpen_ReadAndWriteStopIntakeWithCorruptError damages the events
// bucket's root page under an open store: bbolt panics reading it, in our goroutines.
func TestStore_PageDamagedWhileOpen_ReadAndWriteStopIntakeWithCorruptError(t *testing.T) {
	for _, op := range []string{"head", "delete", "compact", "append-async"} {
		t.Run(op, func(t *testing.T) {
			dir, path := damagedStore(t, 3000)
			corrupt := make(chan error, 1)
			s, err := Open(dir, Options{NoSync: true, CompactMinBytes: -1, OnCorrupt: func(err error) { corrupt <- err }})
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Head(context.Background(), 10, 1<<20)
			if err != nil || b == nil {
				t.Fatalf("head before the damage: %v", err)
			}
			data, _ := os.ReadFile(path)
			ps, root := eventsRoot(t, data)
			overwrite(t, path, int64(root)*int64(ps), make([]byte, ps))
			damaged, _ := os.ReadFile(path)

			switch op {
			case "head":
				_, err = s.Head(context.Background(), 10, 1<<20)
			case "delete":
				err = s.Delete(context.Background(), b.Keys)
			case "compact":
				err = s.Compact(context.Background())
			case "append-async": // answered through its callback, like the group's sync requests
				got := make(chan error, 1)
				if err = s.AppendAsync(context.Background(), [][]byte{[]byte(`{"x":1}`)}, func(e error) { got <- e }); err == nil {
					select {
					case err = <-got:
					case <-time.After(5 * time.Second):
						t.Fatal("the async append in the damaged group was never answered")
					}
				}
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "outbox recover") {
				t.Fatalf("%s on a damaged page: %v, want a *CorruptError naming outbox recover", op, err)
			}
			select {
			case <-corrupt:
			case <-time.After(5 * time.Second):
				t.Fatal("OnCorrupt was not called")
			}
			if err := s.Append(context.Background(), [][]byte{[]byte(`{}`)}); !errors.As(err, &ce) {
				t.Fatalf("append after the damage was found: %v, want the *CorruptError", err)
			}
			if err := s.Close(); err != nil && !errors.As(err, &ce) {
				t.Fatalf("close: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
				t.Fatal("the store wrote to the file after finding it damaged")
			}
		})
	}
}

// A file written with bbolt's stored freelist (its default) passes the check; a freelist that
// frees a page in use does not.
func TestValidate_StoredFreelistIsChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{format.BucketDead, format.BucketEvents, format.BucketMeta} {
				b, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				for i := range 200 {
					if err := b.Put(fmt.Appendf(nil, "k%d-%04d", round, i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	m, _ := metaPages(data)
	if m.freelist == noFreelist {
		t.Fatal("fixture without a stored freelist")
	}
	if err := validateData(data); err != nil {
		t.Fatalf("a healthy file with a stored freelist: %v", err)
	}
	fl := data[int(m.freelist)*m.pageSize:]
	if binary.LittleEndian.Uint16(fl[10:]) == 0 {
		t.Fatal("fixture freelist is empty")
	}
	binary.LittleEndian.PutUint64(fl[pageHeaderSize:], m.root) // free the root page
	if err := validateData(data); err == nil || !strings.Contains(err.Error(), "freelist") {
		t.Fatalf("a freelist that frees the root page: %v, want it refused", err)
	}
}

func TestSortKV_DropsStaleCopiesKeepsRecordsWhoseDamagedKeyCollides(t *testing.T) {
	k := func(b byte) []byte { return append(bytes.Repeat([]byte{1}, 19), b) }
	got := sortKV([]kv{{k(3), []byte("c")}, {k(1), []byte("a")}, {k(2), []byte("b")}, {k(1), []byte("a")}, {k(2), []byte("x")}})
	var vals []string
	for i, r := range got {
		vals = append(vals, string(r.v))
		if i > 0 && bytes.Compare(got[i-1].k, r.k) >= 0 {
			t.Fatalf("keys not strictly increasing at %d", i)
		}
	}
	if strings.Join(vals, "") != "abcx" {
		t.Fatalf("sortKV kept %q, want a, b, c in order and the colliding x after them", vals)
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
	_, err := Recover(dir)
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
