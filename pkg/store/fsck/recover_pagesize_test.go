package fsck_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// The file is written here with bbolt directly, because the store always
// uses one page size (16 KiB): the scan must find a file's page size by
// itself when no meta page says it.
func TestRecover_BothMetaPagesLostFindsANonDefaultPageSize(t *testing.T) {
	for _, ps := range []int{8192, 16384, 65536} {
		t.Run(fmt.Sprintf("page size %d", ps), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, store.FileName)
			db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: ps})
			if err != nil {
				t.Fatal(err)
			}
			const n = 2000
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket(format.BucketEvents)
				if err != nil {
					return err
				}
				if _, err := tx.CreateBucket(format.BucketMeta); err != nil {
					return err
				}
				for i := 0; i < n; i++ {
					k := make([]byte, 20)
					binary.BigEndian.PutUint64(k[12:], uint64(i))
					if err := b.Put(k, format.EncodeRecord([]byte(fmt.Sprintf(`{"messageId":"m%06d"}`, i)))); err != nil {
						return err
					}
				}
				return nil
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range []int{16, ps + 16} {
				copy(data[off:off+64], make([]byte, 64))
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			rep, err := fsck.Recover(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Saved != n || rep.PageSize != ps || !rep.Scanned {
				t.Fatalf("report %+v, want %d saved at page size %d", rep, n, ps)
			}
			s, err := store.Open(dir, store.Options{})
			if err != nil {
				t.Fatalf("open recovered file: %v", err)
			}
			defer func() { _ = s.Close() }()
			if got := s.Stats().Events; got != n {
				t.Fatalf("recovered store holds %d events, want %d", got, n)
			}
		})
	}
}
