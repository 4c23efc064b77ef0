package event

// mergeObj is a batch-level context or integrations object, read once per
// batch and merged into each event's own object (the event's keys win).
type mergeObj struct {
	body    []byte
	raw     []byte   // the whole object
	members []member // offsets into body
	keys    [][]byte // decoded keys, by member
	index   map[string]int
	present []bool // per event: the event has this key already
	library int    // index of the "library" member, -1 when none
}

// newMergeObj reads the value at body[v] for the top-level field: an object
// (kept), null (ignored: nil result), or anything else (an error).
func newMergeObj(body []byte, v int, field string) (*mergeObj, int, *Error) {
	if v < len(body) && body[v] != '{' {
		end, se := scanValue(body, v, 1)
		switch {
		case se != nil:
			return nil, 0, badSyntax(se, "request body")
		case body[v] == 'n':
			return nil, end, nil
		}
		return nil, 0, badField(field, "must be an object, got "+describe(body[v:]))
	}
	mo := &mergeObj{body: body, library: -1}
	var keys keySet
	it := newObjIter(body, v)
	for {
		m, ok, se := it.key()
		if se != nil {
			return nil, 0, badSyntax(se, "request body")
		}
		if !ok {
			break
		}
		k := m.key(body)
		if keys.add(k) {
			return nil, 0, badField(field, "duplicate key "+quoteShort(k)+": send each key once")
		}
		if m.valEnd, se = scanValue(body, m.valStart, 2); se != nil {
			return nil, 0, badSyntax(se, "request body")
		}
		if se = it.value(m.valEnd); se != nil {
			return nil, 0, badSyntax(se, "request body")
		}
		if field == "context" && string(k) == "library" {
			mo.library = len(mo.members)
		}
		mo.members = append(mo.members, m)
		mo.keys = append(mo.keys, k)
	}
	mo.raw = body[v:it.end]
	mo.present = make([]bool, len(mo.members))
	if len(mo.keys) > smallKeys {
		mo.index = make(map[string]int, len(mo.keys))
		for j, k := range mo.keys {
			mo.index[string(k)] = j
		}
	}
	return mo, it.end, nil
}

// find returns the index of key k, or -1.
func (mo *mergeObj) find(k []byte) int {
	if mo.index != nil {
		if j, ok := mo.index[string(k)]; ok {
			return j
		}
		return -1
	}
	for j, o := range mo.keys {
		if string(o) == string(k) {
			return j
		}
	}
	return -1
}

// missing counts the members the current event does not have.
func (mo *mergeObj) missing() int {
	n := 0
	for _, p := range mo.present {
		if !p {
			n++
		}
	}
	return n
}

// member returns member j's bytes, "key":value, as sent.
func (mo *mergeObj) member(j int) []byte {
	m := &mo.members[j]
	return mo.body[m.keyStart:m.valEnd]
}
