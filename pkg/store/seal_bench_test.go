package store_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// BenchmarkEncryptionAtRest sets the store's two paths that encryption at rest touches side by
// side, plain and sealed, in one run: ingest as the agent does it (8 producers of 100-event
// Appends, fsync'd commits) and the drain of a full queue (Head of 500, then Delete: a lease
// and an ack; the store opened in the timed part, so that its full check of the file, in the
// background as at an agent's restart, counts too). Ingest runs with fsync'd commits, as the
// agent does, and without (ingest-nosync: the CPU path alone, where the writer is the
// bottleneck). b.N is the number of events: ns/op, allocs/op and cpu-µs/event (the process's
// user+sys time) are per event, and events/commit shows how much the writer's groups hold.
// Compare the two rows of one run: make bench's encrypt rows ask that sealed keep at least 90%
// of plain.
func BenchmarkEncryptionAtRest(b *testing.B) {
	for _, path := range []struct {
		name string
		run  func(*testing.B, *keyring.Keyring)
	}{{"ingest", func(b *testing.B, kr *keyring.Keyring) { benchSealedIngest(b, kr, false) }},
		{"ingest-nosync", func(b *testing.B, kr *keyring.Keyring) { benchSealedIngest(b, kr, true) }},
		{"drain", benchSealedDrain}} {
		for _, enc := range []struct {
			name string
			keys *keyring.Keyring
		}{{"encryption=off", nil}, {"encryption=on", benchKeys(b)}} {
			b.Run(fmt.Sprintf("%s/%s", path.name, enc.name), func(b *testing.B) { path.run(b, enc.keys) })
		}
	}
}

// benchEvent is an event of the size of make bench's (about 545 bytes).
var benchEvent = bytes.Repeat([]byte(`{"type":"track","event":"x"}`), 20)[:545]

func benchSealedIngest(b *testing.B, keys *keyring.Keyring, noSync bool) {
	var commits atomic.Int64
	s, err := store.Open(b.TempDir(), store.Options{Keys: keys, NoSync: noSync, OnCommit: func(int, time.Duration) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const producers, perCall = 8, 100
	call := make([][]byte, perCall)
	for i := range call {
		call[i] = benchEvent
	}
	calls := int64(max(b.N/perCall, 1))
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range producers {
		wg.Go(func() {
			for next.Add(1) <= calls {
				if err := s.Append(context.Background(), call); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(calls*perCall)/1000, "cpu-µs/event")
	b.ReportMetric(float64(calls*perCall)/float64(max(commits.Load(), 1)), "events/commit")
}

func benchSealedDrain(b *testing.B, keys *keyring.Keyring) {
	dir := b.TempDir()
	s, err := store.Open(dir, store.Options{Keys: keys, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	call := make([][]byte, 1000)
	for i := range call {
		call[i] = benchEvent
	}
	for n := 0; n < max(b.N, 1); n += len(call) {
		if err := s.Append(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// Opened again, fsync on: the drain of a queue found at start, as after a restart, its
	// full check in the background (every file is large enough here).
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	checked := make(chan struct{})
	s, err = store.Open(dir, store.Options{Keys: keys, BackgroundCheckBytes: -1, Logger: slog.New(checkPassed{checked})})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for drained := 0; drained < b.N; {
		bt, err := s.Head(context.Background(), 500, 1<<30)
		if err != nil || bt == nil {
			b.Fatalf("head after %d events: %v (batch %v)", drained, err, bt)
		}
		drained += len(bt.Keys())
		if err := s.Delete(context.Background(), bt.Keys()); err != nil {
			b.Fatal(err)
		}
		bt.Release()
	}
	<-checked // the check's CPU is the drain's too
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/1000, "cpu-µs/event")
}

// checkPassed is a log handler that closes its channel when the store logs that its full check
// passed (and fails the benchmark on an error).
type checkPassed struct{ done chan struct{} }

func (h checkPassed) Enabled(context.Context, slog.Level) bool { return true }
func (h checkPassed) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h checkPassed) WithGroup(string) slog.Handler            { return h }
func (h checkPassed) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "data file check passed" {
		close(h.done)
	}
	return nil
}
