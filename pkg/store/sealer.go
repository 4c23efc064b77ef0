package store

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// With encryption at rest the writer cannot seal an append's records before it has chosen
// their keys (the additional data binds them), but it need not seal them itself either: bbolt
// keeps a reference to a value until the transaction ends and reads its bytes only when the
// commit writes the pages (or when a later operation of the same transaction reads the record).
// So the writer puts each record as the caller built it (nonce and event, room for the tag) and
// hands the request's block to the sealer's goroutines, which seal each record in place while
// the writer goes on with the group; before anything reads a record of the transaction (an
// operation other than an append, an eviction) and before the commit, the writer waits for
// them, sealing itself what no goroutine has taken yet. The AES-GCM pass, the largest part of
// an append with encryption on, is then off the writer's path, which every producer waits on.
// A block of fewer than sealOffMin records is sealed by the writer at once: a goroutine
// hand-off costs more than sealing a record or two.

// sealOffMin is the fewest records of one append that the writer hands to the sealer.
const sealOffMin = 16

// sealJob is one append's block to seal: count records of the events bucket named bucket.
type sealJob struct {
	block  []byte
	count  int
	bucket []byte
}

// sealer seals appended records on goroutines of its own (see above). A nil *sealer (plain
// records) does nothing.
type sealer struct {
	codec   format.Codec
	jobs    chan sealJob
	pending sync.WaitGroup // jobs handed over and not yet sealed
	workers sync.WaitGroup
}

// newSealer starts one goroutine per CPU to seal with codec; nil when codec does not seal.
func newSealer(codec format.Codec) *sealer {
	if !codec.Sealing() {
		return nil
	}
	z := &sealer{codec: codec, jobs: make(chan sealJob, 1024)}
	for range runtime.GOMAXPROCS(0) {
		z.workers.Go(func() {
			var scratch format.Scratch
			for j := range z.jobs {
				z.seal(j, &scratch)
			}
		})
	}
	return z
}

// add hands the block of an append that the writer has put (records unsealed) to the
// sealer; a small one it seals at once, with the writer's scratch.
func (z *sealer) add(j sealJob, scratch *format.Scratch) {
	if z == nil {
		return
	}
	if j.count < sealOffMin {
		z.sealBlock(j, scratch)
		return
	}
	z.pending.Add(1)
	select {
	case z.jobs <- j:
	default: // every goroutine busy and the channel full: the writer seals it
		z.seal(j, scratch)
	}
}

// wait returns once every record handed over has been sealed. The writer takes back the
// jobs no goroutine has started and seals them itself rather than wait idle.
func (z *sealer) wait(scratch *format.Scratch) {
	if z == nil {
		return
	}
	for drained := false; !drained; {
		select {
		case j := <-z.jobs:
			z.seal(j, scratch)
		default:
			drained = true
		}
	}
	z.pending.Wait()
}

// stop ends the goroutines; the writer has stopped, so nothing is handed over any more.
func (z *sealer) stop() {
	if z == nil {
		return
	}
	close(z.jobs)
	z.workers.Wait()
}

// seal seals a job handed over (pending counted it).
func (z *sealer) seal(j sealJob, scratch *format.Scratch) {
	defer z.pending.Done()
	z.sealBlock(j, scratch)
}

// sealBlock seals each record of an append block (appendBlock's layout, key slots filled in
// by the writer) in place.
func (z *sealer) sealBlock(j sealJob, scratch *format.Scratch) {
	off := 0
	for range j.count {
		size := int(binary.BigEndian.Uint32(j.block[off:]))
		key := j.block[off+4 : off+blockEntryHeader]
		off += blockEntryHeader
		z.codec.Seal(j.block[off:off+size:off+size], j.bucket, key, scratch)
		off += size
	}
}
