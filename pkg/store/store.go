package store

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Store is the bbolt-backed queue storage of one data directory. All writes
// go through one writer goroutine (group commit); reads run concurrently.
type Store struct {
	dir, path string
	opt       Options
	log       *slog.Logger
	lock      *datadir.DirLock

	dbmu sync.RWMutex // guards db against the swap done by compaction
	db   *bolt.DB

	reqs     chan *request
	sendMu   sync.RWMutex // AppendAsync's hand-off (read) against Close closing quit (write)
	quit     chan struct{}
	stopped  chan struct{}
	closeErr error
	once     sync.Once
	notify   chan struct{}
	failed   atomic.Pointer[CorruptError]
	checking atomic.Bool
	codec    format.Codec // seals and opens the records of events and dead (seal.go)
	sealer   *sealer      // seals appended records off the writer (sealer.go); nil when plain

	w            writerState     // owned by the writer goroutine
	group        []*request      // owned by the writer goroutine: the requests of the transaction being built
	held         *request        // owned by the writer goroutine: a compaction request taken, run after the group
	pendingDrops []pendingDrop   // owned by the writer goroutine
	pendingRuns  []intakeRun     // owned by the writer goroutine: runs appended by this group
	intake       intakeRing      // owned by the writer goroutine
	cs           compactState    // owned by the writer goroutine
	fill         fillState       // owned by the writer goroutine: how long a group waits for callers coming back
	srcCloned    bool            // owned by the writer goroutine: the group has its own copy of w.sources
	srcDirty     map[string]bool // owned by the writer goroutine: sources the group changed → their head may have moved
	scratch      format.Scratch  // owned by the writer goroutine: the additional data of the record it seals or opens

	// awaitedQueued counts the AppendAwaited requests handed to the writer's channel and not
	// yet taken into a group (see fillState).
	awaitedQueued atomic.Int64

	mu  sync.Mutex // guards pub and intakeDropped
	pub writerState
	// intakeDropped counts the events dropped before they reached the writer (CountDropped),
	// by reason; never modified in place, like writerState.dropped.
	intakeDropped map[string]int64

	room atomic.Pointer[roomCh] // closed (and replaced) by the writer whenever bytes are freed
}

// roomCh is the channel Room returns; a pointer so that it can be swapped atomically.
type roomCh struct{ ch chan struct{} }

// writerState is what one group commit changes; published after commit.
type writerState struct {
	format.Counts
	head        ksuid.KSUID // zero when empty
	headTime    time.Time   // intake time of head (see intakeRing); zero when empty
	last        ksuid.KSUID // greatest key handed out
	commits     int64
	synced      int64 // commits made with bbolt's NoSync off: fsynced before Commit returned
	enqueued    int64
	compactions int64
	dropped     map[string]int64 // never modified in place: shared with pub (see addDropped)
	sources     sources          // per source; never modified in place once published (see Store.source)
}

// addDropped counts n more events dropped for reason. The map is shared by
// the writer's state and the published one (no copy per commit), so it is
// replaced, not modified: drops are rare, commits are not.
func (w *writerState) addDropped(reason string, n int64) {
	d := maps.Clone(w.dropped)
	if d == nil {
		d = map[string]int64{}
	}
	d[reason] += n
	w.dropped = d
}

// Open locks dir (creating it), opens or creates its data file and checks
// it: synchronously when small, in the background when large. It fails with
// errs.ErrLocked (wrapped) when another process holds dir, and with a
// *CorruptError when the file cannot be opened or fails its check.
func Open(dir string, opt Options) (*Store, error) {
	opt = opt.withDefaults()
	if err := datadir.Create(dir); err != nil {
		return nil, err
	}
	lock, err := datadir.Lock(dir)
	if err != nil {
		return nil, err
	}
	if warning, err := datadir.Check(dir); err != nil {
		_ = lock.Unlock()
		return nil, err
	} else if warning != "" {
		opt.Logger.Warn(warning)
	}
	s := &Store{
		dir: dir, path: filepath.Join(dir, FileName), opt: opt, log: opt.Logger, lock: lock,
		reqs: make(chan *request, maxQueued), quit: make(chan struct{}), stopped: make(chan struct{}),
		notify: make(chan struct{}, 1), codec: format.NewCodec(opt.Keys),
	}
	s.room.Store(&roomCh{ch: make(chan struct{})})
	checked, err := s.open()
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	s.sealer = newSealer(s.codec)
	go func() {
		// A page fault in the map (the file shrank under us) becomes a
		// panic that the writer's transaction guard turns into a *CorruptError.
		debug.SetPanicOnFault(true)
		s.run()
	}()
	if checked != nil {
		s.fixCounts(*checked) // as the background check does: damage that hid records shows here
	}
	return s, nil
}

