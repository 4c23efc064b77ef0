package fsck

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// The page walker's view of a file, for the tests of package fsck_test, which damage files a
// real store wrote.

// EventsRoot returns the page size and the root page of the events bucket, read
// with the page walker from the newest meta page.
func EventsRoot(t *testing.T, data []byte) (ps int, root uint64) {
	t.Helper()
	m, valid := metaPages(data)
	if valid != 2 {
		t.Fatal("fixture without two valid meta pages")
	}
	f := &pageFile{data: data, pageSize: m.pageSize, seen: map[uint64]bool{}}
	f.walk(m.root, 0, func(flags uint32, k, v []byte) {
		if flags&bucketLeafFlag != 0 && bytes.Equal(k, format.BucketEvents) {
			root = binary.LittleEndian.Uint64(v)
		}
	})
	if root == 0 {
		t.Fatal("events bucket is inline; write more events")
	}
	return m.pageSize, root
}

// RenameEvents damages the name of the events bucket in the root page.
func RenameEvents(t *testing.T, data []byte) []byte {
	t.Helper()
	m, _ := metaPages(data)
	pg := data[int(m.root)*m.pageSize : int(m.root+1)*m.pageSize]
	i := bytes.Index(pg, format.BucketEvents)
	if i < 0 {
		t.Fatal("no events bucket in the root page")
	}
	pg[i+2] = 'f'
	return data
}
