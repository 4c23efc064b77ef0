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

	dropped  []bool   // by member: a scrub rule removes it (nil: none does)
	scrubbed [][]byte // by member: its bytes as a scrub rule rewrote them (nil: none did)
}

// newMergeObj reads the value at body[v] for the top-level field: an object
// (kept), null (ignored: nil result), or anything else (an error).
func (in *intake) newMergeObj(body []byte, v int, field string) (*mergeObj, int, *Error) {
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
	if in.scrub != nil {
		if bad := in.scrubMerge(mo, in.scrub.root.child([]byte(field))); bad != nil {
			return nil, 0, bad
		}
	}
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

// member returns member j's bytes, "key":value, as sent or as a scrub rule rewrote them.
func (mo *mergeObj) member(j int) []byte {
	if mo.scrubbed != nil && mo.scrubbed[j] != nil {
		return mo.scrubbed[j]
	}
	m := &mo.members[j]
	return mo.body[m.keyStart:m.valEnd]
}

// scrubMerge applies the scrub rules below node (those of "context.…" or "integrations.…") to
// the batch-level members once, before they are merged into each event: a member removed is
// never added, a member masked or hashed, or an object with scrubbed fields inside, is added
// as rewritten.
func (in *intake) scrubMerge(mo *mergeObj, node *scrubNode) *Error {
	if node == nil {
		return nil
	}
	for j, k := range mo.keys {
		rule := node.child(k)
		if rule == nil {
			continue
		}
		m := &mo.members[j]
		var val []byte
		switch {
		case rule.action == ScrubRemove:
			if mo.dropped == nil {
				mo.dropped = make([]bool, len(mo.members))
			}
			mo.dropped[j] = true
			continue
		case rule.action != 0:
			val = in.scrub.appendScrubbed(nil, mo.body[m.valStart:m.valEnd], rule.action)
		case mo.body[m.valStart] == '{':
			var se *syntaxError
			if val, se = in.scrubObject(mo.body, m.valStart, m.valEnd, rule); se != nil {
				return badSyntax(se, "request body")
			}
		default:
			continue
		}
		if mo.scrubbed == nil {
			mo.scrubbed = make([][]byte, len(mo.members))
		}
		mo.scrubbed[j] = append(append(append([]byte(nil), mo.body[m.keyStart:m.keyEnd]...), ':'), val...)
	}
	return nil
}
