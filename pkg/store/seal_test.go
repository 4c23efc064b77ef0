package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// The personal data the encryption tests look for in the raw file.
var (
	secretEmail = []byte("jane.doe@example.com")
	secretIP    = []byte("203.0.113.77")
)

func personalEvent(i int) []byte {
	return []byte(`{"type":"identify","userId":"u` + string(rune('a'+i%26)) + `","traits":{"email":"jane.doe@example.com"},"context":{"ip":"203.0.113.77"}}`)
}

func testKeys(t *testing.T, seeds ...byte) *keyring.Keyring {
	t.Helper()
	var keys [][]byte
	for _, s := range seeds {
		keys = append(keys, bytes.Repeat([]byte{s}, keyring.KeySize))
	}
	kr, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// fillPersonal stores n personal events and moves the first two to the dead letters.
func fillPersonal(t *testing.T, s *store.Store, n int) {
	t.Helper()
	var evs [][]byte
	for i := range n {
		evs = append(evs, personalEvent(i))
	}
	if err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	b, err := s.Head(context.Background(), 2, 1<<20)
	if err != nil || b == nil {
		t.Fatalf("head: %v %v", b, err)
	}
	if err := s.MoveDead(context.Background(), b.Keys(), store.DeadInfo{Reason: "rejected"}); err != nil {
		t.Fatal(err)
	}
}

func rawFile(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll returns the queued events and the dead letters' events, through the store's read API.
func readAll(t *testing.T, s *store.Store) (queued, dead [][]byte) {
	t.Helper()
	b, err := s.Head(context.Background(), 1<<20, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if b != nil {
		queued = b.Events
	}
	list, err := s.DeadList()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list {
		id := deadID(t, d.ID)
		g, err := s.DeadGet(id)
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, g.Events...)
	}
	return queued, dead
}

func TestEncryption_RawFileHoldsPersonalDataOnlyWithoutKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    *keyring.Keyring
		visible bool
	}{
		{"without keys the email and IP are in the file", nil, true},
		{"with a key neither is in the file, queue nor dead letters", testKeys(t, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, store.Options{Keys: tc.keys})
			fillPersonal(t, s, 50)
			queued, dead := readAll(t, s)
			if len(queued) != 48 || len(dead) != 2 || !bytes.Equal(queued[0], personalEvent(2)) || !bytes.Equal(dead[0], personalEvent(0)) {
				t.Fatalf("read back %d queued, %d dead, want 48 and 2 with the events' bytes", len(queued), len(dead))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			raw := rawFile(t, dir)
			for _, secret := range [][]byte{secretEmail, secretIP} {
				if got := bytes.Contains(raw, secret); got != tc.visible {
					t.Fatalf("file contains %q: %v, want %v", secret, got, tc.visible)
				}
			}
		})
	}
}

func TestEncryption_MissingKeyRefusedNamingItAndFileUnchanged(t *testing.T) {
	dir := t.TempDir()
	a := testKeys(t, 1)
	s := mustOpen(t, dir, store.Options{Keys: a})
	fillPersonal(t, s, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := rawFile(t, dir)
	for _, tc := range []struct {
		name  string
		keys  *keyring.Keyring
		plain bool
	}{
		{"another key", testKeys(t, 2), false},
		{"no key at all", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.Open(dir, store.Options{Keys: tc.keys})
			var me *keyring.MissingError
			if !errors.As(err, &me) || !errors.Is(err, errs.ErrKeyMissing) || me.Plain != tc.plain {
				t.Fatalf("open = %v, want a *keyring.MissingError (plain %v)", err, tc.plain)
			}
			if len(me.IDs) != 1 || me.IDs[0] != a.IDs()[0] || !bytes.Contains([]byte(err.Error()), []byte(a.IDs()[0].String())) {
				t.Fatalf("error %q does not name key id %s", err, a.IDs()[0])
			}
			if !bytes.Equal(rawFile(t, dir), before) {
				t.Fatal("the data file changed")
			}
		})
	}
}

