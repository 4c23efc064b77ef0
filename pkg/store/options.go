package store

import (
	"log/slog"
	"time"

	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// Options configures a Store. The zero value is usable: fsync on every
// commit, no bounds, checks in the background above 64 MiB.
type Options struct {
	// NoSync skips fsync on commit (queue.sync: none). A crash may then lose
	// acknowledged events, never corrupt the file's structure.
	NoSync bool
	// Policy decides whether events fit, what to evict for them, and how many
	// dead letters to keep (see Policy); nil keeps everything.
	Policy Policy
	// Logger receives warnings (drops, compaction, check failures); nil discards.
	Logger *slog.Logger
	// OnCommit, when set, is called by the writer after each successful commit
	// with the number of events it appended and its duration (begin to fsync,
	// without the time its group spent waiting for callers to come back).
	OnCommit func(events int, d time.Duration)
	// OnDrop, when set, is called for every drop with its reason and count.
	OnDrop func(reason string, events int)
	// OnCorrupt, when set, is called once when the background check fails or
	// a read or write finds a damaged page while the store is open; from then
	// on every write returns the *CorruptError.
	OnCorrupt func(err error)
	// Now gives the intake time put into keys; nil means time.Now.
	Now func() time.Time
	// BackgroundCheckBytes: a file larger than this is checked in the
	// background so intake is ready at once; 0 means 64 MiB, <0 always.
	BackgroundCheckBytes int64
	// Keys seal every record of the events and dead buckets (queue.encryption.key_files): the
	// first seals, every key opens. nil stores plain records. See doc.go, "Encryption at rest".
	Keys *keyring.Keyring
	// CompactMinBytes: the file is compacted online (after the queue
	// drained, see doc.go) only when larger than this. 0 means 1 MiB; <0
	// disables online compaction.
	CompactMinBytes int64
}

// Drop reasons reported in Stats.Dropped and to OnDrop.
const (
	ReasonDropOldest   = "drop_oldest"   // evicted from the head by the when_full policy
	ReasonDeadOverflow = "dead_overflow" // dead batch dropped past DeadMaxBytes
	ReasonChecksum     = "checksum"      // record failed its CRC at lease time
	ReasonSuppressed   = "suppressed"    // dropped at intake: its user is on the suppress list (CountDropped)
	ReasonPurged       = "purged"        // dead batch deleted by an operator (Purge)
	ReasonSourceFull   = "source_full"   // refused: its source's share of the queue (sources.<name>.max_bytes) was full
)

// DropReasons returns every drop reason, in the order above: the keys Stats.Dropped may hold.
func DropReasons() []string {
	return []string{ReasonDropOldest, ReasonDeadOverflow, ReasonChecksum, ReasonSuppressed, ReasonPurged, ReasonSourceFull}
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BackgroundCheckBytes == 0 {
		o.BackgroundCheckBytes = 64 << 20
	}
	if o.CompactMinBytes == 0 {
		o.CompactMinBytes = 1 << 20
	}
	return o
}
