package fsck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// A file written with bbolt's stored freelist (its default) passes the check; a freelist that
// frees a page in use does not.
func TestValidate_StoredFreelistIsChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), datadir.FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{format.BucketDead, format.BucketEvents, format.BucketMeta} {
				b, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				for i := range 200 {
					if err := b.Put(fmt.Appendf(nil, "k%d-%04d", round, i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	m, _ := metaPages(data)
	if m.freelist == noFreelist {
		t.Fatal("fixture without a stored freelist")
	}
	if err := validateData(data); err != nil {
		t.Fatalf("a healthy file with a stored freelist: %v", err)
	}
	fl := data[int(m.freelist)*m.pageSize:]
	if binary.LittleEndian.Uint16(fl[10:]) == 0 {
		t.Fatal("fixture freelist is empty")
	}
	binary.LittleEndian.PutUint64(fl[pageHeaderSize:], m.root) // free the root page
	if err := validateData(data); err == nil || !strings.Contains(err.Error(), "freelist") {
		t.Fatalf("a freelist that frees the root page: %v, want it refused", err)
	}
}
