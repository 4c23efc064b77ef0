package store

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// MaxBodySnippet bounds DeadInfo.Body as stored.
const MaxBodySnippet = 1024

// DeadInfo is why and how a batch was dead-lettered. It is saved with the batch as JSON (these
// tags are the file's format).
type DeadInfo struct {
	Reason       string    `json:"reason"`                // e.g. "rejected", "budget_spent"
	ErrorClass   string    `json:"error_class,omitempty"` // last error class, e.g. "maybe_sent"
	Status       int       `json:"status,omitempty"`      // last HTTP status, 0 if none
	Attempts     int       `json:"attempts"`
	FirstAttempt time.Time `json:"first_attempt,omitzero"`
	LastAttempt  time.Time `json:"last_attempt,omitzero"`
	Body         []byte    `json:"body,omitempty"` // response body snippet, ≤ MaxBodySnippet
	// Source is the source the batch's events belong to ("" in the file: DefaultSource; read
	// back as DefaultSource). A replay puts them back at its tail.
	Source string `json:"source,omitempty"`
}

// DeadBatch is one dead-letter batch: the one dead-batch type from the store to the admin API
// (pkg/queue and pkg/uploader name it too).
type DeadBatch struct {
	ID     string    // KSUID string, the batch's key (DeadGet, Replay and Purge take its bytes)
	At     time.Time // when it was dead-lettered (the ID's second)
	Info   DeadInfo
	Count  int      // events
	Bytes  int64    // event bytes
	Events [][]byte // filled by DeadGet only
}

// encodeDeadInfo is d as stored, its Body cut to MaxBodySnippet.
func encodeDeadInfo(d DeadInfo) []byte {
	if len(d.Body) > MaxBodySnippet {
		d.Body = d.Body[:MaxBodySnippet]
	}
	b, _ := json.Marshal(d) // cannot fail: strings, numbers, times and bytes only
	return b
}

// DeadList returns every dead batch, oldest first, without events.
func (s *Store) DeadList() ([]DeadBatch, error) {
	var out []DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketDead).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := s.decodeDeadBatch(k, v, false)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// DeadGet returns the dead batch whose key is id (a KSUID's bytes) with its events, or
// errs.ErrNotFound.
func (s *Store) DeadGet(id []byte) (DeadBatch, error) {
	var out DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(format.BucketDead).Get(id)
		if v == nil {
			return errs.ErrNotFound
		}
		var err error
		out, err = s.decodeDeadBatch(id, v, true)
		return err
	})
	return out, err
}

func (s *Store) decodeDeadBatch(k, v []byte, withEvents bool) (DeadBatch, error) {
	id, err := ksuid.FromBytes(k)
	if err != nil {
		return DeadBatch{}, err
	}
	p, err := s.codec.Payload(format.BucketDead, k, v)
	if err != nil {
		return DeadBatch{}, errors.Join(errors.New("dead batch "+id.String()), err)
	}
	h, err := format.DecodeDeadHeader(p)
	if err != nil {
		return DeadBatch{}, err
	}
	d := DeadBatch{ID: id.String(), At: id.Time(), Count: h.Events, Bytes: h.Bytes}
	_ = json.Unmarshal(h.Info, &d.Info) // an unreadable info leaves the batch listed, without its reason
	d.Info.Source = sourceName(d.Info.Source)
	if withEvents {
		d.Events, err = format.DeadEvents(h)
	}
	return d, err
}
