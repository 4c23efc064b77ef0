package store_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

// TestEncryption_AppendsSealedOffTheWriterAreWholeWhateverSharesTheirGroup has producers
// append sealed events concurrently, in calls large enough for the writer to hand their
// sealing to the sealer's goroutines and in calls of one event that it seals itself, while
// other requests of the same groups read records the groups appended: a forget, and the
// evictions of queue.when_full: drop_oldest. Every record must be sealed before anything reads
// it and before its commit: after a reopen (the full check opens every record) every event
// left reads back once, in its producer's order, and nothing was dropped as damaged.
func TestEncryption_AppendsSealedOffTheWriterAreWholeWhateverSharesTheirGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int64 // 0: no bound
		forget   bool
	}{
		{"appends alone", 0, false},
		{"with a forget in the groups", 0, true},
		{"with drop_oldest evicting in the groups", 64 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opt := store.Options{NoSync: true, Keys: testKeys(t, 1)}
			if tc.maxBytes > 0 {
				opt.Policy = quotaPolicy(tc.maxBytes, true)
			}
			s, err := store.Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			const producers, calls = 4, 30
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for c := range calls {
						size := 50 // handed to the sealer
						if c%3 == 0 {
							size = 1 // sealed by the writer
						}
						evs := make([][]byte, size)
						for i := range evs {
							evs[i] = fmt.Appendf(nil, `{"p":%d,"c":%03d,"i":%03d,"forget":%t}`, p, c, i, i%5 == 0)
						}
						if err := s.Append(context.Background(), evs); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			appending := make(chan struct{})
			go func() { wg.Wait(); close(appending) }()
			forgotten := 0
			if tc.forget {
				// At least 20 forgets, and on until one found events, while the appends go on:
				// on a loaded machine the first ones may run before any append has committed.
			forgets:
				for rounds := 0; rounds < 20 || forgotten == 0; rounds++ {
					select {
					case <-appending:
						break forgets
					default:
					}
					r, err := s.Forget(context.Background(), func(e []byte) bool { return bytes.Contains(e, []byte(`"forget":true`)) })
					if err != nil {
						t.Fatal(err)
					}
					forgotten += r.Queued
				}
			}
			<-appending
			evicted := s.Stats().Dropped[store.ReasonDropOldest]
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s = mustOpen(t, dir, opt)
			b, err := s.Head(context.Background(), 1<<20, 1<<30)
			if err != nil || b == nil {
				t.Fatalf("head after reopen: %v, %v", b, err)
			}
			appended := producers * (calls/3*1 + (calls-calls/3)*50)
			if want := appended - forgotten - int(evicted); len(b.Events) != want {
				t.Fatalf("read back %d events, want %d (appended %d, forgotten %d, evicted %d)", len(b.Events), want, appended, forgotten, evicted)
			}
			if tc.forget && forgotten == 0 {
				t.Fatal("the forgets found nothing to delete: they did not share groups with the appends")
			}
			if tc.maxBytes > 0 && evicted == 0 {
				t.Fatal("nothing was evicted: the bound did not make the groups evict")
			}
			last := map[byte][]byte{}
			for _, e := range b.Events {
				p := e[5] // the producer's digit in {"p":N,...
				if prev := last[p]; prev != nil && bytes.Compare(prev, e) >= 0 {
					t.Fatalf("producer %c: %s read after %s", p, e, prev)
				}
				last[p] = e
			}
			if n := s.Stats().Dropped[store.ReasonChecksum]; n != 0 {
				t.Fatalf("%d records read as damaged", n)
			}
		})
	}
}
