package event

// This file reads the user an event belongs to: the suppress list checked at intake, and the
// matcher that finds a user's stored events when they are to be forgotten.

// IDSet is a set of user ids, as they appear in events' userId or anonymousId: a string's
// content, or a number's JSON text. It is read-only once built, so safe for concurrent use. A
// nil *IDSet holds nothing.
type IDSet struct {
	ids map[string]struct{}
}

// NewIDSet returns the set of ids; empty strings are ignored. No ids give nil.
func NewIDSet(ids ...string) *IDSet {
	var s *IDSet
	for _, id := range ids {
		if id == "" {
			continue
		}
		if s == nil {
			s = &IDSet{ids: make(map[string]struct{}, len(ids))}
		}
		s.ids[id] = struct{}{}
	}
	return s
}

// Has reports whether id is in the set.
func (s *IDSet) Has(id string) bool {
	if s == nil {
		return false
	}
	_, ok := s.ids[id]
	return ok
}

// Len returns how many ids the set holds.
func (s *IDSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.ids)
}

// IDs returns the ids, in no order.
func (s *IDSet) IDs() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.ids))
	for id := range s.ids {
		out = append(out, id)
	}
	return out
}

// has reports whether the set holds the id that the value at s of b (a string or a number)
// carries.
func (set *IDSet) has(b []byte, s span) bool {
	if set == nil || !s.present() || isNull(b, s) {
		return false
	}
	v := b[s.start:s.end]
	if isString(b, s) {
		v = content(b, s)
	}
	_, ok := set.ids[string(v)]
	return ok
}

// holdsUser reports whether the set holds the event's userId or its anonymousId.
func (set *IDSet) holdsUser(b []byte, user, anon span) bool {
	if set == nil {
		return false
	}
	return set.has(b, user) || set.has(b, anon)
}

// UserMatcher finds the events of some users: those whose userId is in Users or whose
// anonymousId is in Anonymous.
type UserMatcher struct {
	Users     *IDSet
	Anonymous *IDSet
}

// Match reports whether ev, a stored event (a JSON object, as Normalize returned it), belongs
// to one of the users. It reads the event's top-level keys only, decoding nothing but the two
// ids; bytes that are not a JSON object match nothing.
func (m UserMatcher) Match(ev []byte) bool {
	if m.Users == nil && m.Anonymous == nil {
		return false
	}
	i := skipSpace(ev, 0)
	if i >= len(ev) || ev[i] != '{' {
		return false
	}
	it := newObjIter(ev, i)
	for {
		mem, ok, se := it.key()
		if se != nil || !ok {
			return false
		}
		end, se := scanValue(ev, mem.valStart, 1)
		if se != nil {
			return false
		}
		switch string(mem.key(ev)) {
		case "userId":
			if m.Users.has(ev, span{mem.valStart, end}) {
				return true
			}
		case "anonymousId":
			if m.Anonymous.has(ev, span{mem.valStart, end}) {
				return true
			}
		}
		if it.value(end) != nil {
			return false
		}
	}
}