func TestEncryption_RotationOpensOldRecordsAndSealsNewOnesWithTheFirstKey(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{Keys: testKeys(t, 1)})
	fillPersonal(t, s, 10)
	_ = s.Close()
	s = mustOpen(t, dir, store.Options{Keys: testKeys(t, 2, 1)}) // new key first, old still opens
	if err := s.Append(context.Background(), [][]byte{personalEvent(99)}); err != nil {
		t.Fatal(err)
	}
	queued, dead := readAll(t, s)
	if len(queued) != 9 || len(dead) != 2 || !bytes.Equal(queued[8], personalEvent(99)) {
		t.Fatalf("read %d queued, %d dead after rotation; want 9 and 2", len(queued), len(dead))
	}
	_ = s.Close()
	if _, err := store.Open(dir, store.Options{Keys: testKeys(t, 2)}); !errors.Is(err, errs.ErrKeyMissing) {
		t.Fatalf("open with the new key alone while old records remain = %v, want ErrKeyMissing", err)
	}
	rep, err := store.Rekey(dir, store.RekeyOptions{Keys: testKeys(t, 2, 1)})
	if err != nil || rep.Rewritten != 9 || rep.Kept != 1 {
		t.Fatalf("rekey = %+v, %v; want 9 rewritten (8 queued events, 1 dead batch), 1 kept", rep, err)
	}
	s = mustOpen(t, dir, store.Options{Keys: testKeys(t, 2)})
	queued, dead = readAll(t, s)
	if len(queued) != 9 || len(dead) != 2 {
		t.Fatalf("after rekey read %d queued, %d dead with the new key alone; want 9 and 2", len(queued), len(dead))
	}
}

func TestEncryption_PlainQueueSealedAtOpenAndDecryptTurnsItBack(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fillPersonal(t, s, 20)
	_ = s.Close()
	s = mustOpen(t, dir, store.Options{Keys: testKeys(t, 1)})
	if raw := rawFile(t, dir); bytes.Contains(raw, secretEmail) || bytes.Contains(raw, secretIP) {
		t.Fatal("plain records left in the file once Open with a key returned")
	}
	queued, dead := readAll(t, s)
	if len(queued) != 18 || len(dead) != 2 {
		t.Fatalf("read %d queued, %d dead after sealing at open; want 18 and 2", len(queued), len(dead))
	}
	_ = s.Close()
	if _, err := store.Rekey(dir, store.RekeyOptions{Keys: testKeys(t, 1), Decrypt: true}); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, store.Options{})
	queued, dead = readAll(t, s)
	if len(queued) != 18 || len(dead) != 2 || !bytes.Equal(queued[0], personalEvent(2)) {
		t.Fatalf("read %d queued, %d dead without keys after rekey --decrypt; want 18 and 2", len(queued), len(dead))
	}
	_ = s.Close()
	if !bytes.Contains(rawFile(t, dir), secretEmail) {
		t.Fatal("the decrypted file does not hold the events in the clear")
	}
}

// swap copies the value of one record over another, through bbolt, as an attacker with the
// file (and no key) could.
func swap(t *testing.T, dir string, fromBucket, toBucket string, toIndex int) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, store.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		_, v := tx.Bucket([]byte(fromBucket)).Cursor().First()
		v = append([]byte(nil), v...)
		c := tx.Bucket([]byte(toBucket)).Cursor()
		k, _ := c.First()
		for range toIndex {
			k, _ = c.Next()
		}
		return tx.Bucket([]byte(toBucket)).Put(append([]byte(nil), k...), v)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestEncryption_RecordMovedToAnotherKeyOrBucketIsDamaged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string
		index    int
		left     int // events readable after recover
	}{
		{"an event copied over the next event", "events", "events", 1, 9},
		{"an event copied over a dead batch", "events", "dead", 0, 8},
		{"a dead batch copied over an event", "dead", "events", 3, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kr := testKeys(t, 1)
			s := mustOpen(t, dir, store.Options{Keys: kr})
			fillPersonal(t, s, 10)
			_ = s.Close()
			swap(t, dir, tc.from, tc.to, tc.index)
			_, err := store.Open(dir, store.Options{Keys: kr})
			var ce *store.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, errs.ErrChecksum) {
				t.Fatalf("open = %v, want a *CorruptError for a failed tag", err)
			}
			rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Keys: kr})
			if err != nil || rep.BadRecords != 1 {
				t.Fatalf("recover = %+v, %v; want the moved record counted unreadable", rep, err)
			}
			s = mustOpen(t, dir, store.Options{Keys: kr})
			queued, dead := readAll(t, s)
			if len(queued)+len(dead) != tc.left {
				t.Fatalf("after recover %d queued + %d dead events, want %d", len(queued), len(dead), tc.left)
			}
		})
	}
}

