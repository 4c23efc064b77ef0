package fsck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// The structure check: the file, read with the project's own reader, holds every invariant
// bbolt relies on when it opens and reads a file (see doc.go). It stops at the first finding
// and names the page; salvage reads past findings instead.

// Header fields beyond those pagewalk.go reads.
const (
	flagFreelist  = 0x10
	noFreelist    = ^uint64(0)
	boltVersion   = 2
	bucketHdrSize = 16
)

// ValidateFile checks the structure of the bbolt file at path with the
// project's own reader, before bbolt is allowed to touch it: bbolt scans the
// tree at open (to rebuild the freelist) in a way that panics in a goroutine
// of its own on a damaged page, which no recover() can catch. The file is
// mapped read-only; a fault (the file shrank meanwhile) becomes an error.
func ValidateFile(path string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil // a new file: bbolt initialises it
	}
	if fi.Size() > int64(int(^uint(0)>>1)) {
		return fmt.Errorf("file of %d bytes is too large to map", fi.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the file to check it: %w", err)
	}
	defer func() { _ = syscall.Munmap(data) }()
	return validateData(data)
}

// validateData checks data, a whole bbolt file, against every invariant that
// bbolt relies on when it opens the file and reads it: both meta pages intact
// (a damaged one would make bbolt fall back silently to the commit before,
// losing the newest), the file as long as its meta page says, and every page
// of the tree reachable from the newest meta page naming itself, of the
// right type, inside the file, referenced once, with every element inside its
// page and keys in order (the checks of bbolt's own Tx.Check). Record
// checksums are not its job (CheckRecords). It never panics.
func validateData(data []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the file failed: %v", ErrDamaged, r)
		}
	}()
	m0, ok0 := readMeta(data, 0)
	if !ok0 || !metaVersionOK(data, 0) {
		return fmt.Errorf("%w: meta page 0 (the file's header) fails its checksum", ErrDamaged)
	}
	if len(data) < 2*m0.pageSize {
		return fmt.Errorf("%w: the file is %d bytes, shorter than its two meta pages of %d: it was truncated", ErrDamaged, len(data), m0.pageSize)
	}
	m1, ok1 := readMeta(data, m0.pageSize)
	if !ok1 || !metaVersionOK(data, m0.pageSize) || m1.pageSize != m0.pageSize {
		return fmt.Errorf("%w: meta page 1 (the file's second header) fails its checksum", ErrDamaged)
	}
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	return validateTree(data, m)
}

// validateTree checks the tree of meta page m, as validateData does.
func validateTree(data []byte, m metaInfo) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the file failed: %v", ErrDamaged, r)
		}
	}()
	ps := m.pageSize
	if pages := uint64(len(data) / ps); m.hwm > pages {
		return fmt.Errorf("%w: the file is %d bytes but its meta page says it holds %d pages of %d bytes: it was truncated",
			ErrDamaged, len(data), m.hwm, ps)
	}
	if m.hwm < 3 {
		return fmt.Errorf("%w: meta page says the file holds %d pages", ErrDamaged, m.hwm)
	}
	v := &validator{data: data, ps: ps, hwm: m.hwm, reached: make([]bool, m.hwm)}
	v.reached[0], v.reached[1] = true, true
	if _, err := v.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	if m.freelist != noFreelist {
		if err := v.freelist(m.freelist); err != nil {
			return err
		}
	}
	return v.rootBuckets(m.root)
}

// rootBuckets checks that the (validated) root holds outbox's three buckets,
// or nothing (a file bbolt created that the store never opened): a damaged
// name or flag would otherwise hide a bucket, and the store's Open would create an empty
// one in its place, losing what the old one holds.
func (v *validator) rootBuckets(root uint64) error {
	var names []string
	var walk func(id uint64)
	walk = func(id uint64) {
		p := v.data[id*uint64(v.ps):]
		if binary.LittleEndian.Uint16(p[8:]) == flagBranch {
			for i := range int(binary.LittleEndian.Uint16(p[10:])) {
				walk(binary.LittleEndian.Uint64(p[pageHeaderSize+i*elemSize+8:]))
			}
			return
		}
		elems, _ := leafElems(p[:(uint64(binary.LittleEndian.Uint32(p[12:]))+1)*uint64(v.ps)], nil, nil)
		for _, e := range elems {
			name := string(e.k)
			if e.flags&bucketLeafFlag == 0 {
				name += " (not a bucket)"
			}
			names = append(names, name)
		}
	}
	walk(root)
	if len(names) == 0 || isOutboxRoot(names) {
		return nil
	}
	return fmt.Errorf("%w: page %d: the file's root holds %q, not outbox's buckets dead, events and meta (and events.<source>)", ErrDamaged, root, names)
}

