package event

import "encoding/json"

// member is one "key": value pair of an object, as offsets into the scanned
// input. The key offsets include the quotes.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
	escaped          bool // the key holds a backslash escape
}

// rawKey returns the key's bytes without quotes (escapes not decoded).
func (m *member) rawKey(b []byte) []byte { return b[m.keyStart+1 : m.keyEnd-1] }

// key returns the decoded key. It allocates only for a key with escapes.
func (m *member) key(b []byte) []byte {
	if !m.escaped {
		return m.rawKey(b)
	}
	var s string
	if json.Unmarshal(b[m.keyStart:m.keyEnd], &s) != nil {
		return m.rawKey(b) // unreachable: the scanner validated the string
	}
	return []byte(s)
}

// objIter walks the members of one object in a single pass. Call key to read
// the next key; the caller then scans the value (it may descend into it) and
// reports where it ended with value.
type objIter struct {
	b       []byte
	i       int // next token
	end     int // offset past '}' once done
	started bool
	done    bool
}

// newObjIter starts at the '{' at b[start].
func newObjIter(b []byte, start int) objIter { return objIter{b: b, i: start} }

// key reads the next member's key and the colon; ok is false after the last
// member (then it.end is set). m.valStart points at the value's first byte.
func (it *objIter) key() (m member, ok bool, err *syntaxError) {
	b := it.b
	if !it.started {
		it.started = true
		it.i = skipSpace(b, it.i+1)
		if it.i < len(b) && b[it.i] == '}' {
			it.end, it.done = it.i+1, true
		}
	}
	if it.done {
		return m, false, nil
	}
	i := it.i
	if i >= len(b) || b[i] != '"' {
		return m, false, &syntaxError{i, "expected a string key"}
	}
	m.keyStart = i
	if m.keyEnd, m.escaped, err = scanString(b, i); err != nil {
		return m, false, err
	}
	i = skipSpace(b, m.keyEnd)
	if i >= len(b) || b[i] != ':' {
		return m, false, &syntaxError{i, "expected ':' after key"}
	}
	m.valStart = skipSpace(b, i+1)
	return m, true, nil
}

// value records that the current member's value ended at end and consumes
// the separator that follows.
func (it *objIter) value(end int) *syntaxError {
	b := it.b
	i := skipSpace(b, end)
	if i >= len(b) {
		return &syntaxError{i, "unterminated object"}
	}
	switch b[i] {
	case ',':
		it.i = skipSpace(b, i+1)
		return nil
	case '}':
		it.end, it.done = i+1, true
		return nil
	}
	return &syntaxError{i, "expected ',' or '}' in object"}
}

// smallKeys is how many keys a keySet compares linearly before it switches to
// a map.
const smallKeys = 16

// keySet detects duplicate keys without allocating for small objects.
type keySet struct {
	small [smallKeys][]byte
	n     int
	big   map[string]struct{}
}

// add records k and reports whether it was already present.
func (s *keySet) add(k []byte) (dup bool) {
	if s.big != nil {
		if _, ok := s.big[string(k)]; ok {
			return true
		}
		s.big[string(k)] = struct{}{}
		return false
	}
	for _, o := range s.small[:s.n] {
		if string(o) == string(k) {
			return true
		}
	}
	if s.n < smallKeys {
		s.small[s.n] = k
		s.n++
		return false
	}
	s.big = make(map[string]struct{}, 2*smallKeys)
	for _, o := range s.small[:s.n] {
		s.big[string(o)] = struct{}{}
	}
	s.big[string(k)] = struct{}{}
	return false
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
