package store

import (
	"bytes"
	"context"
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

// eventsRoot returns the page size and the root page of the events bucket of the healthy file
// at path, as bbolt reads them from a copy (the open store holds the file's bbolt lock).
func eventsRoot(t *testing.T, path string) (ps int, root uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(format.BucketEvents).Root())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatal("events bucket is inline; write more events")
	}
	return db.Info().PageSize, root
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
			ps, root := eventsRoot(t, path)
			overwrite(t, path, int64(root)*int64(ps), make([]byte, ps))
			damaged, _ := os.ReadFile(path)

			switch op {
			case "head":
				_, err = s.Head(context.Background(), 10, 1<<20)
			case "delete":
				err = s.Delete(context.Background(), b.Keys())
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
