package fsck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// A defensive reader of bbolt's on-disk format (little endian, as written on
// amd64/arm64), used by salvage: it never trusts a page, checks every
// bound, and skips what it cannot read instead of panicking. validate.go
// reads the same layout, strictly.
const (
	pageHeaderSize = 16
	elemSize       = 16
	flagBranch     = 0x01
	flagLeaf       = 0x02
	flagMeta       = 0x04
	bucketLeafFlag = 0x01
	boltMagic      = 0xED0CDAED
	maxDepth       = 64
)

type pageFile struct {
	data     []byte
	pageSize int
	seen     map[uint64]bool
	badPages int
	nested   int // elements flagged as buckets inside a bucket (outbox's buckets hold none: damage)
	revisits int // pages referenced a second time: a damaged reference, so another page was not reached
}

type metaInfo struct {
	pageSize int
	root     uint64
	freelist uint64 // the freelist page, or ^0 when the freelist is not stored
	hwm      uint64 // high-water mark: pages [0, hwm) are in use or free
	txid     uint64
}

// readMeta parses the meta page at off; ok is false when its checksum fails.
func readMeta(data []byte, off int) (m metaInfo, ok bool) {
	if off < 0 || off+80 > len(data) {
		return m, false
	}
	p := data[off:]
	le := binary.LittleEndian
	if le.Uint16(p[8:]) != flagMeta || le.Uint32(p[16:]) != boltMagic {
		return m, false
	}
	m.pageSize = int(le.Uint32(p[24:]))
	m.root = le.Uint64(p[32:])
	m.freelist = le.Uint64(p[48:])
	m.hwm = le.Uint64(p[56:])
	m.txid = le.Uint64(p[64:])
	h := fnv.New64a()
	_, _ = h.Write(p[16:72])
	return m, h.Sum64() == le.Uint64(p[72:]) && m.pageSize >= 512 && m.pageSize <= 1<<20
}

