package fsck_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
)

// lossEvent is event i; its messageId "m%06d" sits at bytes 14..21.
func lossEvent(i int) []byte {
	return []byte(fmt.Sprintf(`{"messageId":"m%06d","pad":"%s"}`, i, strings.Repeat("y", 180)))
}

// lossFill writes events 0..n-1 and moves the first dead of them into one
// dead-letter batch (none when dead is 0), then closes the store.
func lossFill(t *testing.T, dir string, n, dead int) {
	t.Helper()
	s, err := store.Open(dir, store.Options{NoSync: true, CompactMinBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx := context.Background()
	for i := 0; i < n; i += 250 {
		var evs [][]byte
		for j := i; j < min(i+250, n); j++ {
			evs = append(evs, lossEvent(j))
		}
		if err := s.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	if dead > 0 {
		b, err := s.Head(ctx, dead, 1<<30)
		if err != nil || len(b.Keys()) != dead {
			t.Fatalf("head for dead batch: %v", err)
		}
		if err := s.MoveDead(ctx, b.Keys(), store.DeadInfo{Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// lossDrain reopens dir and returns the messageIds queued, in order, and the
// number of dead batches.
func lossDrain(t *testing.T, dir string) (ids []string, dead int) {
	t.Helper()
	s, err := store.Open(dir, store.Options{NoSync: true, CompactMinBytes: -1})
	if err != nil {
		t.Fatalf("open after recover: %v", err)
	}
	defer func() { _ = s.Close() }()
	var after []byte
	for {
		b, more, err := s.ReadAfter(after, 1000, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if b != nil {
			for _, e := range b.Events {
				ids = append(ids, string(e[14:21]))
			}
			after = b.Keys()[len(b.Keys())-1]
		}
		if !more || b == nil {
			break
		}
	}
	dl, err := s.DeadList()
	if err != nil {
		t.Fatal(err)
	}
	return ids, len(dl)
}

func wantIDs(from, to int) []string {
	var ids []string
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("m%06d", i))
	}
	return ids
}

// fileMeta reads page size and high-water page id of the newer valid-looking
// meta page (by txid), straight from bbolt's layout.
func fileMeta(t *testing.T, data []byte) (pageSize int, hwm uint64) {
	t.Helper()
	le := binary.LittleEndian
	pageSize = int(le.Uint32(data[24:]))
	m0, m1 := data[16:], data[pageSize+16:]
	if le.Uint64(m1[48:]) > le.Uint64(m0[48:]) { // txid at meta+48
		return pageSize, le.Uint64(m1[40:]) // pgid at meta+40
	}
	return pageSize, le.Uint64(m0[40:])
}

// scribbleMetas writes random bytes over both meta pages' bodies.
func scribbleMetas(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := fileMeta(t, data)
	r := rand.New(rand.NewPCG(1, 2))
	for _, off := range []int{16, ps + 16} {
		for i := off; i < off+64; i++ {
			data[i] = byte(r.Uint32())
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func corruptFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, store.FileName+".corrupt-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRecover_BothMetaPagesDamagedSavesEveryEventByScanning(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 3000, 100)
	path := filepath.Join(dir, store.FileName)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := fileMeta(t, written) // the page size the store wrote the file with
	scribbleMetas(t, path)
	var ce *store.CorruptError
	if _, err := store.Open(dir, store.Options{}); !errors.As(err, &ce) {
		t.Fatalf("open with both meta pages damaged: %v, want *CorruptError", err)
	}

	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved != 2900 || rep.DeadSaved != 1 || !rep.Scanned || rep.PageSize != ps || rep.Healthy {
		t.Fatalf("report %+v, want 2900 saved, 1 dead, scanned at page size %d", rep, ps)
	}
	ids, dead := lossDrain(t, dir)
	if !slices.Equal(ids, wantIDs(100, 3000)) || dead != 1 {
		t.Fatalf("after recover: %d ids (first %v), %d dead batches; want m000100..m002999 in order, 1 dead", len(ids), ids[:min(3, len(ids))], dead)
	}
}

func TestRecover_SecondRunInTheSameInstantNeverOverwritesTheOriginal(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 2000, 0)
	path := filepath.Join(dir, store.FileName)
	scribbleMetas(t, path)
	original := sum(t, path)
	at := time.Date(2026, 11, 29, 20, 58, 44, 0, time.UTC)
	now := func() time.Time { return at }
	// A file the user put there under the name the first run would choose.
	squatter := path + ".corrupt-20261129T205844.000000Z"
	if err := os.WriteFile(squatter, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}

	first, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if first.Saved != 2000 || first.MovedTo != squatter+"-1" {
		t.Fatalf("first run: %+v, want 2000 saved, moved to %s-1", first, squatter)
	}
	if b, _ := os.ReadFile(squatter); string(b) != "mine" {
		t.Fatalf("an existing file at the set-aside name was overwritten: %q", b)
	}

	second, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Healthy || second.MovedTo != "" || second.StoredEvents != 2000 {
		t.Fatalf("second run on the recovered file: %+v, want healthy, nothing moved, 2000 stored", second)
	}

	third, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Now: now, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if third.MovedTo != squatter+"-2" || third.Saved != 2000 {
		t.Fatalf("forced run: %+v, want moved to %s-2", third, squatter)
	}
	if got := sum(t, first.MovedTo); got != original {
		t.Fatal("the original corrupt bytes are no longer on disk under the first set-aside name")
	}
	if n := len(corruptFiles(t, dir)); n != 3 {
		t.Fatalf("%d .corrupt files, want 3 (squatter + 2 runs)", n)
	}
	if ids, _ := lossDrain(t, dir); !slices.Equal(ids, wantIDs(0, 2000)) {
		t.Fatalf("after three runs: %d ids", len(ids))
	}
}

func TestRecover_HealthyFileIsLeftUntouchedUnlessForced(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 500, 50)
	path := filepath.Join(dir, store.FileName)
	before := sum(t, path)

	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fsck.Report{Healthy: true, StoredEvents: 450, StoredDeadBatches: 1}
	if rep != want {
		t.Fatalf("healthy file: %+v, want %+v", rep, want)
	}
	if sum(t, path) != before || len(corruptFiles(t, dir)) != 0 {
		t.Fatal("recover changed or moved a healthy file")
	}
	if _, err := os.Stat(path + ".recover"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}

	rep, err = fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Healthy || rep.Saved != 450 || rep.DeadSaved != 1 || rep.Unreadable != 0 || rep.Scanned || rep.MovedTo == "" {
		t.Fatalf("forced recover of a healthy file: %+v", rep)
	}
	if sum(t, rep.MovedTo) != before {
		t.Fatal("forced recover did not keep the old bytes")
	}
	if ids, dead := lossDrain(t, dir); !slices.Equal(ids, wantIDs(50, 500)) || dead != 1 {
		t.Fatalf("after forced recover: %d ids, %d dead", len(ids), dead)
	}
}

func TestRecover_TruncatedFileReportsTheMissingBytes(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 6000, 0)
	path := filepath.Join(dir, store.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, hwm := fileMeta(t, data)
	size := int64(hwm) * int64(ps) / 2
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}

	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("truncated from %d to %d bytes: %+v", len(data), size, rep)
	if rep.MissingBytes != int64(hwm)*int64(ps)-size || rep.Scanned || rep.Healthy {
		t.Fatalf("report %+v, want MissingBytes %d", rep, int64(hwm)*int64(ps)-size)
	}
	if rep.Saved == 0 || rep.Saved >= 6000 {
		t.Fatalf("saved %d of 6000 from half a file", rep.Saved)
	}
	ids, _ := lossDrain(t, dir)
	if len(ids) != rep.Saved || !slices.IsSorted(ids) {
		t.Fatalf("drained %d ids (sorted %v), report says %d", len(ids), slices.IsSorted(ids), rep.Saved)
	}
	if sum(t, rep.MovedTo) != sha256.Sum256(data[:size]) {
		t.Fatal("the truncated file was not kept as is")
	}
}

func TestRecover_ABadRecordIsCountedAndTheStoredCountShowsTheLoss(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 1000, 0)
	path := filepath.Join(dir, store.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"m000500"`))
	if i < 0 {
		t.Fatal("event m000500 not found in the file")
	}
	data[i+7] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved != 999 || rep.BadRecords != 1 || rep.BadPages != 0 || rep.Unreadable != 1 ||
		rep.StoredEvents != 1000 || rep.MissingBytes != 0 || rep.Scanned || rep.Healthy {
		t.Fatalf("report %+v, want 999 saved, 1 bad record, 1000 stored", rep)
	}
}

func TestRecover_DamagedNewestMetaPageStillSavesTheNewestCommit(t *testing.T) {
	dir := t.TempDir()
	lossFill(t, dir, 1000, 0) // four commits of 250
	path := filepath.Join(dir, store.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.LittleEndian.Uint32(data[24:]))
	newest := 0
	if binary.LittleEndian.Uint64(data[ps+64:]) > binary.LittleEndian.Uint64(data[64:]) {
		newest = ps
	}
	data[newest+40] ^= 0xff // the root pgid: its checksum no longer matches
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := fsck.Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Healthy || rep.Saved != 1000 || rep.Scanned {
		t.Fatalf("report %+v, want not healthy and all 1000 saved", rep)
	}
	if ids, _ := lossDrain(t, dir); !slices.Equal(ids, wantIDs(0, 1000)) {
		t.Fatalf("after recover: %d ids", len(ids))
	}
}
