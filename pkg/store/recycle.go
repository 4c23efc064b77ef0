package store

import (
	"math/bits"
	"sync"
)

// An append request's block (its events' records, see appendBlock) is needed only until the
// transaction that stored it has ended: bbolt copies values into its pages at commit and keeps
// no reference to them after the transaction closes. So the writer hands the blocks of a
// finished group back here and the next appends reuse them, instead of allocating (and the
// garbage collector reclaiming) every event's bytes a second time. Blocks are pooled by size
// class, powers of two from minBlockShift to maxBlockShift; a larger block is allocated and
// dropped as before, so a rare huge append does not stay in memory. sync.Pool lets the
// collector drop what stays unused. The blocks that hold a leased batch's events come from
// the same pools and go back through Batch.Release.
const (
	minBlockShift = 10 // 1 KiB: one ordinary event's record
	maxBlockShift = 19 // 512 KiB: an agent's request, a leased batch of batch.max_bytes (500000)
)

var blockPools [maxBlockShift - minBlockShift + 1]sync.Pool

// blockClass returns the size class that holds n bytes, or -1 when n is too large to pool.
func blockClass(n int) int {
	c := 0
	if n > 1<<minBlockShift {
		c = bits.Len(uint(n-1)) - minBlockShift
	}
	if c >= len(blockPools) {
		return -1
	}
	return c
}

// getBlock returns an empty block with room for n bytes, reused when one is free. The
// pointer is what putBlock takes back.
func getBlock(n int) *[]byte {
	c := blockClass(n)
	if c < 0 {
		b := make([]byte, 0, n)
		return &b
	}
	if p, _ := blockPools[c].Get().(*[]byte); p != nil {
		*p = (*p)[:0]
		return p
	}
	b := make([]byte, 0, 1<<(minBlockShift+c))
	return &b
}

// putBlock hands a block back for reuse. The caller must hold no other reference to it: the
// writer calls it only once the block's transaction has committed or rolled back, and
// Batch.Release once the consumer is done with the batch's events.
func putBlock(p *[]byte) {
	c := blockClass(cap(*p))
	if c < 0 || cap(*p) != 1<<(minBlockShift+c) {
		return // not one of ours: too large, or not of a class size
	}
	blockPools[c].Put(p)
}

// asyncRequests recycles AppendAsync's requests: once the writer has answered one (called its
// callback) and its transaction has ended, nothing refers to it any more, so recycle puts it
// back here. A synchronous request is not recycled: its caller may still be reading it, and
// a panicking group's guard may answer it again (see request.answer).
var asyncRequests = sync.Pool{New: func() any { return new(request) }}

// recycle hands the blocks of the group's appends back to their pool, and the asynchronous
// requests to theirs, now that the group's transaction has ended and every request has been
// answered; then it empties the group (the requests are not kept alive by its buffer).
func (s *Store) recycle() {
	for _, r := range s.group {
		if r.block != nil {
			putBlock(r.block)
			r.block = nil
		}
		if r.cb != nil {
			*r = request{}
			asyncRequests.Put(r)
		}
	}
	clear(s.group)
}
