package uploader

import "slices"

// slots are the batches in flight, by id in lease order (oldest first): which of them wait
// out a retry wait of their own (and so send nothing: their place goes to the next batch),
// and how many attempts are being sent. A plain value: the gate owns it under its lock.
type slots struct {
	live    []uint64
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

// add registers a newly leased batch, the newest in flight, and returns its id (never 0, the
// id of the one batch of upload.concurrency: 1).
func (s *slots) add() uint64 {
	s.seq++
	s.live = append(s.live, s.seq)
	return s.seq
}

// remove forgets a batch that has left flight.
func (s *slots) remove(id uint64) {
	if i := slices.Index(s.live, id); i >= 0 {
		s.live = slices.Delete(s.live, i, i+1)
	}
	delete(s.waiting, id)
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

// rank is how many batches leased before id are not waiting: id may start while its rank is
// below the limit, so when the limit shrinks the oldest batches go on and the newest wait,
// unsent and spending nothing, and a batch in its backoff holds up no other.
func (s *slots) rank(id uint64) int {
	r := 0
	for _, o := range s.live {
		if o == id {
			break
		}
		if !s.waiting[o] {
			r++
		}
	}
	return r
}

// head reports whether id is the oldest batch in flight.
func (s *slots) head(id uint64) bool { return len(s.live) > 0 && s.live[0] == id }
