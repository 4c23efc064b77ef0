package uploader

import "slices"

// slots are the batches in flight, by id in lease order (oldest first): the source and
// endpoint of each, which of them wait out a retry wait of their own (and so send nothing:
// their place goes to the next batch), and how many attempts are being sent. A plain value:
// the gate owns it under its lock.
type slots struct {
	live    []uint64
	meta    map[uint64]slotMeta
	waiting map[uint64]bool
	sending int
	seq     uint64
	began   map[uint64]uint64 // the attempt in flight of each batch, numbered in the order attempts began
	attempt uint64            // the last attempt's number
}

// begin numbers the attempt of id that is starting.
func (s *slots) begin(id uint64) {
	if s.began == nil {
		s.began = map[uint64]uint64{}
	}
	s.attempt++
	s.began[id] = s.attempt
	s.sending++
}

// end returns the number of id's attempt, which has ended.
func (s *slots) end(id uint64) uint64 {
	n := s.began[id]
	delete(s.began, id)
	s.sending--
	return n
}

// slotMeta is where a batch in flight belongs: its source (its hold and breaker) and its
// endpoint (its limit).
type slotMeta struct{ source, endpoint string }

// add registers a newly leased batch of m, the newest in flight, and returns its id (never 0,
// the id of the one batch of upload.concurrency: 1).
func (s *slots) add(m slotMeta) uint64 {
	s.seq++
	s.live = append(s.live, s.seq)
	if s.meta == nil {
		s.meta = map[uint64]slotMeta{}
	}
	s.meta[s.seq] = m
	return s.seq
}

// sending reports whether id's attempt is in flight.
func (s *slots) isSending(id uint64) bool {
	_, ok := s.began[id]
	return ok
}

// remove forgets a batch that has left flight.
func (s *slots) remove(id uint64) {
	if i := slices.Index(s.live, id); i >= 0 {
		s.live = slices.Delete(s.live, i, i+1)
	}
	delete(s.waiting, id)
	delete(s.meta, id)
}

// setFlag sets or clears id in a set.
func setFlag(m *map[uint64]bool, id uint64, on bool) {
	if !on {
		delete(*m, id)
		return
	}
	if *m == nil {
		*m = map[uint64]bool{}
	}
	(*m)[id] = true
}

// setWaiting marks id as waiting out a retry wait of its own (or no longer).
func (s *slots) setWaiting(id uint64, on bool) { setFlag(&s.waiting, id, on) }

// inFlight is how many batches are in flight and not waiting out a retry wait.
func (s *slots) inFlight() int { return len(s.live) - len(s.waiting) }

// rank is how many batches leased before id are not waiting and count (count nil: every
// one; the gate counts those of id's endpoint whose source is not held): id may start while
// its rank is below the limit, so when the limit shrinks the oldest batches go on and the
// newest wait, unsent and spending nothing, and a batch in its backoff, or of a source on
// hold, holds up no other.
func (s *slots) rank(id uint64, count func(uint64) bool) int {
	r := 0
	for _, o := range s.live {
		if o == id {
			break
		}
		if !s.waiting[o] && (count == nil || count(o)) {
			r++
		}
	}
	return r
}

// sourceOf is the source of id (DefaultSource for the one batch of upload.concurrency: 1,
// which is not registered).
func (s *slots) sourceOf(id uint64) string {
	if m, ok := s.meta[id]; ok {
		return m.source
	}
	return DefaultSource
}

// head reports whether id is the oldest batch in flight of its source: each source is its
// own FIFO.
func (s *slots) head(id uint64) bool {
	src := s.sourceOf(id)
	for _, o := range s.live {
		if s.sourceOf(o) == src {
			return o == id
		}
	}
	return false
}

// sendingOf is how many attempts of source are in flight.
func (s *slots) sendingOf(source string) int {
	n := 0
	for id := range s.began {
		if s.sourceOf(id) == source {
			n++
		}
	}
	return n
}

// liveOf is how many batches of source are in flight, and of them how many are not waiting
// out a retry wait.
func (s *slots) liveOf(source string) (live, notWaiting int) {
	for _, id := range s.live {
		if s.sourceOf(id) == source {
			live++
			if !s.waiting[id] {
				notWaiting++
			}
		}
	}
	return live, notWaiting
}
