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
// The group waits with its transaction open, and each request is applied as it arrives: the
// callers coming back take a few microseconds of CPU each (the next event's serialisation,
// the hand-off), so the last of 64 arrives a few hundred microseconds after the answer, and
// the puts of the earlier ones are done by then instead of after it. The commit that follows
// is left with only its pages to write and fsync.
//
// Everything else (the worker's acks, dead letters, retry states) waits with the group
// instead of forcing a commit of its own: an ack that arrives while callers are preparing
// rides along with their appends, which is one flush instead of two.

// fillState is what the writer knows of the callers that wait for their commits.
type fillState struct {
	expect int           // awaited appends expected in the next group
	last   time.Duration // the writer's time on the last group: the longest a group waits to fill
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

// filling is one group's wait for the callers expected back (see above).
type filling struct {
	have    int // awaited appends among group[:counted]
	counted int
	armed   bool          // f.timer runs for this group
	done    bool          // the wait is over: the group commits as soon as the channel is empty
	waited  time.Duration // time spent blocked waiting, not working
}

// startFill begins a group's fill: nothing is expected when the last group answered no more
// awaited callers than this one already holds, nor when a compaction request is held.
func (s *Store) startFill() filling {
	return filling{done: s.fill.expect <= awaitedIn(s.group) || s.held != nil || s.fill.last <= 0}
}

// await blocks until one more request joins the group, when the group is still short of the
// awaited callers expected and the wait, at most the last group's time from its first block,
// has not run out. It gives up for good when the time runs out, when a compaction request
// arrives (it is held, as take holds it) and when the store closes.
func (fl *filling) await(s *Store) {
	for ; fl.counted < len(s.group); fl.counted++ {
		if s.group[fl.counted].awaited {
			fl.have++
		}
	}
	f := &s.fill
	if fl.done || len(s.group) >= maxGroup || s.held != nil || fl.have >= f.expect {
		fl.done = true
		return
	}
	if !fl.armed {
		if f.timer == nil {
			f.timer = time.NewTimer(f.last)
		} else {
			f.timer.Reset(f.last)
		}
		fl.armed = true
	}
	t0 := time.Now()
	defer func() { fl.waited += time.Since(t0) }()
	select {
	case r := <-s.reqs:
		if !s.join(r) {
			fl.stop(s)
		}
		return
	case <-f.timer.C:
		fl.armed = false
	case <-s.quit:
		fl.stop(s)
	}
	fl.done = true
}

// stop ends the wait and disarms the timer.
func (fl *filling) stop(s *Store) {
	fl.done = true
	if fl.armed {
		s.fill.timer.Stop()
		fl.armed = false
	}
}

// noteAnswered records, once a group is answered, how many awaited callers to expect in the
// next one (those it answered, and those already waiting in the channel) and the writer's time
// on it (d, its waits left out).
func (s *Store) noteAnswered(d time.Duration) {
	s.fill.expect = awaitedIn(s.group) + int(s.awaitedQueued.Load())
	s.fill.last = d
}
