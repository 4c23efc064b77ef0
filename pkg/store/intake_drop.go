package store

import "maps"

// CountDropped counts n events dropped before they reached the store, for reason (one of
// DropReasons: ReasonSuppressed, for events whose user is on the suppress list), as the store's
// own drops are counted: in Stats.Dropped, to OnDrop, and in a warn log line with the
// reason, the count and attrs (which must name no personal data).
func (s *Store) CountDropped(reason string, n int, attrs ...any) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	d := maps.Clone(s.intakeDropped)
	if d == nil {
		d = map[string]int64{}
	}
	d[reason] += int64(n)
	s.intakeDropped = d
	s.mu.Unlock()
	s.log.Warn("events dropped", append([]any{"reason", reason, "events", n}, attrs...)...)
	if s.opt.OnDrop != nil {
		s.opt.OnDrop(reason, n)
	}
}
