// Package store is outbox's running queue storage on one bbolt file: it
// appends records in group commits, reads and deletes them, keeps dead
// letters and the counters, and compacts the file; checking a file at open
// and repairing a damaged one is pkg/store/fsck's. It knows records,
// not policy: how much may be stored, what to evict and how many dead letters
// to keep are asked of the Policy its owner (pkg/queue) gives it.
//
// Its types are the ones every layer above uses, so that nothing converts them on
// the way to the destination: Batch (pkg/queue's Lease wraps it) with its saved
// retry state, DeadBatch with its DeadInfo, Stats
// and the drop reasons. A batch's retry state is opaque bytes here (SaveRetry):
// pkg/queue owns its encoding. A dead batch's DeadInfo (MoveDead) is saved as
// JSON (dead.go).
//
// # Layout
//
// One file, <dir>/outbox.db, next to <dir>/outbox.lock (an flock holding the
// owner's pid; a second opener fails at once with errs.ErrLocked; see
// internal/datadir). Its buckets (events, one events.<name> per source other than the
// default one, dead, meta), the record every value
// is wrapped in ([version byte][CRC-32C of payload][payload], verified by
// every read; sealed with AES-256-GCM instead for events and dead batches when
// Options.Keys is set, see "Encryption at rest"), the counters and the dead-letter payload are the file's format,
// in internal/format, which the offline tools (pkg/store/fsck) read too. Keys
// are KSUIDs made strictly increasing by the writer (a new one that is not
// greater than the last becomes last.Next()), so key order is intake order and
// a key carries its intake second. Files have 16 KiB pages (internal/format
// says why).
//
// # Sources
//
// Each source's events are a FIFO of their own, in their own bucket (sources.go; the layout is
// in internal/format): the events bucket is the source "default", so a file written before
// there were sources opens unchanged with all its events there. Keys are handed out by the one
// writer across all sources, so they stay unique and increasing in the whole file. Every
// request that touches events names its source (the methods ending in In; the others use
// DefaultSource); one group commit holds the requests of every source. The writer keeps each
// source's counters, head, tail and head time beside the totals, publishes them with the
// totals after each commit (Sources), and persists each source's counters in meta, except the
// default source's, which are the totals less the others'. Retry states are saved under a
// prefix per source; a dead batch records its source in its DeadInfo, and a replay puts its
// events back at that source's tail. The Policy is asked for a source's own share
// (AdmitSource, reason source_full) before the queue's bound; drop_oldest evicts the oldest
// events of the whole queue, whatever their source. SaveSourceRecord and SourceRecords keep the
// source registry: what a source that is not configured (a relay source) needs after a restart.
//
// # Dead letters
//
// A dead batch (dead.go) is one record under a new key of the writer's: its DeadInfo as JSON and
// its events, byte for byte. Its reason is one of DeadReasons; a file written before there were
// reasons holds a sentence there, read back as its reason with the sentence in Detail, and its
// code is then read from its HTTP status. DeadFilter (deadfilter.go) picks dead batches by
// source, time, code and reason; its Match is the one place a filter is applied: by
// DeadListMatching, and inside the writer's transaction by ReplayMatching and PurgeMatching, so
// a replay or a purge acts on exactly the batches that match when it commits. A replay notes
// each batch's run of new keys in meta with its replays plus one (replay.go), so that a batch
// its events form later, whatever the uploader's batching made of them, records its replays
// when it dies again; a run goes once none of its events is queued.
//
// # Writes: group commit
//
// All writes go through one writer goroutine. It takes every request waiting
// in its channel (up to 16384), applies them in one write transaction, commits
// once (one fsync unless NoSync) and answers each caller. Requests that arrive
// while the group is being applied join it, until the channel is found empty:
// with many synchronous producers, those answered by the previous commit that
// are back already share this one instead of waiting for the next. Before
// that, a group fills (fill.go): it waits for the callers of AppendAwaited the
// last commit answered, and those already waiting, at most as long as that
// commit took, applying each request as it arrives so that only the write and
// the fsyncs are left once the last is in. A lone caller is the whole expected
// count, so it is committed immediately; unlike bbolt's DB.Batch, no caller
// pays a fixed delay.
// AppendAsync hands its request over without waiting: its callback is called
// on the writer goroutine after the commit, and the callers of Append and
// AppendAsync share the same transactions, so one asynchronous producer fills
// commits of as many events as it queued during the previous one.
// Counters live in memory, are published after each commit (without copying
// anything per commit) and persisted in meta within the same transaction, so
// Stats is cheap.
//
// An append request's records are built by the caller (Append) in one
// block with a slot before each for the key the writer assigns, so the CRC
// and the copy of each event stay off the writer's path. bbolt copies the
// values into its pages at commit and refers to them no longer once the
// transaction has ended, so the writer then returns the blocks to a pool
// (by size class, up to 256 KiB) and later appends reuse them: an event's
// bytes are not allocated again for every append. AppendAsync's requests are
// recycled the same way once answered. A delete
// (an ack: one batch, or several consecutive ones) walks one cursor: it seeks
// the last key, then deletes and steps back (Cursor.Prev; Next after Delete can
// skip a key in bbolt) down to the first, comparing every key the cursor lands
// on with the key expected; a key that differs (keys not one run, or gone) is
// looked up by its own Seek. Each event's size, for the counters, comes from
// the value under the cursor. DropOldest eviction deletes at Cursor.First.
//
// # Intake time
//
// Oldest (and Stats.Oldest) is the intake time of the head event, which drives
// batch.interval and the reported oldest age, so it must be finer than the
// key's second (off by up to 1 s: a batch would leave up to 1 s early, and an
// interval under 1 s would mean almost none). The writer knows the precise time
// (Options.Now) it stamped each append request's keys with, so it keeps, in
// memory, one run (first key, last key, time) per append or replay request
// still queued; a request within 1 ms of the previous run joins it (its events
// then report up to 1 ms older). After each commit that moved the head, runs
// wholly before the head are forgotten and the head's time is its run's. So
// Lease (no change), Ack, DropOldest eviction, dead-lettering and
// checksum drops all move it exactly; replayed events carry the replay time,
// as their new keys do. At most 16384 runs are kept (64 bytes each: 1 MiB,
// in a buffer of at most a few MiB, released when the queue drains):
// past that the oldest are forgotten, which takes at least 16384 queued
// events (33 default batches of 500), so a full batch, not the interval,
// decides when the head leaves.
//
// A key without a run — appended before this process opened the file, or
// forgotten — reports its own second, rounded down: the event is at least that
// old, so after a restart a batch may leave up to 1 s early, never late, and
// only for the events queued before the restart.
//
// Why memory and not the record: an 8-byte time in every record (a v2 record
// format) would survive restarts, but costs 8 bytes and an encode per event on
// disk, a format version that recover and the page walker must learn, and
// buys precision only for the events queued before a restart. The runs cost
// nothing per event (a few per commit) and nothing on disk.
//
// # Reads
//
// Head and ReadAfter verify every record's CRC and copy the keys into one
// allocation and the events into one block from the pools appends use (a first
// walk over the run reads only the lengths), not one allocation per event; a
// batch holds no reference into bbolt's memory map. A consumer that is done
// with a batch's events hands their block back with Batch.Release, so a drain
// reuses a few blocks instead of faulting in fresh memory for every batch; the
// keys (Batch.Keys) stay valid for the ack. The halves of Batch.Split share the
// block. A saved retry state comes back in Batch.Retry as it was saved.
//
// # Appends copy
//
// Append and AppendAsync copy each event (with its CRC) into their request's
// block before the request reaches the writer, which keeps no reference to the
// caller's slices: a caller may reuse its buffer as soon as the call returns.
// The client normalises every Enqueue call into one buffer it reuses for that
// reason.
//
// # Checks, corruption, recovery
//
// No damage to the file may crash the process, and bbolt panics on a damaged
// page, in goroutines of its own where no recover() can catch it. So Open
// never hands bbolt a file before pkg/store/fsck has checked its structure
// with a reader of its own (fsck.ValidateFile: every page of the tree, both
// meta pages, a stored freelist; fsck's doc.go says why that suffices). A
// damaged structure is a *CorruptError, and the file is not modified.
//
// Open then verifies every record's CRC (fsck.CheckRecords, through bbolt in our own
// goroutine): synchronously for small files, in the background above 64 MiB
// (intake is ready at once; if the check fails, every later write returns
// the *CorruptError and OnCorrupt is called). Either way, stored counters
// found off are corrected, with a warning. A file that fails to open or
// check is never modified.
//
// A page damaged after the check (found by a lease, ack, dead-letter read or
// compaction) makes bbolt panic in our goroutine: every read transaction
// (view), the writer's group transaction (guardGroup) and compaction recover
// it into the store's *CorruptError, with page faults made panics
// (debug.SetPanicOnFault) for a file that shrank. bbolt has rolled the
// transaction back; intake stops as above, nothing more is written, and the
// process lives on to report it.
//
// Repairing a damaged file is not the running store's job: `outbox recover`
// (fsck.RecoverWith) salvages it offline, under the same directory lock.
//
// A record whose CRC fails at lease time is never returned: it is removed and
// counted as dropped with reason "checksum".
//
// # Encryption at rest
//
// With Options.Keys (queue.encryption.key_files) every record of the events and dead buckets is
// sealed with AES-256-GCM under the first key, with a fresh nonce, its key id, and its bucket
// and key as additional data (internal/format, seal.go): a record moved under another key or
// into another bucket fails its tag, which reads as a failed checksum (dropped with reason
// "checksum" at lease time, a *CorruptError at the full check, unreadable to recover). Meta
// records (counters, retry states, the seal set) hold no event data and stay plain.
//
// The record's key is chosen by the writer, and the additional data binds it, so an append's
// records cannot be sealed before they reach the writer. The caller does what it can: it
// copies each event into the request's block with its nonce and room for the tag
// (format.Codec.AppendUnsealed; the nonces of one block are a run from one random start,
// format.Nonces, not a crypto/rand call each). The writer puts each record under its key
// unsealed and hands the block to the sealer (sealer.go): goroutines of its own seal the
// records in place (format.Codec.Seal: the AES-GCM pass, no copy, no allocation) while the
// writer goes on with its group, and the writer waits for them before anything reads a record
// of the transaction and before the commit writes the pages. Reads open each record straight
// into the batch's block. Measured on a 545-byte event: about 0.3–0.5 µs to seal and as much
// to open (BenchmarkCodec), most of it a fixed cost per record; BenchmarkEncryptionAtRest sets
// sealed and plain ingest and drain side by side. A drain after a restart opens each record
// twice: once in the full check and once when it is leased.
//
// Open refuses a file whose records need a key Options.Keys lacks before anything is written,
// with a *keyring.MissingError naming the key id. Meta "seal" lists the keys that may have sealed
// a stored record (and whether plain records may be there): the open adds the key it seals with
// (or the plain mark) before the writer runs, so the list is a superset; only when it names a
// missing key are the records' headers read, so that a key no record uses any more is not asked
// for. Given keys over a file holding plain records, Open seals them all (in transactions of a
// few thousand) and compacts the file before it returns, so that no free page keeps them in the
// clear. Rekey re-seals every record under the first key, or writes them plain, and compacts.
//
// # Forget
//
// Forget (forget.go) deletes the events a matcher picks from the queue and the dead letters in
// one transaction of the writer: it walks every record, deletes the queued ones as an ack does,
// rewrites a dead batch that keeps some events under its id and deletes one that keeps none, and
// clears the retry state of a batch that lost an event. CountDropped counts events dropped
// before they reached the writer (reason "suppressed"); Salt keeps a random per-file key in meta.
//
// # Compaction
//
// bbolt never shrinks its file, but it reuses freed pages: while intake and
// drain run together the file plateaus at the size the in-flight data needs
// and does not grow. Only a backlog that drained leaves it much larger than
// needed. So after a commit that freed data the writer compacts (copies the
// live data into a fresh file with bbolt.Compact, fsyncs it, renames it over
// the old one and reopens) only when all of these hold:
//
//   - the queue is drained: at most 256 KiB of live queue data (copying that
//     is cheap; dead letters are copied whatever their size);
//   - the file exceeds max(CompactMinBytes (1 MiB), 2 × live + 1 MiB), live
//     counting dead letters;
//   - the file exceeds 2 × steady + 1 MiB, where steady is the size the file
//     grew to while the queue held at most 1 MiB, since the last compaction:
//     below that, steady traffic would just grow it back;
//   - no online compaction ran in the last 2 s of store clock (Options.Now);
//     one held back runs when the 2 s are over (a timer on the writer).
//
// It runs on the writer goroutine, before the commit's callers are
// answered, so no concurrent append can be lost and a caller who drained the
// queue sees the small file. The copy runs in 2 MiB transactions, unsynced
// until one fsync at the end, into a file mapped at about the live size up
// front (no remaps), so it adds a few MB of heap at most. Stats.Compactions
// counts compactions. Compact(dir) does it offline.
package store
