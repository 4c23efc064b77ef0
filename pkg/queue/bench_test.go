package queue_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"

	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// ceilings caches the raw bbolt ceiling per event size for the ratio metric.
var ceilings sync.Map

// rawCeiling measures plain bbolt: 1000 events per fsync'd transaction,
// increasing KSUID keys, FillPercent 1.0. Returns events/s.
func rawCeiling(b *testing.B, size, events int) float64 {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ev := bytes.Repeat([]byte("x"), size)
	k := ksuid.New()
	start := time.Now()
	for done := 0; done < events; done += 1000 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			bk.FillPercent = 1.0
			for i := 0; i < 1000; i++ {
				k = k.Next()
				if err := bk.Put(k[:], append([]byte(nil), ev...)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return float64(events) / time.Since(start).Seconds()
}

func ceilingFor(b *testing.B, size int) float64 {
	if v, ok := ceilings.Load(size); ok {
		return v.(float64)
	}
	c := rawCeiling(b, size, 50000)
	ceilings.Store(size, c)
	return c
}

// BenchmarkRawBoltCeiling is the reference: plain bbolt, 1000 events per fsync'd tx.
func BenchmarkRawBoltCeiling(b *testing.B) {
	for _, size := range []int{500, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			n := max(b.N, 1000)
			b.ReportMetric(rawCeiling(b, size, n), "events/s")
		})
	}
}

// encryptions are the two settings of queue.encryption.key_files the benchmarks compare: off,
// and on with one key (AES-256-GCM on every record written and read).
var encryptions = []struct {
	name string
	keys func(b *testing.B) *keyring.Keyring
}{
	{"encryption=off", func(*testing.B) *keyring.Keyring { return nil }},
	{"encryption=on", func(b *testing.B) *keyring.Keyring {
		kr, err := keyring.New(bytes.Repeat([]byte{7}, keyring.KeySize))
		if err != nil {
			b.Fatal(err)
		}
		return kr
	}},
}

// BenchmarkEnqueue measures durable intake with 1, 8 and 64 producers, with encryption at rest
// off and on.
func BenchmarkEnqueue(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, size := range []int{500, 1024} {
			for _, g := range []int{1, 8, 64} {
				for _, enc := range encryptions {
					mode := "sync_always"
					if !sync {
						mode = "sync_none"
					}
					b.Run(fmt.Sprintf("%s/%dB/goroutines=%d/%s", mode, size, g, enc.name), func(b *testing.B) {
						benchEnqueue(b, !sync, size, g, enc.keys(b))
					})
				}
			}
		}
	}
}

func benchEnqueue(b *testing.B, noSync bool, size, goroutines int, keys *keyring.Keyring) {
	ceiling := ceilingFor(b, size)
	q, err := queue.Open(b.TempDir(), queue.Config{NoSync: noSync, MaxBytes: 1 << 40, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	ev := bytes.Repeat([]byte("x"), size)
	var wg sync.WaitGroup
	per := (b.N + goroutines - 1) / goroutines
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := q.Enqueue(context.Background(), ev); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	rate := float64(per*goroutines) / el.Seconds()
	st := q.Stats()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(rate/ceiling, "ratio_to_ceiling")
	b.ReportMetric(float64(st.Enqueued)/float64(max(st.Commits, 1)), "events/commit")
}

// BenchmarkDrain measures Lease(500)+Ack from a full queue, fsync on, with encryption at rest
// off and on.
func BenchmarkDrain(b *testing.B) {
	for _, enc := range encryptions {
		b.Run(enc.name, func(b *testing.B) { benchDrain(b, enc.keys(b)) })
	}
}

func benchDrain(b *testing.B, keys *keyring.Keyring) {
	dir := b.TempDir()
	q, err := queue.Open(dir, queue.Config{NoSync: true, MaxBytes: 1 << 40, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	ev := bytes.Repeat([]byte("x"), 500)
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = ev
	}
	n := max(b.N, 1000)
	for i := 0; i < n; i += 1000 {
		if err := q.Enqueue(context.Background(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	_ = q.Close()
	q, err = queue.Open(dir, queue.Config{MaxBytes: 1 << 40, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	b.ResetTimer()
	start := time.Now()
	drained := 0
	for {
		bt, err := q.Lease(context.Background(), 500, 1<<30)
		if err != nil {
			b.Fatal(err)
		}
		if bt == nil {
			break
		}
		drained += bt.Len()
		if err := bt.Ack(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(drained)/time.Since(start).Seconds(), "events/s")
}