func TestEncryption_DamagedKeyIDIsADamagedRecordNotAMissingKey(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t, 1)
	s := mustOpen(t, dir, store.Options{Keys: kr})
	fillPersonal(t, s, 10)
	_ = s.Close()
	db, err := bolt.Open(filepath.Join(dir, store.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		k, v := tx.Bucket([]byte("events")).Cursor().First()
		v = append([]byte(nil), v...)
		v[2] ^= 0xff // a byte of the key id
		return tx.Bucket([]byte("events")).Put(append([]byte(nil), k...), v)
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	var ce *store.CorruptError
	if _, err := store.Open(dir, store.Options{Keys: kr}); !errors.As(err, &ce) {
		t.Fatalf("open = %v, want a *CorruptError", err)
	}
	rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Keys: kr})
	if err != nil || rep.BadRecords != 1 || rep.Saved != 7 {
		t.Fatalf("recover = %+v, %v; want the record counted unreadable and 7 events saved", rep, err)
	}
}

func TestEncryption_RecoverWithoutTheKeyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t, 1)
	s := mustOpen(t, dir, store.Options{Keys: kr})
	fillPersonal(t, s, 10)
	_ = s.Close()
	before := rawFile(t, dir)
	_, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true})
	if !errors.Is(err, errs.ErrKeyMissing) {
		t.Fatalf("recover without keys = %v, want ErrKeyMissing", err)
	}
	if !bytes.Equal(rawFile(t, dir), before) {
		t.Fatal("the data file changed")
	}
	rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true, Keys: kr})
	if err != nil || rep.Saved != 8 || rep.DeadSaved != 1 {
		t.Fatalf("recover with the key = %+v, %v; want 8 events and 1 dead batch saved", rep, err)
	}
	if bytes.Contains(rawFile(t, dir), secretEmail) {
		t.Fatal("recover wrote records in the clear")
	}
}

func deadID(t *testing.T, id string) []byte {
	t.Helper()
	k, err := ksuid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return k.Bytes()
}

func TestEncryption_ForgetReadsAndRewritesSealedRecords(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{Keys: testKeys(t, 1)})
	fillPersonal(t, s, 30) // userIds ua…uz cycle: ua and ub are in the dead batch too
	res, err := s.Forget(context.Background(), func(ev []byte) bool { return bytes.Contains(ev, []byte(`"userId":"ua"`)) })
	if err != nil || res.Queued != 1 || res.Dead != 1 || res.DeadBatches != 0 {
		t.Fatalf("forget = %+v, %v; want 1 queued and 1 dead event of ua, the dead batch kept with ub's", res, err)
	}
	queued, dead := readAll(t, s)
	if len(queued) != 27 || len(dead) != 1 || !bytes.Equal(dead[0], personalEvent(1)) {
		t.Fatalf("after forget %d queued, %d dead; want 27 and ub's dead event", len(queued), len(dead))
	}
	_ = s.Close()
	if raw := rawFile(t, dir); bytes.Contains(raw, secretEmail) {
		t.Fatal("the rewritten dead batch was written in the clear")
	}
}
