package store_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// BenchmarkCPUPerEvent measures the process CPU (user+sys) the store spends per event while
// producers append fsync'd 545-byte events and one consumer drains them in batches of 500
// (Head, then Delete: a lease and an ack), as outbox's rows of make bench do: one
// AppendAsync producer (async), 64 Append producers of one event each (sync64), and 8
// producers of 100-event calls (batch100, the agent's ingest). b.N is the number of events.
func BenchmarkCPUPerEvent(b *testing.B) {
	for _, c := range []struct {
		name       string
		producers  int
		perCall    int
		async      bool
		window     int // async: events in flight at most (0: no bound)
		eventBytes int
	}{
		{"async", 1, 1, true, 150, 545},
		{"asyncfree", 1, 1, true, 0, 545},
		{"sync64", 64, 1, false, 0, 545},
		{"batch100", 8, 100, false, 0, 545},
		{"sync1", 1, 1, false, 0, 545},
		{"sync8", 8, 1, false, 0, 545},
	} {
		for _, enc := range []struct {
			name string
			keys *keyring.Keyring
		}{{"encryption=off", nil}, {"encryption=on", benchKeys(b)}} {
			b.Run(c.name+"/"+enc.name, func(b *testing.B) {
				benchCPU(b, c.producers, c.perCall, c.async, c.window, c.eventBytes, enc.keys)
			})
		}
	}
}

// benchKeys is a keyring of one key: encryption at rest on.
func benchKeys(b *testing.B) *keyring.Keyring {
	kr, err := keyring.New(bytes.Repeat([]byte{7}, keyring.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	return kr
}

func benchCPU(b *testing.B, producers, perCall int, async bool, window, size int, keys *keyring.Keyring) {
	var commits atomic.Int64
	s, err := store.Open(b.TempDir(), store.Options{OnCommit: func(int, time.Duration) { commits.Add(1) }, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := max(b.N, 5000) / perCall * perCall // every call is whole
	ev := bytes.Repeat([]byte("x"), size)
	call := make([][]byte, perCall)
	for i := range call {
		call[i] = ev
	}
	var produced, consumed atomic.Int64
	var stop atomic.Bool // every producer is done: drain what is left
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for consumed.Load() < int64(n) {
			if ev, _, _ := s.Pending(); ev < 500 && produced.Load() < int64(n) && !stop.Load() {
				select {
				case <-s.Notify():
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			bt, err := s.Head(context.Background(), 500, 1<<20)
			if err != nil {
				b.Error(err)
				return
			}
			if bt == nil {
				continue
			}
			if err := s.Delete(context.Background(), bt.Keys()); err != nil {
				b.Error(err)
				return
			}
			consumed.Add(int64(len(bt.Keys())))
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	var next atomic.Int64
	var pending sync.WaitGroup
	slots := make(chan struct{}, max(window, 1)) // async: one per event in flight
	for range producers {
		wg.Go(func() {
			for next.Add(int64(perCall)) <= int64(n) {
				if async {
					if window > 0 {
						slots <- struct{}{}
					}
					pending.Add(1)
					err := s.AppendAsync(context.Background(), call, func(err error) {
						if err != nil {
							b.Error(err)
						}
						produced.Add(int64(perCall))
						if window > 0 {
							<-slots
						}
						pending.Done()
					})
					if err != nil {
						b.Error(err)
						return
					}
					continue
				}
				if err := s.Append(context.Background(), call); err != nil {
					b.Error(err)
					return
				}
				produced.Add(int64(perCall))
			}
		})
	}
	wg.Wait()
	pending.Wait()
	stop.Store(true)
	<-consumerDone
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n)/1000, "cpu-µs/event")
	b.ReportMetric(float64(n)/float64(max(commits.Load(), 1)), "events/commit")
	st := s.Stats()
	b.ReportMetric(float64(st.Compactions), "compactions")
	b.ReportMetric(float64(st.FileBytes)/(1<<20), "file-MiB")
}

// cpuTime is the user+sys CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
