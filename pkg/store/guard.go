package store

import (
	"runtime/debug"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/fsck"
	bolt "go.etcd.io/bbolt"
)

// A page damaged after Open checked the file makes bbolt panic when it reads
// it, in our goroutine: the transaction boundaries below turn that into the
// store's *CorruptError (see doc.go, "Checks, corruption, recovery").

// view runs fn in a read transaction. A panic inside bbolt (a page damaged
// since the file was checked) becomes the store's *CorruptError: intake
// stops, nothing is written, and the process lives on.
func (s *Store) view(fn func(tx *bolt.Tx) error) (err error) {
	s.dbmu.RLock()
	defer s.dbmu.RUnlock()
	select {
	case <-s.stopped:
		return errs.ErrClosed
	default:
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // db.View has rolled back
			err = s.corrupted(r)
		}
	}()
	return s.db.View(fn)
}

// corrupted records that a read inside bbolt panicked on the open file (a
// page damaged after the file was checked): every later write returns the
// *CorruptError, so the file is left as it is, and OnCorrupt is called (on a
// goroutine of its own: the caller may hold the store's locks). It returns
// the store's *CorruptError.
func (s *Store) corrupted(cause any) *CorruptError {
	ce := &CorruptError{Path: s.path, Dir: s.dir, Err: fsck.PanicErr(cause)}
	if s.failed.CompareAndSwap(nil, ce) {
		s.log.Error("data file is damaged; intake stopped", "path", s.path, "error", ce.Err)
		if s.opt.OnCorrupt != nil {
			go s.opt.OnCorrupt(ce)
		}
	}
	return s.failed.Load()
}

// guardGroup is deferred by the writer around one group's transaction: a
// panic inside bbolt rolls the transaction back, stops intake with the
// *CorruptError and answers every request of the group with it.
func (s *Store) guardGroup(tx *bolt.Tx) {
	r := recover()
	if r == nil {
		return
	}
	_ = tx.Rollback() // ErrTxClosed when it had committed
	ce := s.corrupted(r)
	for _, req := range s.group {
		req.err = ce
		req.answer() // sync and async requests alike; those answered before keep their answer
	}
}
