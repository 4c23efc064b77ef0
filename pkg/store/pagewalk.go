package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// A defensive reader of bbolt's on-disk format (little endian, as written on
// amd64/arm64), used only by Recover: it never trusts a page, checks every
// bound, and skips what it cannot read instead of panicking.
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
}

type metaInfo struct {
	pageSize int
	root     uint64
	txid     uint64
}

// readMeta parses the meta page at off; ok is false when its checksum fails.
func readMeta(data []byte, off int) (m metaInfo, ok bool) {
	if off+80 > len(data) {
		return m, false
	}
	p := data[off:]
	le := binary.LittleEndian
	if le.Uint16(p[8:]) != flagMeta || le.Uint32(p[16:]) != boltMagic {
		return m, false
	}
	m.pageSize = int(le.Uint32(p[24:]))
	m.root = le.Uint64(p[32:])
	m.txid = le.Uint64(p[64:])
	h := fnv.New64a()
	_, _ = h.Write(p[16:72])
	return m, h.Sum64() == le.Uint64(p[72:]) && m.pageSize >= 512 && m.pageSize <= 1<<20
}

// bestMeta picks the valid meta page with the highest txid.
func bestMeta(data []byte) (metaInfo, error) {
	m0, ok0 := readMeta(data, 0)
	ps := m0.pageSize
	if !ok0 || ps == 0 {
		ps = 4096
	}
	m1, ok1 := readMeta(data, ps)
	switch {
	case ok0 && ok1 && m1.txid > m0.txid:
		return m1, nil
	case ok0:
		return m0, nil
	case ok1:
		return m1, nil
	}
	return metaInfo{}, errors.New("no valid meta page")
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
	if depth > maxDepth || f.seen[id] {
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
		}
	}
	if root := binary.LittleEndian.Uint64(v); root != 0 {
		f.walk(root, 1, leafOnly)
	} else {
		f.walkPage(v[16:], 1, leafOnly)
	}
	return nil
}
