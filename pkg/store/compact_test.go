package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
)

// steppingClock is an injected store clock that moves a minute per reading,
// so compactInterval never holds a compaction back.
func steppingClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Minute) }
}

func drainAll(t *testing.T, s *store.Store) int {
	t.Helper()
	n := 0
	for {
		b, err := s.Head(context.Background(), 500, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return n
		}
		n += len(b.Keys())
		if err := s.Delete(context.Background(), b.Keys()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStore_SteadyIntakeAndDrainWithSmallLiveDataDoesNotCompactRepeatedly(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Now: steppingClock()})
	var peakFile, peakBytes int64
	for cycle := 0; cycle < 20; cycle++ {
		fill(t, s, 3500) // ~0.8 MB of payloads: the queue stays small
		st := s.Stats()
		peakFile, peakBytes = max(peakFile, st.FileBytes), max(peakBytes, st.Bytes)
		if n := drainAll(t, s); n != 3500 {
			t.Fatalf("cycle %d drained %d events, want 3500", cycle, n)
		}
	}
	// The premise: a drained file over 1 MiB, which a rule looking only at
	// "drained and larger than 2 × live + 1 MiB" would compact every cycle.
	if peakFile <= 1<<20 || peakBytes > 900_000 {
		t.Fatalf("premise: peak file %d bytes (want > 1 MiB), peak live %d bytes (want small)", peakFile, peakBytes)
	}
	st := s.Stats()
	if st.Compactions > 1 {
		t.Fatalf("%d compactions in 20 cycles of steady intake and drain; the file regrows to the same size, so at most 1 is useful", st.Compactions)
	}
	if st.FileBytes > peakFile {
		t.Fatalf("file grew to %d bytes past its steady size %d", st.FileBytes, peakFile)
	}
}

func TestStore_BacklogDrainCompactsOnceEvenAfterSteadyTraffic(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Now: steppingClock()})
	for cycle := 0; cycle < 3; cycle++ { // steady traffic first: sets the steady size
		fill(t, s, 3500)
		drainAll(t, s)
	}
	before := s.Stats().Compactions
	fill(t, s, 40000) // a backlog of ~9 MB
	peak := s.Stats().FileBytes
	if n := drainAll(t, s); n != 40000 {
		t.Fatalf("drained %d", n)
	}
	st := s.Stats()
	if st.FileBytes > 1<<20 {
		t.Fatalf("file is %d bytes after the backlog drained (peak %d); want ≤ 2 × live + 1 MiB = 1 MiB", st.FileBytes, peak)
	}
	if n := st.Compactions - before; n != 1 {
		t.Fatalf("the drain compacted %d times, want once", n)
	}
}

func TestStore_OnlineCompactionAtMostOncePerInterval(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Now: clock})
	for round, tc := range []struct {
		advance     time.Duration
		compactions int64
	}{
		{0, 1},               // the first drained backlog compacts at once
		{time.Second, 1},     // a second one within the interval is held back
		{5 * time.Second, 2}, // past the interval, the next drain compacts
	} {
		mu.Lock()
		now = now.Add(tc.advance)
		mu.Unlock()
		fill(t, s, 20000)
		drainAll(t, s)
		if got := s.Stats().Compactions; got != tc.compactions {
			t.Fatalf("round %d: %d compactions, want %d", round, got, tc.compactions)
		}
	}
}

func TestStore_CompactionLosesNoConcurrentAppend(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Now: steppingClock()})
	const producers, perProducer = 4, 5000
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Go(func() {
			for i := 0; i < perProducer; i += 50 {
				evs := make([][]byte, 0, 50)
				for j := i; j < i+50; j++ {
					evs = append(evs, payload(p*perProducer+j))
				}
				if err := s.Append(context.Background(), evs); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	compactor := make(chan struct{})
	go func() { // explicit compactions on top of the online ones, while appends are in flight
		defer close(compactor)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Compact(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[string]bool{}
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		b, err := s.Head(context.Background(), 500, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			if finished {
				break
			}
			continue
		}
		for _, e := range b.Events {
			id := string(e[14:21])
			if seen[id] {
				t.Fatalf("event %s delivered twice", id)
			}
			seen[id] = true
		}
		if err := s.Delete(context.Background(), b.Keys()); err != nil {
			t.Fatal(err)
		}
	}
	<-compactor
	if len(seen) != producers*perProducer {
		t.Fatalf("drained %d distinct events, want %d", len(seen), producers*perProducer)
	}
	if n := s.Stats().Compactions; n < 3 {
		t.Fatalf("%d compactions ran while appends were in flight; the test proves little", n)
	}
}
