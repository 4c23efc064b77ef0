package test_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// damageFixture is a real queue file and a map of its pages, to say which
// events a damaged page may take with it.
type damageFixture struct {
	data     []byte
	pageSize int
	hwm      int         // pages in use or free: [0, hwm)
	kind     []string    // per page: meta, freelist, branch, leaf, overflow, free; beyond hwm: unused
	spanOf   []int       // per page: first page of the branch or leaf it belongs to, else -1
	spanEnd  map[int]int // first page of a span → its last page
	events   map[string]int
	dead     map[string]int    // dead batch id (hex) → span
	enqueued map[string]bool   // every event ever appended (acknowledged ones may come back from free pages)
	keys     *keyring.Keyring  // the key the file is sealed with; nil: plain
	env      map[string]string // the configuration of every command run on it: the key file, when sealed
}

// buildDamageFixture writes a file with a few thousand queued events, some
// acknowledged (their pages freed), dead letters and a saved retry state; sealed with a key
// of its own when mode encrypts.
func buildDamageFixture(t *testing.T, mode encryptionMode) *damageFixture {
	t.Helper()
	dir := t.TempDir()
	fx := &damageFixture{enqueued: map[string]bool{}, events: map[string]int{}, dead: map[string]int{}, spanEnd: map[int]int{}}
	key := keyFile(t)
	fx.env = mode.env(key, nil)
	if mode.on {
		var err error
		if fx.keys, err = keyring.Load([]string{key}); err != nil {
			t.Fatal(err)
		}
	}
	q, err := queue.Open(dir, queue.Config{NoSync: true, Keys: fx.keys})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for range 300 {
		evs := make([][]byte, 10)
		for i := range evs {
			evs[i] = fmt.Appendf(nil, `{"type":"track","event":"Damage Probe","messageId":"dmg-%05d","userId":"u-%d","timestamp":"2026-01-02T03:04:05Z","properties":{"n":%d,"pad":"%090d"}}`, n, n%7, n, n)
			fx.enqueued[string(evs[i])] = true
			n++
		}
		if err := q.Enqueue(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	lease := func(count int) *queue.Lease {
		b, err := q.Lease(context.Background(), count, 1<<30)
		if err != nil || b == nil {
			t.Fatalf("lease %d: %v", count, err)
		}
		return b
	}
	for range 3 {
		if err := lease(100).Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := lease(40).DeadLetter(context.Background(), queue.DeadInfo{Reason: "rejected", Status: 400 + i, Attempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lease(50).Retry(context.Background(), budget.State{Attempts: 3, Retries: 2, BackoffStart: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	fx.data, err = os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	fx.mapPages(t, filepath.Join(dir, store.FileName), fx.plainByKey(t, dir))
	if len(fx.events) != 2580 || len(fx.dead) != 3 {
		t.Fatalf("fixture holds %d events and %d dead batches, want 2580 and 3", len(fx.events), len(fx.dead))
	}
	return fx
}

// plainByKey reads every queued event of the healthy file in dir through the store (which
// opens sealed records), by key; nil for a plain file, whose records hold their events as
// they are.
func (fx *damageFixture) plainByKey(t *testing.T, dir string) map[string]string {
	t.Helper()
	if fx.keys == nil {
		return nil
	}
	s, err := store.Open(dir, store.Options{NoSync: true, Keys: fx.keys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]string{}
	b, err := s.Head(context.Background(), 1<<20, 1<<40)
	for b != nil && err == nil { // a saved retry state cuts the run: read on after it
		for i, k := range b.Keys() {
			out[string(k)] = string(b.Events[i])
		}
		b, _, err = s.ReadAfter(b.Keys()[len(b.Keys())-1], 1<<20, 1<<40)
	}
	if err != nil {
		t.Fatalf("read the fixture: %v", err)
	}
	return out
}

// mapPages reads the healthy file with bbolt: each page's type and span,
// and the span holding each event and dead batch (from the address of its
// key in bbolt's map of the file). plain gives a sealed file's events by key.
func (fx *damageFixture) mapPages(t *testing.T, path string, plain map[string]string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fx.pageSize = db.Info().PageSize
	pages := len(fx.data) / fx.pageSize
	fx.kind, fx.spanOf = make([]string, pages), make([]int, pages)
	err = db.View(func(tx *bolt.Tx) error {
		fx.hwm = int(tx.Size()) / fx.pageSize
		for id := 0; id < pages; id++ {
			fx.spanOf[id] = -1
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				fx.kind[id] = "unused"
				continue
			}
			fx.kind[id] = info.Type
			if info.Type != "branch" && info.Type != "leaf" {
				continue
			}
			fx.spanEnd[id] = id + info.OverflowCount
			for j := id; j <= id+info.OverflowCount; j++ {
				fx.spanOf[j] = id
				if j > id {
					fx.kind[j] = "overflow"
				}
			}
			id += info.OverflowCount
		}
		base := db.Info().Data
		spanOfKey := func(k []byte) int {
			return fx.spanOf[int((uintptr(unsafe.Pointer(&k[0]))-base)/uintptr(fx.pageSize))]
		}
		c := tx.Bucket([]byte("events")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			ev := string(v[5:])
			if plain != nil {
				ev = plain[string(k)]
			}
			fx.events[ev] = spanOfKey(k)
		}
		c = tx.Bucket([]byte("dead")).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			fx.dead[fmt.Sprintf("%x", k)] = spanOfKey(k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// firstOf returns the first page of kind k (for branch and leaf, the first
// of a span holding something of want: "events", "dead" or ""), or -1.
func (fx *damageFixture) firstOf(k, want string) int {
	for id, kind := range fx.kind {
		if kind != k {
			continue
		}
		switch want {
		case "events":
			if !fx.spanHolds(fx.events, id) {
				continue
			}
		case "dead":
			if !fx.spanHolds(fx.dead, id) {
				continue
			}
		}
		return id
	}
	return -1
}

func (fx *damageFixture) spanHolds(m map[string]int, span int) bool {
	for _, s := range m {
		if s == span {
			return true
		}
	}
	return false
}

// salvaged reads every event and dead batch id of the store in dir, in process, with the
// fixture's key.
func (fx *damageFixture) salvaged(t *testing.T, dir string) (events map[string]bool, dead map[string]bool) {
	t.Helper()
	s, err := store.Open(dir, store.Options{NoSync: true, Keys: fx.keys})
	if err != nil {
		t.Fatalf("open the recovered file: %v", err)
	}
	defer s.Close()
	events, dead = map[string]bool{}, map[string]bool{}
	b, err := s.Head(context.Background(), 1<<20, 1<<40)
	for b != nil && err == nil {
		for _, e := range b.Events {
			events[string(e)] = true
		}
		var more bool
		b, more, err = s.ReadAfter(b.Keys()[len(b.Keys())-1], 1<<20, 1<<40)
		if !more && b == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("read the recovered file: %v", err)
	}
	list, err := s.DeadList()
	if err != nil {
		t.Fatalf("list the recovered dead letters: %v", err)
	}
	for _, d := range list {
		id, err := ksuid.Parse(d.ID)
		if err != nil {
			t.Fatalf("dead batch ID %q: %v", d.ID, err)
		}
		dead[fmt.Sprintf("%x", id.Bytes())] = true
	}
	return events, dead
}

// exitDamaged is the exit code of every command that finds the data file damaged
// (docs/CONTRACT.md, "Exit codes").
const exitDamaged = 3
