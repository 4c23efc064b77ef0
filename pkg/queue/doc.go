// Package queue is the durable FIFO the rest of outbox uses, on top of
// pkg/store (one bbolt file per data directory).
//
// # States of an event
//
//	Enqueue ──► queued ──Lease──► leased (still stored, at the head)
//	                                 │
//	                   Ack ◄─────────┼─────────► DeadLetter ──► dead ──DeadReplay──► queued (tail)
//	               (deleted, one tx) │           (moved, one tx)   └─DeadPurge──► gone
//	                                 └─SaveRetry: head batch retry state, kept across restarts
//
// Enqueue returns nil only after its events are committed (and fsynced unless
// NoSync); concurrent producers share one transaction and one fsync. Lease
// does not remove anything: a crash between an upload and its Ack re-sends
// that batch (at-least-once; collectors dedupe on messageId). There is a
// single consumer: Lease always starts at the head. A pipelined consumer may
// read ahead with LeaseAfter (the batch Lease will return once the given one
// has left) and acknowledge several delivered batches in one commit with
// AckAll.
//
// # Quota
//
// MaxBytes bounds the stored event bytes. WhenFull decides what a full
// queue does: reject (ErrFull), block (wait for room or ctx) or drop_oldest
// (evict from the head; counted in Stats.Dropped["drop_oldest"] and OnDrop,
// logged at warn). DeadMaxBytes bounds the dead-letter bucket the same way
// (reason "dead_overflow").
package queue
