// Package format is the on-disk format of outbox's data file, shared by the running store
// (pkg/store) and the offline tools that read a file without trusting it (pkg/store/fsck): the
// buckets and meta keys, the record every value is wrapped in, the counters, the dead-letter
// payload, and the bbolt options every file is opened and created with. It holds no state.
//
// # Buckets
//
//	events         KSUID (20 bytes) → record(event bytes)   FIFO by key: the source "default"
//	events.<name>  KSUID (20 bytes) → record(event bytes)   FIFO of the source <name> (sources.go)
//	dead    KSUID (20 bytes) → record(info + events)        one dead batch (info names its source)
//	meta    "counts"         → record(5 × u64 totals)       updated by every commit
//	        "n/"+name        → record(2 × u64)              a source's events and bytes (not default's)
//	        "s/"+name        → record(source registry entry) a relay source's upload key and endpoint
//	        "r/"+KSUID       → record(head key, count, state) retry state of a batch in flight
//	        "r.<name>/"+KSUID → the same, for a batch of the source <name>
//	        "retry"          → the same, for the head batch only (files of earlier versions)
//	        "format"         → record(1)
//	        "seal"           → record(flags, key ids)   which keys may have sealed a record (sealset.go)
//
// Every value is a record: [version byte][CRC-32C of payload][payload]. Reads
// verify the CRC. With encryption at rest, events and dead batches are sealed records instead
// ([version 2][key id][nonce][AES-256-GCM ciphertext and tag], seal.go), read and written
// through a Codec. Keys are KSUIDs made strictly increasing by the store's writer (a
// new one that is not greater than the last becomes last.Next()), so key
// order is intake order and a key carries its intake second.
//
// # Pages
//
// Files are created with 16 KiB pages (a file keeps the page size it was
// created with; compaction writes the new size). Most of a commit's CPU is
// per page, not per byte: bbolt materialises, splits, rebalances, allocates,
// frees and writes (one pwrite each) every page it touches, and an ack frees
// the leaves it emptied one by one. With about 28 events of 545 bytes per leaf
// instead of 7, a batch of events touches a quarter of the pages; measured, it
// cuts the store's CPU per event by about a fifth for batched intake, while a
// commit of a lone event writes a few more KiB (its tail leaf is rewritten
// whole). Events and dead batches are appended with FillPercent 1.0 (keys only
// grow), so leaves are written full.
//
// Commits do not store bbolt's freelist (OpenDB sets NoFreelistSync): the store writes it
// once, at a clean close, so that the next open reads it instead of rebuilding it.
package format