// metaVersionOK reports whether the meta page at off carries bbolt's format version.
func metaVersionOK(data []byte, off int) bool {
	return off+80 <= len(data) && binary.LittleEndian.Uint32(data[off+20:]) == boltVersion
}

// validator walks the tree of one meta page, strictly.
type validator struct {
	data    []byte
	ps      int
	hwm     uint64
	reached []bool
}

func (v *validator) fail(id uint64, format string, args ...any) error {
	return fmt.Errorf("%w: page %d: %s", ErrDamaged, id, fmt.Sprintf(format, args...))
}

// page returns the bytes of page id with its overflow, marking them reached.
func (v *validator) page(id uint64) ([]byte, error) {
	if id < 2 || id >= v.hwm {
		return nil, v.fail(id, "referenced but outside the file's %d pages", v.hwm)
	}
	off := id * uint64(v.ps)
	p := v.data[off:]
	if got := binary.LittleEndian.Uint64(p); got != id {
		return nil, v.fail(id, "its header names page %d (overwritten or damaged)", got)
	}
	ov := uint64(binary.LittleEndian.Uint32(p[12:]))
	if id+ov >= v.hwm {
		return nil, v.fail(id, "its %d overflow pages run past the file's %d pages", ov, v.hwm)
	}
	for i := id; i <= id+ov; i++ {
		if v.reached[i] {
			return nil, v.fail(i, "referenced twice")
		}
		v.reached[i] = true
	}
	return p[:(ov+1)*uint64(v.ps)], nil
}

// tree checks the branch or leaf page id and what hangs below it; every key
// must be in [lo, hi) (nil: unbounded). It returns the greatest key seen.
func (v *validator) tree(id uint64, lo, hi []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, v.fail(id, "tree deeper than %d levels", maxDepth)
	}
	p, err := v.page(id)
	if err != nil {
		return nil, err
	}
	flags := binary.LittleEndian.Uint16(p[8:])
	switch flags {
	case flagBranch:
		return v.branch(id, p, lo, hi, depth)
	case flagLeaf:
		return v.leaf(id, p, lo, hi, depth)
	}
	return nil, v.fail(id, "type %#x where a branch or leaf page belongs", flags)
}

func (v *validator) branch(id uint64, p []byte, lo, hi []byte, depth int) ([]byte, error) {
	le := binary.LittleEndian
	count := int(le.Uint16(p[10:]))
	if count == 0 || pageHeaderSize+count*elemSize > len(p) {
		return nil, v.fail(id, "branch of %d elements", count)
	}
	keys := make([][]byte, count)
	for i := range keys {
		eo := pageHeaderSize + i*elemSize
		pos, ks := int(le.Uint32(p[eo:])), int(le.Uint32(p[eo+4:]))
		if eo+pos+ks > len(p) {
			return nil, v.fail(id, "branch element %d points outside the page", i)
		}
		keys[i] = p[eo+pos : eo+pos+ks]
		if (lo != nil && bytes.Compare(keys[i], lo) < 0) || (hi != nil && bytes.Compare(keys[i], hi) >= 0) ||
			(i > 0 && bytes.Compare(keys[i-1], keys[i]) >= 0) {
			return nil, v.fail(id, "branch key %d out of order", i)
		}
	}
	var last []byte
	for i, k := range keys {
		next := hi
		if i+1 < count {
			next = keys[i+1]
		}
		m, err := v.tree(le.Uint64(p[pageHeaderSize+i*elemSize+8:]), k, next, depth+1)
		if err != nil {
			return nil, err
		}
		if m != nil {
			last = m
		}
	}
	return last, nil
}