// open opens and checks the file; checked is the result of a synchronous full
// check (nil when it runs in the background or the file is new).
func (s *Store) open() (checked *fsck.CheckResult, err error) {
	var size int64
	if fi, err := os.Stat(s.path); err == nil {
		size = fi.Size()
	}
	if size > 0 {
		// Before bbolt sees the file: see doc.go, "Checks, corruption, recovery".
		if err := fsck.ValidateFile(s.path); err != nil {
			if errors.Is(err, fsck.ErrDamaged) {
				return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
			}
			return nil, fmt.Errorf("check data file %s: %w", s.path, err)
		}
	}
	background := size > 0 && (s.opt.BackgroundCheckBytes < 0 || size > s.opt.BackgroundCheckBytes)
	var mmap int
	if background {
		// The check holds a long read transaction; a remap would wait for it
		// and stall the writer, so map enough up front.
		mmap = int(2*size + 64<<20)
	}
	db, err := format.OpenDB(s.path, s.opt.NoSync, mmap)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("data directory %s is in use by another outbox process: %w", s.dir, errs.ErrLocked)
		}
		return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
	}
	// Which keys the records need, before anything is written: a missing key changes nothing.
	ks, err := checkKeys(db, s.path, s.opt.Keys)
	if err != nil {
		_ = db.Close()
		var me *keyring.MissingError
		if errors.As(err, &me) {
			return nil, err
		}
		return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
	}
	if size > 0 && !background {
		res, err := fsck.CheckRecords(db, s.opt.Keys, ks.sealPlain, nil)
		if err != nil {
			_ = db.Close()
			return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
		}
		checked = &res
	}
	if err := s.load(db, ks.set); err != nil {
		_ = db.Close()
		return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
	}
	s.db = db
	if ks.sealPlain {
		if err := s.sealPlain(db, ks.set); err != nil {
			_ = db.Close()
			return nil, &CorruptError{Path: s.path, Dir: s.dir, Err: err}
		}
	}
	if background {
		s.checking.Store(true)
		go s.backgroundCheck()
	}
	return checked, nil
}

// load creates missing buckets and reads the counters, head and last key.
func (s *Store) load(db *bolt.DB, seal format.SealSet) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // db.Update has rolled back
			err = fsck.PanicErr(r)
		}
	}()
	w := writerState{dropped: map[string]int64{}}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{format.BucketEvents, format.BucketDead, format.BucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(format.BucketMeta)
		if meta.Get(format.MetaFormat) == nil {
			if err := meta.Put(format.MetaFormat, format.EncodeRecord([]byte{1})); err != nil {
				return err
			}
		}
		if !sameSet(meta, seal) { // the keys this process seals with are named before it writes
			if err := meta.Put(format.MetaSeal, format.EncodeRecord(format.EncodeSealSet(seal))); err != nil {
				return err
			}
		}
		c, err := format.ReadCounts(meta)
		if err != nil {
			return err
		}
		w.Counts = c
		if w.sources, err = loadSources(tx, c); err != nil {
			return err
		}
		for _, p := range w.sources {
			if !p.head.IsNil() && (w.head.IsNil() || ksuid.Compare(p.head, w.head) < 0) {
				w.head = p.head
			}
			if ksuid.Compare(p.tail, w.last) > 0 {
				w.last = p.tail
			}
		}
		w.headTime = w.head.Time() // appended by an earlier process: its second
		if w.head.IsNil() {
			w.headTime = time.Time{}
		}
		s.cs.lastHW = tx.Size()
		if k, _ := tx.Bucket(format.BucketDead).Cursor().Last(); k != nil {
			if d, _ := ksuid.FromBytes(k); ksuid.Compare(d, w.last) > 0 {
				w.last = d
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.w = w
	s.pub = w
	return nil
}

// Close stops the writer (answering queued requests with errs.ErrClosed), closes
// the file and releases the directory lock. It is safe to call twice.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.sendMu.Lock()
		close(s.quit)
		s.sendMu.Unlock()
		<-s.stopped
		s.sealer.stop()
		s.dbmu.Lock() // waits for readers, including a background check (which sees quit)
		s.storeFreelist()
		err := s.db.Close()
		s.dbmu.Unlock()
		if lerr := s.lock.Unlock(); err == nil {
			err = lerr
		}
		s.closeErr = err
	})
	return s.closeErr
}

