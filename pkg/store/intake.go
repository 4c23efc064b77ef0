package store

import (
	"slices"
	"time"

	"github.com/segmentio/ksuid"
)

// A key's KSUID carries its intake time to the second only, which is too coarse for the age of
// the head event (batch.interval may be under a second; the reported age would be off by up to
// a second). The writer knows the precise time it stamped every key with, so it remembers it
// in memory, per run of keys, for the events this process appended. See doc.go, "Intake time".

// intakeResolution is how close two runs' times must be for the later run to be merged into
// the earlier one (its events then report the earlier time: at most this much older).
const intakeResolution = time.Millisecond

// maxIntakeRuns bounds the runs remembered (64 bytes each). More runs than that queued means
// at least as many events queued, far beyond any batch: the oldest runs are forgotten and their
// events fall back to their key's second.
const maxIntakeRuns = 1 << 14

// intakeRun is a run of consecutive keys appended at one time.
type intakeRun struct {
	first, last ksuid.KSUID
	at          time.Time
}

// intakeRing remembers the intake times of the newest runs of queued keys, oldest first. It is
// owned by the writer goroutine.
type intakeRing struct {
	runs []intakeRun // runs[off:] are live, ascending by key
	off  int
}

// add records that the keys first..last (each greater than every key recorded before) were
// appended at at.
func (r *intakeRing) add(first, last ksuid.KSUID, at time.Time) {
	if n := len(r.runs); n > r.off {
		if p := &r.runs[n-1]; !at.Before(p.at) && at.Sub(p.at) < intakeResolution {
			p.last = last
			return
		}
	}
	if len(r.runs)-r.off >= maxIntakeRuns {
		r.off++ // forget the oldest run
	}
	if r.off > 0 && len(r.runs) == cap(r.runs) && r.off >= len(r.runs)/2 {
		// Reuse the space of the runs that left instead of growing; the copy is paid for by
		// the at least as many runs that left since the last one.
		n := copy(r.runs, r.runs[r.off:])
		r.runs, r.off = r.runs[:n], 0
	}
	r.runs = append(r.runs, intakeRun{first: first, last: last, at: at})
}

// timeOf returns the intake time of head, the first key of the queue, and forgets the runs
// before it: the precise time when head's run is remembered, else head's own second (rounded
// down, so the event is reported at least as old as it is, never younger). A nil head (the
// queue is empty) forgets every run and returns the zero time.
func (r *intakeRing) timeOf(head ksuid.KSUID) time.Time {
	if head.IsNil() {
		r.reset()
		return time.Time{}
	}
	for r.off < len(r.runs) && ksuid.Compare(r.runs[r.off].last, head) < 0 {
		r.off++
	}
	if r.off == len(r.runs) {
		r.reset()
		return head.Time()
	}
	if p := r.runs[r.off]; ksuid.Compare(p.first, head) <= 0 {
		return p.at
	}
	return head.Time()
}

// reset forgets every run, releasing a large buffer left by a drained backlog.
func (r *intakeRing) reset() {
	if cap(r.runs) > 1024 {
		r.runs = nil
	}
	r.runs, r.off = r.runs[:0], 0
}

// at returns the intake time of k, a queued key at or after the head, without forgetting
// anything: the precise time when k's run is remembered, else k's own second. Each source's
// head asks it (timeOf keeps the runs of the oldest head, so those of every other source too).
func (r *intakeRing) at(k ksuid.KSUID) time.Time {
	if k.IsNil() {
		return time.Time{}
	}
	live := r.runs[r.off:]
	i, _ := slices.BinarySearchFunc(live, k, func(run intakeRun, k ksuid.KSUID) int { return ksuid.Compare(run.last, k) })
	if i < len(live) && ksuid.Compare(live[i].first, k) <= 0 {
		return live[i].at
	}
	return k.Time()
}
