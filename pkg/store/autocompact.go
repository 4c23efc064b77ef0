package store

import (
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Online compaction policy; doc.go ("Compaction") explains the model.
const (
	// tinyLive: the queue counts as drained when its live data (payloads
	// plus 64 bytes per event) is at or under this; copying it is cheap, and
	// the file it leaves (at most 512 KiB of queue) is under the 1 MiB floor,
	// so one drain compacts once.
	tinyLive = 256 << 10
	// steadyLive: file growth while the queue holds at most this much is
	// growth the steady traffic needs, not a backlog.
	steadyLive = 1 << 20
	// compactInterval is the least store-clock time between two online
	// compactions; one held back by it runs when the interval ends.
	compactInterval = 2 * time.Second
)

// compactState is the writer goroutine's bookkeeping for online compaction.
type compactState struct {
	steady int64     // largest high-water mark reached by growth while the queue was small, since the last compaction
	lastHW int64     // high-water mark (bbolt's page count × page size) at the previous write tx
	last   time.Time // store clock at the last compaction; zero before the first
	timer  *time.Timer
	due    <-chan time.Time // fires when a held-back compaction may run; nil when none is pending
}

// queueLive is the queue's live data: payloads plus per-event overhead.
func (s *Store) queueLive() int64 { return s.w.Bytes + 64*s.w.Events }

// noteHighWater is called with tx.Size() at the start of every write
// transaction: growth since the previous one that left the queue small
// (s.w is that commit's result) is steady-state growth.
func (s *Store) noteHighWater(hw int64) {
	if hw > s.cs.lastHW && hw > s.cs.steady && s.queueLive() <= steadyLive {
		s.cs.steady = hw
	}
	s.cs.lastHW = hw
}

// maybeCompact runs after a commit that freed data. It compacts when
//
//   - the queue is drained: its live data is at most tinyLive (dead letters
//     are copied whatever their size, as "drained" means);
//   - the file exceeds max(CompactMinBytes, 2 × live + 1 MiB), live counting
//     dead letters too: the size the benchmark holds a drained file to;
//   - the file exceeds 2 × steady + 1 MiB, steady being the size it grew to
//     while the queue stayed small. Steady intake and drain reuse bbolt's
//     freed pages and plateau at such a size; compacting below it would only
//     make the file grow back, so it happens only after a backlog;
//   - no other online compaction ran in the last compactInterval of store
//     clock (a backstop against traffic that swings between backlog and
//     empty); a compaction held back by it is retried by a timer.
//
// It runs on the writer goroutine, so no append can slip in between the
// copy and the swap.
func (s *Store) maybeCompact() {
	if s.opt.CompactMinBytes < 0 || s.checking.Load() || s.failed.Load() != nil {
		return
	}
	if s.queueLive() > tinyLive {
		return
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return
	}
	limit := max(s.opt.CompactMinBytes, 2*s.liveEstimate()+1<<20, 2*s.cs.steady+1<<20)
	if fi.Size() <= limit {
		return
	}
	if !s.cs.last.IsZero() {
		if wait := s.cs.last.Add(compactInterval).Sub(s.opt.Now()); wait > 0 {
			s.armCompact(min(wait, compactInterval))
			return
		}
	}
	if err := s.compact(); err != nil {
		s.log.Warn("online compaction failed; will retry after the next drain", "error", err)
	}
}

// armCompact makes the writer call maybeCompact again after d.
func (s *Store) armCompact(d time.Duration) {
	if s.cs.due != nil {
		return
	}
	s.cs.timer = time.NewTimer(d)
	s.cs.due = s.cs.timer.C
}

// compacted resets the bookkeeping after a successful compaction and
// publishes the count.
func (s *Store) compacted() {
	s.cs.steady = 0
	s.cs.last = s.opt.Now()
	_ = s.db.View(func(tx *bolt.Tx) error {
		s.cs.lastHW = tx.Size()
		return nil
	})
	s.w.compactions++
	s.mu.Lock()
	s.pub.compactions = s.w.compactions
	s.mu.Unlock()
}
