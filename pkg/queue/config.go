package queue

import (
	"errors"
	"log/slog"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// WhenFull is the policy when an Enqueue does not fit in Config.MaxBytes.
type WhenFull string

// The WhenFull policies.
const (
	Reject     WhenFull = "reject"      // Enqueue returns errs.ErrQueueFull (the default)
	Block      WhenFull = "block"       // Enqueue waits for room or ctx
	DropOldest WhenFull = "drop_oldest" // events are evicted from the head, counted as dropped
)

// Config configures a Queue. Zero values are documented per field.
type Config struct {
	MaxBytes     int64    // stored event bytes; 0 → 1 GiB
	WhenFull     WhenFull // "" → reject
	NoSync       bool     // queue.sync: none (no fsync on commit)
	DeadMaxBytes int64    // dead-letter event bytes; 0 → 256 MiB
	// SourceMaxBytes is each named source's own share of MaxBytes (sources.<name>.max_bytes):
	// past it only that source's events are refused (errs.ErrSourceFull). A source not listed
	// has no share of its own beyond MaxBytes.
	SourceMaxBytes map[string]int64
	// Quantum is how many bytes a source may lease in its turn before the next source's turn
	// (deficit round robin, drr.go); 0 → 500000 (batch.max_bytes' default).
	Quantum int64
	Logger  *slog.Logger

	// OnCommit, when set, is called after each commit with the events it
	// added and its duration (for a store_commit_duration_seconds histogram).
	OnCommit func(events int, d time.Duration)
	// OnDrop, when set, is called for every drop, with one of DropReasons() as reason.
	OnDrop func(reason string, events int)
	// OnCorrupt, when set, is called once if the background check of a large
	// file fails or a read finds a damaged page while the queue is open;
	// intake has then stopped and the process should exit.
	OnCorrupt func(err error)
	// Now gives the intake time stamped into keys; nil → time.Now.
	Now func() time.Time
	// Keys seal the stored events and dead letters (store.Options.Keys); nil stores them plain.
	Keys *keyring.Keyring
}

// Default bounds.
const (
	DefaultMaxBytes     = 1 << 30
	DefaultDeadMaxBytes = 256 << 20
)

func (c Config) withDefaults() Config {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.DeadMaxBytes == 0 {
		c.DeadMaxBytes = DefaultDeadMaxBytes
	}
	if c.WhenFull == "" {
		c.WhenFull = Reject
	}
	if c.Quantum <= 0 {
		c.Quantum = 500000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports a bad WhenFull or a negative bound, each as an *errs.KeyError naming its
// configuration key (queue.when_full, queue.max_bytes, dead.max_bytes). It is the one place
// these rules live: pkg/uploader's Config.Validate asks it.
func (c Config) Validate() error {
	var problems []error
	switch c.WhenFull {
	case "", Reject, Block, DropOldest:
	default:
		problems = append(problems, errs.KeyErrorf("queue.when_full", "queue.when_full %q: must be reject, block or drop_oldest", string(c.WhenFull)))
	}
	if c.MaxBytes < 0 {
		problems = append(problems, errs.KeyErrorf("queue.max_bytes", "queue.max_bytes %d: must be greater than zero", c.MaxBytes))
	}
	if c.DeadMaxBytes < 0 {
		problems = append(problems, errs.KeyErrorf("dead.max_bytes", "dead.max_bytes %d: must be greater than zero", c.DeadMaxBytes))
	}
	return errors.Join(problems...)
}