// candidatePageSizes are the page sizes tried when the meta pages do not
// give one: the OS page size first, then the common ones.
func candidatePageSizes() []int {
	sizes := []int{os.Getpagesize(), 4096, 8192, 16384, 65536}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// metaPages reads both meta pages. Meta 0 is at offset 0; meta 1 one page
// later, so when meta 0 is unreadable it is looked for at every candidate
// page size. valid counts the meta pages whose checksum verified.
func metaPages(data []byte) (best metaInfo, valid int) {
	m0, ok0 := readMeta(data, 0)
	sizes := candidatePageSizes()
	if ok0 {
		sizes = []int{m0.pageSize}
	}
	var m1 metaInfo
	ok1 := false
	for _, ps := range sizes {
		if m, ok := readMeta(data, ps); ok && m.pageSize == ps {
			m1, ok1 = m, true
			break
		}
	}
	switch {
	case ok0 && ok1:
		if m1.txid > m0.txid {
			return m1, 2
		}
		return m0, 2
	case ok0:
		return m0, 1
	case ok1:
		return m1, 1
	}
	return metaInfo{}, 0
}

// page returns the bytes of page id (with its overflow), or nil when out of
// range or when its header does not name it.
func (f *pageFile) page(id uint64) []byte {
	off := id * uint64(f.pageSize)
	if id < 2 || off+pageHeaderSize > uint64(len(f.data)) {
		return nil
	}
	p := f.data[off:]
	if binary.LittleEndian.Uint64(p) != id {
		return nil
	}
	n := (uint64(binary.LittleEndian.Uint32(p[12:])) + 1) * uint64(f.pageSize)
	if off+n > uint64(len(f.data)) {
		return nil
	}
	return p[:n]
}

// walk visits every leaf element under page id. Unreadable pages are counted.
func (f *pageFile) walk(id uint64, depth int, visit func(flags uint32, k, v []byte)) {
	if f.seen[id] {
		f.revisits++
		return
	}
	if depth > maxDepth {
		return
	}
	f.seen[id] = true
	p := f.page(id)
	if p == nil {
		f.badPages++
		return
	}
	f.walkPage(p, depth, visit)
}

// walkPage visits the elements of one page (also an inline bucket's page).
func (f *pageFile) walkPage(p []byte, depth int, visit func(flags uint32, k, v []byte)) {
	defer func() {
		if r := recover(); r != nil {
			f.badPages++
		}
	}()
	if len(p) < pageHeaderSize {
		f.badPages++
		return
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if pageHeaderSize+count*elemSize > len(p) {
		f.badPages++
		return
	}
	for i := 0; i < count; i++ {
		eo := pageHeaderSize + i*elemSize
		e := p[eo : eo+elemSize]
		switch flags {
		case flagBranch:
			f.walk(le.Uint64(e[8:]), depth+1, visit)
		case flagLeaf:
			ef, pos, ks, vs := le.Uint32(e), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			start := eo + pos
			if pos < 0 || ks < 0 || vs < 0 || start+ks+vs > len(p) || start < 0 {
				f.badPages++
				continue
			}
			visit(ef, p[start:start+ks], p[start+ks:start+ks+vs])
		default:
			f.badPages++
			return
		}
	}
}

// walkBucket visits the key/values of the bucket whose header value is v.
func (f *pageFile) walkBucket(v []byte, visit func(k, v []byte)) error {
	if len(v) < 16 {
		return fmt.Errorf("bucket header of %d bytes", len(v))
	}
	leafOnly := func(flags uint32, k, val []byte) {
		if flags&bucketLeafFlag == 0 {
			visit(k, val)
		} else {
			f.nested++
		}
	}
	if root := binary.LittleEndian.Uint64(v); root != 0 {
		f.walk(root, 1, leafOnly)
	} else {
		f.walkPage(v[16:], 1, leafOnly)
	}
	return nil
}

// later returns the greater of two keys.
func later(a, b []byte) []byte {
	if bytes.Compare(b, a) > 0 {
		return b
	}
	return a
}

// scanAll is salvage without a meta page: it scans every page as a leaf at
// each candidate page size and keeps the size that yields the most records.
// At a wrong size no page names itself, so a wrong guess finds nothing.
func scanAll(data []byte, codec format.Codec) salvaged {
	var best salvaged
	for _, ps := range candidatePageSizes() {
		s := salvaged{scanned: true, codec: codec, countMissing: true}
		s.scanLeaves(&pageFile{data: data, pageSize: ps, seen: map[uint64]bool{}}, nil, nil)
		if n := len(s.events) + len(s.dead); n > 0 && n > len(best.events)+len(best.dead) {
			s.pageSize = ps
			best = s
		}
	}
	best.scanned = true
	return best
}

// scanLeaves reads every leaf page the walk did not reach and keeps records
// that look like events (20-byte key, valid record) or dead batches (valid
// dead payload) whose keys are after afterEvent / afterDead (nil: all).
// Such pages may be stale copies or freed pages, so already-acknowledged
// events can come back (at-least-once; collectors dedupe on messageId).
// Records failing their CRC here are not counted: they may be stale.
func (s *salvaged) scanLeaves(f *pageFile, afterEvent, afterDead []byte) {
	defer s.dropDeadCopies(len(s.events))
	n := uint64(len(f.data) / f.pageSize)
	for id := uint64(2); id < n; id++ {
		if f.seen[id] {
			continue
		}
		p := f.page(id)
		if p == nil || binary.LittleEndian.Uint16(p[8:]) != flagLeaf {
			continue
		}
		bad := f.badPages
		f.walkPage(p, 1, func(flags uint32, k, v []byte) {
			if flags&bucketLeafFlag != 0 || len(k) != 20 {
				return
			}
			bucket, p, ok := s.open(nil, k, v)
			if !ok {
				return
			}
			rec := kv{k: append([]byte(nil), k...), v: append([]byte(nil), v...), p: p}
			if bytes.Equal(bucket, format.BucketDead) {
				if h, err := format.DecodeDeadHeader(p); err == nil {
					if evs, err := format.DeadEvents(h); err == nil && deadSize(evs) == len(h.Body) {
						if bytes.Compare(k, afterDead) > 0 {
							s.dead = append(s.dead, rec)
						}
						return
					}
				}
				if _, sealed := format.SealedBy(v); sealed {
					return // sealed as a dead batch, yet not one
				}
			}
			if bytes.Compare(k, afterEvent) > 0 {
				s.events = append(s.events, rec)
			}
		})
		f.badPages = bad
	}
}

func deadSize(evs [][]byte) int {
	n := 0
	for _, e := range evs {
		n += 4 + len(e)
	}
	return n
}

// dropDeadCopies drops the events from index from on whose bytes are in a
// salvaged dead batch: a scan finds the stale copy left on a freed page
// when a batch was moved to the dead letters, and it must not be queued
// again. (Were the copy not stale, the event stays safe in the dead batch.)
func (s *salvaged) dropDeadCopies(from int) {
	if len(s.dead) == 0 || from >= len(s.events) {
		return
	}
	inDead := map[string]bool{}
	for _, d := range s.dead {
		h, err := format.DecodeDeadHeader(d.p)
		if err != nil {
			continue
		}
		evs, _ := format.DeadEvents(h)
		for _, e := range evs {
			inDead[string(e)] = true
		}
	}
	kept := s.events[:from]
	for _, r := range s.events[from:] {
		if !inDead[string(r.p)] {
			kept = append(kept, r)
		}
	}
	s.events = kept
}
