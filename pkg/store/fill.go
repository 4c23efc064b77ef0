package store

import "time"

// A caller of AppendAwaited (Enqueue, the agent's ingest) comes back with its next request as
// soon as it is answered. Cutting a group as soon as the channel is empty splits 64 such
// callers into two cohorts that take turns (those answered by one commit prepare while the
// other cohort's commit runs), about 40 events per commit instead of 64, and each commit costs
// the same two fsyncs whatever it holds. So the writer lets a group fill: it expects back the
// awaited callers the last commit answered, plus those that were already waiting for the next
// one, and waits for them, but never longer than the last commit took. A lone caller is back
// before anything waits (it is the whole expected count), so it pays nothing; callers that
// stop calling cost one commit's time once, after which nobody is expected any more.
//
// Everything else (the worker's acks, dead letters, retry states) waits with the group
// instead of forcing a commit of its own: an ack that arrives while callers are preparing
// rides along with their appends, which is one flush instead of two.

// fillState is what the writer knows of the callers that wait for their commits.
type fillState struct {
	expect int           // awaited appends expected in the next group
	last   time.Duration // how long the last commit took: the longest a group waits to fill
	timer  *time.Timer   // reused for that wait
}

// took accounts for a request the writer has taken out of its channel.
func (s *Store) took(r *request) {
	if r.awaited {
		s.awaitedQueued.Add(-1)
	}
}

// join adds a request taken out of the channel to the group and reports whether the group may
// take more. A compaction request ends the group: it is held (s.held) and run once the group has
// committed.
func (s *Store) join(r *request) bool {
	s.took(r)
	if r.kind == opCompact {
		s.held = r
		return false
	}
	s.group = append(s.group, r)
	return true
}

// awaitedIn counts the awaited appends of the group.
func awaitedIn(group []*request) int {
	n := 0
	for _, r := range group {
		if r.awaited {
			n++
		}
	}
	return n
}

// fillGroup waits, after take, for the awaited callers expected back (see above) to join the
// group, at most the last commit's duration. It returns at once when they are all there,
// when nobody is expected, when a compaction request arrives (it is held, as take holds it)
// and when the store closes.
func (s *Store) fillGroup() {
	f := &s.fill
	n := awaitedIn(s.group)
	if f.expect <= n || s.held != nil || f.last <= 0 {
		return
	}
	if f.timer == nil {
		f.timer = time.NewTimer(f.last)
	} else {
		f.timer.Reset(f.last)
	}
	defer f.timer.Stop()
	for n < f.expect && len(s.group) < maxGroup {
		select {
		case r := <-s.reqs:
			if !s.join(r) {
				return
			}
			if r.awaited {
				n++
			}
		case <-f.timer.C:
			return
		case <-s.quit:
			return
		}
	}
}

// noteAnswered records, once a group is answered, how many awaited callers to expect in the
// next one: those it answered, and those already waiting in the channel.
func (s *Store) noteAnswered(d time.Duration) {
	s.fill.expect = awaitedIn(s.group) + int(s.awaitedQueued.Load())
	s.fill.last = d
}
