package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// boltCeiling measures plain bbolt as pkg/queue's BenchmarkRawBoltCeiling does: values of
// size bytes, 1000 per fsync'd write transaction, strictly increasing KSUID keys, FillPercent
// 1.0, the store's own bolt.Options (map freelist, not synced). Returns events/s.
func boltCeiling(dir string, size, events int) (float64, error) {
	return boltCeilingPerTx(dir, size, events, 1000)
}

// boltCeilingPerTx is boltCeiling with perTx values per fsync'd transaction. With perTx 64 it
// is the most 64 callers that each wait for their commit can get from bbolt on this disk: one
// commit per group of all of them, back to back, nothing else in the way.
func boltCeilingPerTx(dir string, size, events, perTx int) (float64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("bbolt ceiling: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, "ceiling.db"), 0o600,
		&bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, fmt.Errorf("bbolt ceiling: %w", err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte("x"), size)
	k := ksuid.New()
	start := time.Now()
	for done := 0; done < events; done += perTx {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			bk.FillPercent = 1.0
			for range min(perTx, events-done) {
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
