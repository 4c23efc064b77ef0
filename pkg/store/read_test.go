package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

func TestReadAfter_StopsBeforeARecordThatFailsItsChecksum(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fill(t, s, 30)
	_ = s.Close()
	scribble(t, filepath.Join(dir, store.FileName), `"m000010"`)
	// The check runs in the background (and fails there); reads go on meanwhile.
	s = mustOpen(t, dir, store.Options{BackgroundCheckBytes: -1})

	head, err := s.Head(context.Background(), 5, 1<<20)
	if err != nil || head == nil || len(head.Events) != 5 {
		t.Fatalf("Head: %v, %v", head, err)
	}
	b, more, err := s.ReadAfter(head.Keys()[4], 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil || len(b.Events) != 5 || !bytes.Equal(b.Events[0], payload(5)) || !bytes.Equal(b.Events[4], payload(9)) || !more {
		t.Fatalf("ReadAfter the head: %d events, more %t; want events 5–9 and more (cut before the bad record)", len(b.Events), more)
	}
	bad, more, err := s.ReadAfter(b.Keys()[4], 100, 1<<20)
	if err != nil || bad != nil || !more {
		t.Fatalf("ReadAfter up to the bad record = %v, %t, %v; want nil, true, nil", bad, more, err)
	}
}

func TestReadAfter_KeysAndEventsDoNotOverlap(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true})
	fill(t, s, 20)
	head, err := s.Head(context.Background(), 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, more, err := s.ReadAfter(head.Keys()[0], 100, 1<<20)
	if err != nil || b == nil || len(b.Events) != 19 || more {
		t.Fatalf("ReadAfter: %v, %t, %v", b, more, err)
	}
	again, _, err := s.ReadAfter(head.Keys()[0], 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b.Events[0] = append(b.Events[0], "tail"...) // must not write into the next key or event
	b.Keys()[0] = append(b.Keys()[0], 0xff)
	for i := 1; i < 19; i++ {
		if !bytes.Equal(b.Events[i], payload(i+1)) || !bytes.Equal(b.Keys()[i], again.Keys()[i]) {
			t.Fatalf("event %d = %q (key %x) after appending to the first", i, b.Events[i], b.Keys()[i])
		}
	}
}

// A released batch's block serves the next read; its keys stay valid (they are held apart),
// so the batch can still be deleted, and the next read's events are its own.
func TestBatchRelease_KeysStayValidAndTheNextReadIsIntact(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true})
	fill(t, s, 40)
	first, err := s.Head(context.Background(), 20, 1<<20)
	if err != nil || first == nil || len(first.Events) != 20 {
		t.Fatalf("Head: %v, %v", first, err)
	}
	keys := make([][]byte, len(first.Keys()))
	for i, k := range first.Keys() {
		keys[i] = bytes.Clone(k)
	}
	first.Release()
	first.Release() // a second call does nothing
	next, _, err := s.ReadAfter(first.Keys()[19], 20, 1<<20)
	if err != nil || next == nil || len(next.Events) != 20 {
		t.Fatalf("ReadAfter a released batch: %v, %v", next, err)
	}
	for i := range 20 {
		if !bytes.Equal(first.Keys()[i], keys[i]) {
			t.Fatalf("key %d changed after Release: %x, want %x", i, first.Keys()[i], keys[i])
		}
		if !bytes.Equal(next.Events[i], payload(20+i)) {
			t.Fatalf("event %d of the next read = %q, want %q", i, next.Events[i], payload(20+i))
		}
	}
	if err := s.Delete(context.Background(), first.Keys()); err != nil {
		t.Fatal(err)
	}
	if ev, _, _ := s.Pending(); ev != 20 {
		t.Fatalf("%d events pending after deleting the released batch, want 20", ev)
	}
}