func (v *validator) leaf(id uint64, p []byte, lo, hi []byte, depth int) ([]byte, error) {
	elems, err := leafElems(p, lo, hi)
	if err != nil {
		return nil, v.fail(id, "%v", err)
	}
	var last []byte
	for _, e := range elems {
		last = e.k
		if e.flags&bucketLeafFlag == 0 {
			continue
		}
		if err := v.bucket(id, e.v, depth); err != nil {
			return nil, err
		}
	}
	return last, nil
}

type leafElem struct {
	flags uint32
	k, v  []byte
}

// leafElems splits a leaf page (or an inline bucket's page) into its
// elements, checking bounds and key order.
func leafElems(p []byte, lo, hi []byte) ([]leafElem, error) {
	le := binary.LittleEndian
	if len(p) < pageHeaderSize {
		return nil, errors.New("page shorter than its header")
	}
	count := int(le.Uint16(p[10:]))
	if pageHeaderSize+count*elemSize > len(p) {
		return nil, fmt.Errorf("leaf of %d elements does not fit its page", count)
	}
	out := make([]leafElem, count)
	for i := range out {
		eo := pageHeaderSize + i*elemSize
		flags, pos := le.Uint32(p[eo:]), uint64(le.Uint32(p[eo+4:]))
		ks, vs := uint64(le.Uint32(p[eo+8:])), uint64(le.Uint32(p[eo+12:]))
		start := uint64(eo) + pos
		if start+ks+vs > uint64(len(p)) {
			return nil, fmt.Errorf("leaf element %d points outside the page", i)
		}
		k := p[start : start+ks]
		if (lo != nil && bytes.Compare(k, lo) < 0) || (hi != nil && bytes.Compare(k, hi) >= 0) ||
			(i > 0 && bytes.Compare(out[i-1].k, k) >= 0) {
			return nil, fmt.Errorf("leaf key %d out of order", i)
		}
		out[i] = leafElem{flags: flags, k: k, v: p[start+ks : start+ks+vs]}
	}
	return out, nil
}

// bucket checks the bucket whose header value h sits on page id.
func (v *validator) bucket(id uint64, h []byte, depth int) error {
	if len(h) < bucketHdrSize {
		return v.fail(id, "bucket header of %d bytes", len(h))
	}
	if root := binary.LittleEndian.Uint64(h); root != 0 {
		_, err := v.tree(root, nil, nil, depth+1)
		return err
	}
	inline := h[bucketHdrSize:]
	if len(inline) < pageHeaderSize || binary.LittleEndian.Uint16(inline[8:]) != flagLeaf {
		return v.fail(id, "inline bucket without a leaf page")
	}
	elems, err := leafElems(inline, nil, nil)
	if err != nil {
		return v.fail(id, "inline bucket: %v", err)
	}
	for _, e := range elems {
		if e.flags&bucketLeafFlag != 0 {
			return v.fail(id, "inline bucket holding a bucket")
		}
	}
	return nil
}

// freelist checks a freelist page (files written with the freelist synced):
// every id inside the file, none twice, none in the tree.
func (v *validator) freelist(id uint64) error {
	p, err := v.page(id)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	if f := le.Uint16(p[8:]); f != flagFreelist {
		return v.fail(id, "type %#x where the freelist belongs", f)
	}
	count, start := uint64(le.Uint16(p[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF {
		count, start = le.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(p)) || start+count*8 > uint64(len(p)) {
		return v.fail(id, "freelist of %d ids does not fit its page", count)
	}
	seen := make(map[uint64]bool, count)
	for i := uint64(0); i < count; i++ {
		f := le.Uint64(p[start+i*8:])
		if f < 2 || f >= v.hwm || seen[f] || v.reached[f] {
			return v.fail(id, "freelist entry %d (page %d) is outside the file, repeated or in use", i, f)
		}
		seen[f] = true
	}
	return nil
}

// isOutboxRoot reports whether names (sorted, as the root holds them) are outbox's buckets:
// dead, events and meta, and an events.<source> bucket per source other than the default one.
func isOutboxRoot(names []string) bool {
	var rest []string
	for _, n := range names {
		if src, ok := format.SourceOfBucket([]byte(n)); ok && src != format.DefaultSource {
			continue
		}
		rest = append(rest, n)
	}
	return slices.Equal(rest, []string{string(format.BucketDead), string(format.BucketEvents), string(format.BucketMeta)})
}
