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

// The gzip ceiling is the best of gzipRounds rounds of at least gzipRoundMin each: one pass
// over -ceiling-events takes about 0.2 s, too short to be steady on a shared machine.
const (
	gzipRounds   = 3
	gzipRoundMin = 500 * time.Millisecond
)

// gzipResult is what the gzip ceiling measured.
type gzipResult struct {
	rounds []float64 // events/s of each round
	ratio  float64   // wire/plain bytes over all rounds
}

// best is the fastest round's events/s: the ceiling.
func (r gzipResult) best() float64 {
	var b float64
	for _, v := range r.rounds {
		b = max(b, v)
	}
	return b
}

// gzipCeiling measures gzip alone on the bodies the drain sends: batches of batchSize
// events of the run spliced into a Segment body (uploader.AppendBody), compressed by one
// goroutine with a reused klauspost gzip writer at BestSpeed (the uploader's library and
// level), the events made before the clock starts. It runs gzipRounds rounds, each made of
// whole passes over events until gzipRoundMin has passed.
func gzipCeiling(gen payloadFunc, events, batchSize int) (gzipResult, error) {
	var res gzipResult
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		return res, err
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
	pass := func() error {
		for done, b := 0, 0; done < events; done, b = done+batchSize, b+1 {
			n := min(batchSize, events-done)
			raw = uploader.AppendBody(raw[:0], batches[b%pool][:n], time.Now())
			out.Reset()
			zw.Reset(&out)
			if _, err := zw.Write(raw); err != nil {
				return err
			}
			if err := zw.Close(); err != nil {
				return err
			}
			plain += int64(len(raw))
			wire += int64(out.Len())
		}
		return nil
	}
	for range gzipRounds {
		start := time.Now()
		passes := 0
		for passes == 0 || time.Since(start) < gzipRoundMin {
			if err := pass(); err != nil {
				return res, err
			}
			passes++
		}
		res.rounds = append(res.rounds, float64(passes*events)/time.Since(start).Seconds())
	}
	res.ratio = float64(wire) / float64(plain)
	return res, nil
}
