package store

import (
	"context"
	"errors"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Batch is a run of events from the head of the queue, copied out of bbolt.
type Batch struct {
	Keys   [][]byte // event keys, ascending
	Events [][]byte // payloads, parallel to Keys
	Bytes  int      // sum of len(Events)
	Retry  []byte   // saved retry state when this is the saved head batch, else nil
}

// Head returns up to maxEvents oldest events totalling at most maxBytes
// (always at least one), or nil when the queue is empty. When a retry state
// was saved for the head, the batch is the saved one (its event count,
// ignoring the limits) and carries the state. A head record that fails its
// checksum is removed (counted as dropped, reason "checksum") and never
// returned; a later failing record ends the batch before it.
func (s *Store) Head(ctx context.Context, maxEvents, maxBytes int) (*Batch, error) {
	if maxEvents <= 0 {
		maxEvents = 1
	}
	for {
		var out *Batch
		var bad []byte
		err := s.view(func(tx *bolt.Tx) error {
			out, bad = readHead(tx, maxEvents, maxBytes)
			return nil
		})
		if err != nil || bad == nil {
			return out, err
		}
		if err := s.submit(ctx, &request{kind: opDropCorrupt, keys: [][]byte{bad}}); err != nil {
			return nil, err
		}
	}
}

func readHead(tx *bolt.Tx, maxEvents, maxBytes int) (*Batch, []byte) {
	c := tx.Bucket(bucketEvents).Cursor()
	k, v := c.First()
	b, bad, _ := readRun(tx, c, k, v, maxEvents, maxBytes)
	return b, bad
}

// DeadBatch is one dead-letter batch. Events is filled only by DeadGet.
type DeadBatch struct {
	ID     ksuid.KSUID // also the time it was dead-lettered
	Info   []byte      // opaque to the store (pkg/queue's DeadInfo)
	Count  int         // events
	Bytes  int64       // event bytes
	Events [][]byte
}

// DeadList returns every dead batch, oldest first, without events.
func (s *Store) DeadList() ([]DeadBatch, error) {
	var out []DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := decodeDeadBatch(k, v, false)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// DeadGet returns one dead batch with its events, or errs.ErrNotFound.
func (s *Store) DeadGet(id []byte) (DeadBatch, error) {
	var out DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketDead).Get(id)
		if v == nil {
			return errs.ErrNotFound
		}
		var err error
		out, err = decodeDeadBatch(id, v, true)
		return err
	})
	return out, err
}

func decodeDeadBatch(k, v []byte, withEvents bool) (DeadBatch, error) {
	id, err := ksuid.FromBytes(k)
	if err != nil {
		return DeadBatch{}, err
	}
	p, err := decodeRecord(v)
	if err != nil {
		return DeadBatch{}, errors.Join(errors.New("dead batch "+id.String()), err)
	}
	h, err := decodeDeadHeader(p)
	if err != nil {
		return DeadBatch{}, err
	}
	d := DeadBatch{ID: id, Info: append([]byte(nil), h.info...), Count: h.events, Bytes: h.bytes}
	if withEvents {
		d.Events, err = deadEvents(h)
	}
	return d, err
}
