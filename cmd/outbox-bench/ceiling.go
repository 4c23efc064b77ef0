package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// boltCeiling measures plain bbolt as pkg/queue's BenchmarkRawBoltCeiling does: values of
// size bytes, 1000 per fsync'd write transaction, strictly increasing KSUID keys, FillPercent
// 1.0, the store's own bolt.Options (map freelist, not synced). Returns events/s.
func boltCeiling(dir string, size, events int) (float64, error) {
	db, err := bolt.Open(filepath.Join(dir, "ceiling.db"), 0o600,
		&bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, fmt.Errorf("bbolt ceiling: %w", err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte("x"), size)
	k := ksuid.New()
	start := time.Now()
	for done := 0; done < events; done += 1000 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			bk.FillPercent = 1.0
			for range min(1000, events-done) {
				k = k.Next()
				if err := bk.Put(k[:], append([]byte(nil), val...)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("bbolt ceiling: %w", err)
		}
	}
	return float64(events) / time.Since(start).Seconds(), nil
}

// gzipCeiling measures gzip alone on the bodies the drain sends: batches of batchSize
// events of the run spliced into a Segment body (uploader.AppendBody), compressed by one
// goroutine with a reused klauspost gzip writer at BestSpeed (the uploader's library and
// level), the events made before the clock starts. Returns events/s and the compression ratio (wire/plain).
func gzipCeiling(gen payloadFunc, events, batchSize int) (float64, float64, error) {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		return 0, 0, err
	}
	// Twenty distinct batches, made before the clock starts and cycled through.
	const pool = 20
	batches := make([][][]byte, pool)
	for b := range batches {
		batches[b] = make([][]byte, batchSize)
		for i := range batchSize {
			batches[b][i] = gen(b*batchSize + i)
		}
	}
	var raw []byte
	var out bytes.Buffer
	var plain, wire int64
	start := time.Now()
	for done, b := 0, 0; done < events; done, b = done+batchSize, b+1 {
		n := min(batchSize, events-done)
		raw = uploader.AppendBody(raw[:0], batches[b%pool][:n], time.Now())
		out.Reset()
		zw.Reset(&out)
		if _, err := zw.Write(raw); err != nil {
			return 0, 0, err
		}
		if err := zw.Close(); err != nil {
			return 0, 0, err
		}
		plain += int64(len(raw))
		wire += int64(out.Len())
	}
	return float64(events) / time.Since(start).Seconds(), float64(wire) / float64(plain), nil
}
