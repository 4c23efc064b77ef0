package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// evictBeyond is a Policy that keeps at most max event bytes, evicting from the head.
type evictBeyond struct{ max int64 }

func (p evictBeyond) Fits(int64) error                       { return nil }
func (p evictBeyond) AdmitSource(string, int64, int64) error { return nil }
func (p evictBeyond) Admit(stored, need int64, _ bool) (int64, error) {
	return max(stored+need-p.max, 0), nil
}
func (p evictBeyond) DeadExcess(int64) int64 { return 0 }

// retryStates returns the keys of the retry states saved in meta.
func retryStates(t *testing.T, s *Store) []string {
	t.Helper()
	var keys []string
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketMeta).Cursor()
		for k, _ := c.Seek([]byte(format.RetryPrefix)); k != nil && bytes.HasPrefix(k, []byte(format.RetryPrefix)); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestEvictOldest_TakesTheRetryStatesOfEvictedBatchesWithIt(t *testing.T) {
	ev := func(i int) []byte {
		return fmt.Appendf(nil, `{"messageId":"m%04d","pad":"%s"}`, i, strings.Repeat("x", 100))
	}
	size := int64(len(ev(0)))
	s, err := Open(t.TempDir(), Options{NoSync: true, Policy: evictBeyond{max: 30 * size}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	batch := func(first, n int) [][]byte {
		evs := make([][]byte, n)
		for i := range evs {
			evs[i] = ev(first + i)
		}
		return evs
	}
	if err := s.Append(ctx, batch(0, 30)); err != nil {
		t.Fatal(err)
	}
	all, err := s.Head(ctx, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, head := range [][]byte{all.Keys()[0], all.Keys()[10], all.Keys()[20]} { // three batches in flight
		if err := s.SaveRetry(ctx, head, 10, []byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, batch(30, 15)); err != nil { // evicts the first 15 events
		t.Fatal(err)
	}
	got := retryStates(t, s)
	want := []string{string(retryKey(DefaultSource, all.Keys()[20]))}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("retry states after evicting the first batch and half the second: %q, want only the third's %q", got, want)
	}
}

// TestHead_ReadsTheStatesAndDeadInfoAnOlderBuildWrote writes, straight into the file, the bytes
// an older build wrote: the single head retry state (format.MetaRetry), a per-batch state and a
// dead batch, each with its JSON as that build encoded it. The store hands the retry states
// back as they were saved (pkg/queue decodes them) and reads the DeadInfo.
func TestHead_ReadsTheStatesAndDeadInfoAnOlderBuildWrote(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evs := make([][]byte, 10)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"messageId":"m%02d"}`, i)
	}
	if err := s.Append(ctx, evs); err != nil {
		t.Fatal(err)
	}
	all, err := s.Head(ctx, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	keys := all.Keys()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	const (
		headJSON = `{"a":3,"r":2,"b":1700000000000000000}`
		nextJSON = `{"a":1,"r":0,"l":1700000000500000000}`
		infoJSON = `{"reason":"rejected","error_class":"status","status":400,"attempts":2,"first_attempt":"2023-11-14T22:13:20Z","body":"bm9wZQ=="}`
	)
	saved := func(k []byte, count uint32, state string) []byte {
		v := append(append([]byte(nil), k...), binary.BigEndian.AppendUint32(nil, count)...)
		return format.EncodeRecord(append(v, state...))
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadID := ksuid.New()
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(format.BucketMeta)
		if err := meta.Put(format.MetaRetry, saved(keys[0], 4, headJSON)); err != nil {
			return err
		}
		if err := meta.Put(retryKey(DefaultSource, keys[4]), saved(keys[4], 3, nextJSON)); err != nil {
			return err
		}
		dead := format.EncodeRecord(format.EncodeDead([]byte(infoJSON), [][]byte{[]byte(`{"messageId":"d0"}`)}))
		return tx.Bucket(format.BucketDead).Put(deadID.Bytes(), dead)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{NoSync: true}) // corrects the dead counters the write above left off
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, err := s.Head(ctx, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if head.Len() != 4 || string(head.Retry) != headJSON {
		t.Fatalf("head: %d events, retry %q; want the 4 saved with %s", head.Len(), head.Retry, headJSON)
	}
	next, _, err := s.ReadAfter(head.Keys()[3], 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if next.Len() != 3 || string(next.Retry) != nextJSON {
		t.Fatalf("next: %d events, retry %q; want the 3 saved with %s", next.Len(), next.Retry, nextJSON)
	}

	d, err := s.DeadGet(deadID.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := DeadInfo{Reason: "rejected", ErrorClass: "status", Status: 400, Attempts: 2,
		FirstAttempt: time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), Body: []byte("nope")}
	if d.ID != deadID.String() || !d.At.Equal(deadID.Time()) || d.Count != 1 || len(d.Events) != 1 ||
		d.Info.Reason != wantInfo.Reason || d.Info.ErrorClass != wantInfo.ErrorClass || d.Info.Status != wantInfo.Status ||
		d.Info.Attempts != wantInfo.Attempts || !d.Info.FirstAttempt.Equal(wantInfo.FirstAttempt) ||
		!d.Info.LastAttempt.IsZero() || string(d.Info.Body) != "nope" {
		t.Fatalf("dead batch %+v, want ID %s with info %+v and its one event", d, deadID, wantInfo)
	}
	if got := string(encodeDeadInfo(wantInfo)); got != infoJSON {
		t.Errorf("encodeDeadInfo = %s, want %s", got, infoJSON)
	}
}
