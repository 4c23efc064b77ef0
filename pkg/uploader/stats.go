package uploader

import (
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/queue"
)

// Stats is a snapshot of the client, in the shape of the agent's /v1/status. Zero times
// mean "not known".
type Stats struct {
	Queue    QueueStats
	Dead     DeadStats
	Upload   UploadStats
	Retry    RetryStats
	Store    StoreStats
	Counters Counters
	// AuthPause says whether delivery is paused because the destination refuses our
	// credentials, since when, and the key to fix: the default source's pause, else the first
	// paused source's by name (each source's own is in Sources; the others go on meanwhile).
	AuthPause AuthPauseStats
	// Sources are each source's queued events and last delivery, by name (sources.go).
	Sources []SourceStats
}

// QueueStats describes the events waiting.
type QueueStats struct {
	Events    int64
	Bytes     int64
	OldestAge time.Duration // age of the oldest waiting event; 0 when empty
	// Dropped counts events dropped since Open by reason (DropReasons): "drop_oldest" (evicted
	// by queue.when_full: drop_oldest), "dead_overflow" (in a dead batch dropped past
	// dead.max_bytes), "checksum" (a record that failed its CRC-32C; never uploaded),
	// "suppressed" (an event of a user on the suppress list, dropped at intake), "purged" (in a
	// dead batch an operator purged), "source_full" (refused at intake: its source's share of
	// the queue, sources.<name>.max_bytes, was full).
	Dropped map[string]int64
	// PendingEvents and PendingBytes are the events (and their normalised bytes) that
	// EnqueueAsync accepted and whose done has not been called yet: not yet committed.
	PendingEvents, PendingBytes int64
}

// DropReasons returns every drop reason, for exporting a zero series per reason up front.
func DropReasons() []string {
	return queue.DropReasons()
}

// DropReasonPurged is the drop reason (a key of Stats.Queue.Dropped) of the events in dead
// batches that DeadLetters.Purge deleted.
const DropReasonPurged = queue.DropReasonPurged

// DeadStats describes the dead letters.
type DeadStats struct {
	Batches, Events, Bytes int64
}

// UploadStats describes the last attempts.
type UploadStats struct {
	Destination  string    // the destination's kind: "http", "kafka"
	LastAttempt  time.Time // when the last attempt ended
	LastSuccess  time.Time // when the collector last accepted a batch
	LastResult   string    // "200", "503", "maybe_sent", "hook_error", … of the last attempt
	FailingSince time.Time // first failed attempt since the last success; zero when not failing
	// InFlight is the number of batches leased and not yet delivered or dead-lettered;
	// ConcurrencyLimit is how many may be in flight now (upload.concurrency, or auto's
	// current limit).
	InFlight, ConcurrencyLimit int
}

// RetryStats describes the head batch's retry state.
type RetryStats struct {
	Path         string    // PathNone, PathRateLimit or PathBackoff (the wait in progress)
	Attempt      int       // failed attempts of the head batch (its next X-Retry-Count)
	WaitingUntil time.Time // end of the wait in progress; zero when not waiting
}

// StoreStats describes the bbolt file.
type StoreStats struct {
	FileBytes int64
	Sync      string // "always" or "none"
}

// Counters are cumulative since Open.
type Counters struct {
	EventsEnqueued   int64 // events stored by Enqueue, EnqueueAsync and their Normalized forms
	EventsUploaded   int64 // events in batches the collector accepted
	EventsDead       int64 // events moved to the dead letters
	BatchesUploaded  int64
	BatchesDead      int64
	Requests         int64 // attempts that reached the HTTP client
	RetriesRateLimit int64 // waits on the rate-limit path
	RetriesBackoff   int64 // waits on the counted path
	AuthRefusals     int64 // attempts whose credentials the destination refused (paused, not dead-lettered)
}

// workerState is what the worker publishes for Stats and Flush.
type workerState struct {
	Busy         bool      // a batch is leased and not yet acked or dead-lettered
	Path         string    // the wait in progress, PathNone when not waiting on a budget
	WaitingUntil time.Time // end of that wait
	WaitErr      error     // the failure that caused the wait
	Paused       error     // a *HookError or *ConfigError holding the head batch
	Attempt      int
	LastAttempt  time.Time
	LastSuccess  time.Time
	LastResult   string
	FailingSince time.Time
	InFlight     int // batches in flight (several only with upload.concurrency other than 1)
	Waiting      int // of them, those waiting out a retry wait or a Retry-After pause
	Limit        int // how many may be in flight now
}

// board is what the worker publishes and the Client reads: the worker state (for Stats and
// Flush) and the counters.
type board struct {
	mu       sync.Mutex // guards the fields below
	state    workerState
	changed  chan struct{} // closed and replaced when state changes
	counters Counters
}

func newBoard() *board {
	return &board{state: workerState{Path: PathNone}, changed: make(chan struct{})}
}

// set applies f to the worker state and wakes Flush callers.
func (b *board) set(f func(*workerState)) {
	b.mu.Lock()
	f(&b.state)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// count applies f to the counters.
func (b *board) count(f func(*Counters)) {
	b.mu.Lock()
	f(&b.counters)
	b.mu.Unlock()
}

// read returns the state, the channel closed at its next change, and the counters.
func (b *board) read() (workerState, <-chan struct{}, Counters) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.changed, b.counters
}

// Stats returns a snapshot of the queue, the dead letters, the worker and the counters.
func (c *Client) Stats() Stats {
	qs := c.q.Stats()
	st, _, ctr := c.board.read()
	s := Stats{
		Upload: UploadStats{
			Destination:      c.w.dest.Name(),
			LastAttempt:      st.LastAttempt,
			LastSuccess:      st.LastSuccess,
			LastResult:       st.LastResult,
			FailingSince:     st.FailingSince,
			InFlight:         st.InFlight,
			ConcurrencyLimit: max(st.Limit, 1),
		},
		Retry:     RetryStats{Path: st.Path, Attempt: st.Attempt, WaitingUntil: st.WaitingUntil},
		Store:     StoreStats{Sync: c.cfg.Queue.Sync},
		Counters:  ctr,
		AuthPause: c.authPause(),
	}
	fillQueueStats(&s, qs, c.w.clock.Now())
	s.Queue.PendingEvents, s.Queue.PendingBytes = c.pending()
	s.Sources = c.sourceStats(c.w.clock.Now())
	return s
}

// fillQueueStats copies the queue's part of the snapshot.
func fillQueueStats(s *Stats, qs queue.Stats, now time.Time) {
	s.Queue = QueueStats{Events: qs.Events, Bytes: qs.Bytes, Dropped: qs.Dropped}
	if !qs.Oldest.IsZero() {
		s.Queue.OldestAge = max(now.Sub(qs.Oldest), 0)
	}
	s.Dead = DeadStats{Batches: qs.DeadBatches, Events: qs.DeadEvents, Bytes: qs.DeadBytes}
	s.Store.FileBytes = qs.FileBytes
	if qs.Sync != "" {
		s.Store.Sync = qs.Sync
	}
}
