package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
)

func payload(i int) []byte {
	return []byte(fmt.Sprintf(`{"messageId":"m%06d","pad":"%s"}`, i, strings.Repeat("x", 200)))
}

func mustOpen(t *testing.T, dir string, opt store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(dir, opt)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func fill(t *testing.T, s *store.Store, n int) {
	t.Helper()
	for i := 0; i < n; i += 100 {
		var evs [][]byte
		for j := i; j < i+100 && j < n; j++ {
			evs = append(evs, payload(j))
		}
		if err := s.Append(context.Background(), evs); err != nil {
			t.Fatal(err)
		}
	}
}

func drainIDs(t *testing.T, s *store.Store) []string {
	t.Helper()
	var ids []string
	for {
		b, err := s.Head(context.Background(), 500, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return ids
		}
		for _, e := range b.Events {
			ids = append(ids, string(e[14:21]))
		}
		if err := s.Delete(context.Background(), b.Keys()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpen_SecondOpenerFailsAtOnceWithErrLocked(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, dir, store.Options{})
	_, err := store.Open(dir, store.Options{})
	if !errors.Is(err, errs.ErrLocked) {
		t.Fatalf("second open: %v, want errs.ErrLocked", err)
	}
	want := fmt.Sprintf("data directory %s is in use by another outbox process (pid %d)", dir, os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q does not contain %q", err, want)
	}
}

func TestOpen_AfterCloseTheLockIsReleased(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir, store.Options{})
}

// scribble flips the bytes of one stored event payload in the file.
func scribble(t *testing.T, path string, marker string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		t.Fatalf("marker %q not in file", marker)
	}
	data[i+len(marker)-1] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpen_CorruptRecordGivesCorruptErrorAndLeavesFileUntouched(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fill(t, s, 300)
	_ = s.Close()
	path := filepath.Join(dir, store.FileName)
	scribble(t, path, `"m000150"`)
	before, _ := os.ReadFile(path)

	_, err := store.Open(dir, store.Options{})
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("open corrupt file: %v, want *CorruptError for %s", err, path)
	}
	if !strings.Contains(err.Error(), "outbox recover --data-dir "+dir) || !errors.Is(err, errs.ErrChecksum) {
		t.Fatalf("message %q lacks the recover hint or the cause", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("a corrupt file was modified by Open")
	}

	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved != 299 || rep.Unreadable != 1 {
		t.Fatalf("recover report %+v, want 299 saved, 1 unreadable", rep)
	}
	if moved, _ := os.ReadFile(rep.MovedTo); !bytes.Equal(moved, before) || filepath.Dir(rep.MovedTo) != dir {
		t.Fatalf("the corrupt file was not kept as is inside the data dir: %s", rep.MovedTo)
	}
	s = mustOpen(t, dir, store.Options{})
	ids := drainIDs(t, s)
	if len(ids) != 299 || ids[0] != "m000000" || ids[149] != "m000149" || ids[150] != "m000151" {
		t.Fatalf("after recover got %d ids, first %v", len(ids), ids[:3])
	}
}

func TestOpen_BackgroundCheckFailureStopsIntake(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fill(t, s, 300)
	_ = s.Close()
	scribble(t, filepath.Join(dir, store.FileName), `"m000299"`)

	failed := make(chan error, 1)
	s, err := store.Open(dir, store.Options{BackgroundCheckBytes: -1, OnCorrupt: func(err error) { failed <- err }})
	if err != nil {
		t.Fatalf("open with background check: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	err = <-failed
	var ce *store.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("OnCorrupt got %v", err)
	}
	if err := s.Append(context.Background(), [][]byte{payload(1)}); !errors.As(err, &ce) {
		t.Fatalf("append after failed check: %v, want *CorruptError", err)
	}
}

func TestStore_FileShrinksAfterFullDrain(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{NoSync: true})
	fill(t, s, 40000) // ~9 MB of payloads
	peak := s.Stats().FileBytes
	if peak < 16<<20 {
		t.Fatalf("peak file %d bytes; test needs a bigger fill", peak)
	}
	if n := len(drainIDs(t, s)); n != 40000 {
		t.Fatalf("drained %d", n)
	}
	st := s.Stats()
	if st.FileBytes > 1<<20 {
		t.Fatalf("file is %d bytes after a full drain (peak %d); want < 1 MiB", st.FileBytes, peak)
	}
	fill(t, s, 10)
	_ = s.Close()
	s = mustOpen(t, dir, store.Options{})
	if n := len(drainIDs(t, s)); n != 10 {
		t.Fatalf("after compaction and reopen: %d events, want 10", n)
	}
}

func TestCompact_OfflineShrinksAndKeepsEvents(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{NoSync: true, CompactMinBytes: -1})
	fill(t, s, 20000)
	b, _ := s.Head(context.Background(), 19990, 1<<30)
	_ = s.Delete(context.Background(), b.Keys())
	_ = s.Close()
	before, after, err := store.Compact(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if after*4 > before {
		t.Fatalf("compact: %d → %d bytes", before, after)
	}
	s = mustOpen(t, dir, store.Options{})
	if ids := drainIDs(t, s); len(ids) != 10 || ids[0] != "m019990" {
		t.Fatalf("after compact: %v", ids)
	}
}
