package store

import (
	"strconv"
	"strings"
	"time"
)

// DeadFilter picks dead batches by what their DeadInfo and id record. A field at its zero
// value matches every batch, so the zero DeadFilter matches them all; set fields must all
// match. It is applied in one place, Match, by DeadListMatching and inside the writer's
// transaction by ReplayMatching and PurgeMatching, so a replay or a purge acts on exactly the
// batches that match when it commits.
type DeadFilter struct {
	// Source matches the batch's source (DeadInfo.Source).
	Source string
	// Since matches batches dead-lettered at or after it, Until those dead-lettered before it.
	// A batch's dead-letter time is its id's, to the second: Since is rounded down to its
	// second, so a batch dead-lettered in the second Since falls in is matched.
	Since, Until time.Time
	// Status matches the last answer's code: its HTTP status ("429"), a destination's own code
	// (a Kafka error name, "NOT_ENOUGH_REPLICAS") or the network error class ("maybe_sent");
	// names are compared without regard to case.
	Status string
	// Reason matches DeadInfo.Reason, one of DeadReasons.
	Reason string
}

// IsZero reports whether f matches every dead batch.
func (f DeadFilter) IsZero() bool { return f == DeadFilter{} }

// Match reports whether the dead batch d (as DeadList or DeadGet read it) matches f.
func (f DeadFilter) Match(d DeadBatch) bool {
	switch {
	case f.Source != "" && sourceName(d.Info.Source) != sourceName(f.Source):
		return false
	case !f.Since.IsZero() && d.At.Before(f.Since.Truncate(time.Second)):
		return false
	case !f.Until.IsZero() && !d.At.Before(f.Until):
		return false
	case f.Reason != "" && d.Info.Reason != f.Reason:
		return false
	case f.Status != "" && !d.Info.hasCode(f.Status):
		return false
	}
	return true
}

// hasCode reports whether code names the last answer of d: its Code, HTTP status or network
// error class.
func (d DeadInfo) hasCode(code string) bool {
	return strings.EqualFold(d.Code, code) || (d.Status != 0 && strconv.Itoa(d.Status) == code) ||
		(d.ErrorClass != "" && strings.EqualFold(d.ErrorClass, code))
}
