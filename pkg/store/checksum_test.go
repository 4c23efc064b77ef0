package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/store"
)

// A record at the head that fails its CRC (bit rot under a running store) is never returned:
// Head removes it, counts it once as "checksum", and hands out the events after it.
func TestHead_DropsAndCountsOnceAHeadRecordThatFailsItsChecksum(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fill(t, s, 30)
	testutil.FlipOnDisk(t, filepath.Join(dir, store.FileName), `"m000000"`)

	for round := 0; round < 2; round++ { // a second read must not count it again
		b, err := s.Head(context.Background(), 100, 1<<20)
		if err != nil || b == nil {
			t.Fatalf("Head: %v, %v", b, err)
		}
		if len(b.Events) != 29 || !bytes.Equal(b.Events[0], payload(1)) || !bytes.Equal(b.Events[28], payload(29)) {
			t.Fatalf("Head returned %d events starting %.30s; want events 1–29", len(b.Events), b.Events[0])
		}
		st := s.Stats()
		if st.Dropped["checksum"] != 1 || st.Events != 29 {
			t.Fatalf("after read %d: dropped %v, %d queued; want checksum 1 and 29 queued", round, st.Dropped, st.Events)
		}
	}
}
