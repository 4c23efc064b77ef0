package store

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// MaxBodySnippet bounds DeadInfo.Body as stored.
const MaxBodySnippet = 1024

// The reasons a batch is dead-lettered (DeadInfo.Reason): what `outbox dead --reason` and
// DeadFilter.Reason take.
const (
	DeadRejected    = "rejected"     // the destination refused it for good (a non-retryable answer)
	DeadTooLarge    = "too_large"    // the destination refused it as too large, and it could not be split
	DeadBudgetSpent = "budget_spent" // its retry budget ran out (retry.max_retries, max_total_backoff or max_rate_limit_duration)
)

// DeadReasons returns the reasons a batch is dead-lettered, in the order they are documented.
func DeadReasons() []string { return []string{DeadRejected, DeadTooLarge, DeadBudgetSpent} }

// DeadInfo is why and how a batch was dead-lettered. It is saved with the batch as JSON (these
// tags are the file's format).
type DeadInfo struct {
	// Reason is one of DeadReasons. Files written before there were reasons hold the whole
	// sentence here: it is read back as its reason, the sentence in Detail (legacyReason).
	Reason     string `json:"reason"`
	ErrorClass string `json:"error_class,omitempty"` // last network error class, e.g. "maybe_sent"
	Status     int    `json:"status,omitempty"`      // last HTTP status, 0 if none
	// Code is the last answer's result code: the HTTP status ("429"), a destination's own code
	// (a Kafka error name such as "NOT_ENOUGH_REPLICAS") or the network error class. Read back
	// from Status or ErrorClass when a file written before it has none.
	Code         string    `json:"code,omitempty"`
	Detail       string    `json:"detail,omitempty"` // why, in a sentence: the bound spent, the answer
	Attempts     int       `json:"attempts"`
	FirstAttempt time.Time `json:"first_attempt,omitzero"`
	LastAttempt  time.Time `json:"last_attempt,omitzero"`
	Body         []byte    `json:"body,omitempty"` // response body snippet, ≤ MaxBodySnippet
	// Source is the source the batch's events belong to ("" in the file: DefaultSource; read
	// back as DefaultSource). A replay puts them back at its tail.
	Source string `json:"source,omitempty"`
	// Replays counts the times the batch's events were replayed before they died this time:
	// set by the store from the replay runs the events came from (replay.go), whatever the
	// caller put here; 0 for a batch that died on its first journey.
	Replays int `json:"replays,omitempty"`
}

// legacyReason is the reason of the sentence that files written before there were reasons
// hold in DeadInfo.Reason ("rejected: collector answered 400: ...", "too large: ...", "retry
// budget spent: ..."), by its start; "" for a reason that is one already, or unknown.
func legacyReason(reason string) string {
	if slices.Contains(DeadReasons(), reason) {
		return ""
	}
	switch {
	case strings.HasPrefix(reason, "rejected"):
		return DeadRejected
	case strings.HasPrefix(reason, "too large"):
		return DeadTooLarge
	case strings.HasPrefix(reason, "retry budget spent"):
		return DeadBudgetSpent
	}
	return ""
}

// readBack fills what a DeadInfo of an older file lacks: a reason that is a sentence becomes
// its reason with the sentence in Detail, a missing Code comes from Status or ErrorClass, and
// "" is DefaultSource.
func (d *DeadInfo) readBack() {
	d.Source = sourceName(d.Source)
	if r := legacyReason(d.Reason); r != "" {
		if d.Detail == "" {
			d.Detail = d.Reason
		}
		d.Reason = r
	}
	if d.Code == "" {
		if d.Status != 0 {
			d.Code = strconv.Itoa(d.Status)
		} else {
			d.Code = d.ErrorClass
		}
	}
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

// DeadResult is what a replay or a purge of dead batches acted on.
type DeadResult struct {
	Batches int // dead batches replayed or purged
	Events  int // their events
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
func (s *Store) DeadList() ([]DeadBatch, error) { return s.DeadListMatching(DeadFilter{}) }

// DeadListMatching returns the dead batches f matches, oldest first, without events.
func (s *Store) DeadListMatching(f DeadFilter) ([]DeadBatch, error) {
	var out []DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketDead).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := s.decodeDeadBatch(k, v, false)
			if err != nil {
				return err
			}
			if f.Match(d) {
				out = append(out, d)
			}
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
	d.Info.readBack()
	if withEvents {
		d.Events, err = format.DeadEvents(h)
	}
	return d, err
}