// storeFreelist writes the freelist once, in a last empty commit, when the store closes
// cleanly: the next open then reads it (after the validator has checked it against the tree it
// walks) instead of bbolt walking the whole tree a second time to rebuild it. Commits never
// store it (NoFreelistSync, see format.OpenDB), so the first commit after the next open marks it as
// not stored again, and a file left by a crash is rebuilt by the walk as before. Not with
// NoSync (nothing is fsynced then), nor once the file failed a check (a damaged file is never
// written).
func (s *Store) storeFreelist() {
	if s.opt.NoSync || s.failed.Load() != nil {
		return
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // the file shrank or was damaged under us: leave it as it is
			s.log.Warn("could not store the freelist at close; the next open rebuilds it", "path", s.path, "error", fsck.PanicErr(r))
		}
	}()
	s.db.NoFreelistSync = false
	if err := s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		s.log.Warn("could not store the freelist at close; the next open rebuilds it", "path", s.path, "error", err)
	}
}

// Dir returns the data directory; Path the data file.
func (s *Store) Dir() string { return s.dir }

// Path returns the data file's path.
func (s *Store) Path() string { return s.path }

// Notify returns a channel signalled (buffer 1) after each commit that added events.
func (s *Store) Notify() <-chan struct{} { return s.notify }

// Room returns a channel closed the next time stored bytes go down.
func (s *Store) Room() <-chan struct{} { return s.room.Load().ch }

// Stats is a cheap snapshot of the store's counters.
type Stats struct {
	Events, Bytes                      int64     // queued events and their bytes
	Oldest                             time.Time // intake time of the head event; zero when empty
	DeadBatches, DeadEvents, DeadBytes int64
	FileBytes                          int64  // size of the data file
	Sync                               string // "always" or "none"
	Commits                            int64  // write transactions committed since open
	SyncedCommits                      int64  // of those, the ones bbolt fsynced before answering (all with sync always, none with none)
	Enqueued                           int64  // events appended since open
	Compactions                        int64  // online and explicit compactions since open
	Dropped                            map[string]int64
}

// Stats returns the counters kept in memory plus the file size.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	p := s.pub
	early := s.intakeDropped
	s.mu.Unlock()
	p.dropped = maps.Clone(p.dropped) // the caller's own copy
	for reason, n := range early {
		if p.dropped == nil {
			p.dropped = map[string]int64{}
		}
		p.dropped[reason] += n
	}
	st := Stats{
		Events: p.Events, Bytes: p.Bytes, DeadBatches: p.DeadBatches, DeadEvents: p.DeadEvents,
		DeadBytes: p.DeadBytes, Commits: p.commits, SyncedCommits: p.synced, Enqueued: p.enqueued, Compactions: p.compactions, Dropped: p.dropped, Sync: "always",
	}
	s.dbmu.RLock()
	if s.db.NoSync { // what bbolt does, not what was asked: a test holds the two together
		st.Sync = "none"
	}
	s.dbmu.RUnlock()
	if p.Events > 0 {
		st.Oldest = p.headTime
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.FileBytes = fi.Size()
	}
	return st
}

// Pending returns the queued events, their bytes and the intake time of the head event (zero
// when empty) as Stats does, from memory only: without Stats' file stat and map copy, for a
// consumer that polls.
func (s *Store) Pending() (events, bytes int64, oldest time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.Events > 0 {
		oldest = s.pub.headTime
	}
	return s.pub.Events, s.pub.Bytes, oldest
}

// Oldest returns the intake time of the head event, false when the queue is empty: to the
// clock's precision (Options.Now) for an event this process appended, to the second (rounded
// down) for one appended before it opened the file. See doc.go, "Intake time".
func (s *Store) Oldest() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.Events == 0 || s.pub.headTime.IsZero() {
		return time.Time{}, false
	}
	return s.pub.headTime, true
}
