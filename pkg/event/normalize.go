package event

import (
	"time"
)

// span is a value's offsets in the event; end == 0 means the field is absent.
type span struct{ start, end int }

func (s span) present() bool { return s.end > 0 }

// parsed is what one pass over an event learnt about it that emit needs.
type parsed struct {
	end     int // offset just past the closing '}'
	members int // top-level members

	typ, msgID, ts, ctx, integ span

	ctxMembers   int  // members of the event's context object (those scrub rules keep)
	ctxLibrary   bool // context.library is present
	integMembers int  // members of the event's integrations object (those scrub rules keep)

	scrubFrom, scrubTo int  // the event's scrub edits: intake.scrubs[scrubFrom:scrubTo]
	suppressed         bool // its userId or anonymousId is in Options.Suppress
}

// ids are the fields only the rules look at.
type ids struct{ userID, anonID, prevID, event, groupID span }

// intake holds what is shared by all events of one Normalize or ParseBatch
// call: settings, the intake time, and the batch-level objects to merge.
type intake struct {
	typ    string // route type, "" when each event carries its own
	max    int
	nowFn  func() time.Time
	ctx    *mergeObj // batch-level context, nil when none
	integ  *mergeObj // batch-level integrations, nil when none
	libExt []byte    // Options.Library, or the default when it does not fit libArr
	libArr [64]byte  // the default library, built without allocating
	libLen int

	scrub    *Scrub // Options.Scrub
	suppress *IDSet // Options.Suppress
	scrubs   []edit // the scrub edits of the events parsed so far (scrub.go), by event

	haveNow bool
	now     time.Time
	tsLen   int // the intake time as RFC 3339 UTC with ms in tsArr, once computed
	tsArr   [32]byte
}

// init checks the route type and resolves the options.
func (in *intake) init(typ string, opt *Options) error {
	if typ != "" && !knownType(typ) {
		return &Error{Index: -1, Field: "type", Reason: "route type " + string(appendString(nil, typ)) +
			" is not one of " + typeList}
	}
	lib, err := opt.library()
	if err != nil {
		return err
	}
	if lib == nil {
		var tmp [64]byte
		def := appendDefaultLibrary(tmp[:0])
		if len(def) <= len(in.libArr) {
			in.libLen = copy(in.libArr[:], def)
		} else {
			lib = append([]byte(nil), def...)
		}
	}
	in.libExt = lib
	in.typ, in.max, in.nowFn = typ, opt.maxEventBytes(), opt.Now
	in.scrub, in.suppress = opt.Scrub, opt.Suppress
	if in.nowFn == nil {
		in.nowFn = time.Now
	}
	return nil
}

// lib returns the context.library JSON.
func (in *intake) lib() []byte {
	if in.libExt != nil {
		return in.libExt
	}
	return in.libArr[:in.libLen]
}

// intakeTime returns the intake time, read once per call.
func (in *intake) intakeTime() time.Time {
	if !in.haveNow {
		in.now, in.haveNow = in.nowFn(), true
	}
	return in.now
}

// timestamp returns the intake time formatted for a missing timestamp.
func (in *intake) timestamp() []byte {
	if in.tsLen == 0 {
		in.tsLen = len(in.intakeTime().UTC().AppendFormat(in.tsArr[:0], "2006-01-02T15:04:05.000Z07:00"))
	}
	return in.tsArr[:in.tsLen]
}

// extra bounds how many bytes emit may add to the event p.
func (in *intake) extra(p *parsed) int {
	n := 160 + len(in.lib()) + (p.scrubTo-p.scrubFrom)*scrubbedLen
	if in.ctx != nil {
		n += 2 * len(in.ctx.raw)
	}
	if in.integ != nil {
		n += 2 * len(in.integ.raw)
	}
	return n
}

// Normalize validates one event (a raw JSON object) and returns the bytes to
// store: the input with messageId, timestamp, type and context.library
// spliced in where they are missing (see the package documentation). typ,
// when non-empty, is the type given by the route (/v1/track): it is set on
// the event, replacing any "type" the event carries. Errors are *Error with
// Index 0, or ErrBadLibrary for a bad Options.Library.
func Normalize(raw []byte, typ string, opt Options) ([]byte, error) {
	out, err := AppendNormalized(nil, raw, typ, opt)
	if err != nil {
		return nil, err
	}
	return out[:len(out):len(out)], nil
}

// AppendNormalized is Normalize appending the event to dst, so that a caller normalising many
// events can write them into one buffer it reuses. On error dst is returned unchanged (its
// spare capacity may have been written).
func AppendNormalized(dst, raw []byte, typ string, opt Options) ([]byte, error) {
	var in intake
	if err := in.init(typ, &opt); err != nil {
		return dst, err
	}
	start := skipSpace(raw, 0)
	p, bad := in.parse(raw[start:])
	if bad == nil {
		if j := skipSpace(raw, start+p.end); j != len(raw) {
			bad = badSyntax(&syntaxError{j - start, "unexpected data after the event"}, "event")
		}
	}
	if bad != nil {
		bad.Index = 0
		return dst, bad
	}
	if p.suppressed {
		return dst, ErrSuppressed
	}
	if dst == nil {
		dst = make([]byte, 0, p.end+in.extra(&p))
	}
	out, bad := in.emit(dst, raw[start:], &p)
	if bad != nil {
		bad.Index = 0
		return dst, bad
	}
	return out, nil
}

// parse scans the event that starts at b[0], validating its JSON in one pass
// and recording the fields normalisation looks at, then applies the rules.
func (in *intake) parse(b []byte) (p parsed, bad *Error) {
	if len(b) == 0 || b[0] != '{' {
		return p, badField("", "an event must be a JSON object {…}, got "+describe(b))
	}
	var id ids
	var keys keySet
	var rm removal
	p.scrubFrom = len(in.scrubs)
	it := newObjIter(b, 0)
	for {
		m, ok, se := it.key()
		if se != nil {
			return p, badSyntax(se, "event")
		}
		if !ok {
			break
		}
		p.members++
		k := m.key(b)
		if keys.add(k) {
			return p, badField(string(k), "duplicate key: send each top-level field once")
		}
		var end int
		var sp *span
		var rule *scrubNode
		if in.scrub != nil {
			rule = in.scrub.root.child(k)
		}
		switch string(k) {
		case "type":
			sp = &p.typ
		case "userId":
			sp = &id.userID
		case "anonymousId":
			sp = &id.anonID
		case "previousId":
			sp = &id.prevID
		case "event":
			sp = &id.event
		case "groupId":
			sp = &id.groupID
		case "messageId":
			sp = &p.msgID
		case "timestamp":
			sp = &p.ts
		case "context":
			sp = &p.ctx
			if m.valStart < len(b) && b[m.valStart] == '{' {
				end, p.ctxMembers, p.ctxLibrary, se = in.walkNested(b, m.valStart, 2, nil, true, rule)
			}
			rule = nil
		case "integrations":
			sp = &p.integ
			if m.valStart < len(b) && b[m.valStart] == '{' {
				end, p.integMembers, _, se = in.walkNested(b, m.valStart, 2, nil, false, rule)
			}
			rule = nil
		default:
			if rule != nil && rule.action == 0 && m.valStart < len(b) && b[m.valStart] == '{' {
				end, _, _, se = in.walkNested(b, m.valStart, 2, nil, false, rule)
				rule = nil
			}
		}
		if end == 0 && se == nil {
			end, se = scanValue(b, m.valStart, 1)
		}
		if se != nil {
			bad := badSyntax(se, "event")
			bad.Field = string(k) // the top-level field whose value holds the fault
			return p, bad
		}
		if sp != nil {
			*sp = span{m.valStart, end}
		}
		if se = it.value(end); se != nil {
			return p, badSyntax(se, "event")
		}
		if rule != nil && rule.action != 0 && in.scrubMember(b, &m, end, &it, &rm, rule.action) {
			p.members--
		}
		rm.next(end)
	}
	p.end = it.end
	p.scrubTo = len(in.scrubs)
	if bad := in.check(b, &p, &id); bad != nil {
		return p, bad
	}
	p.suppressed = in.suppress.holdsUser(b, id.userID, id.anonID)
	return p, nil
}

// mark records in the batch-level objects which of their keys the event's
// own context and integrations already have. The event was validated by
// parse.
func (in *intake) mark(b []byte, p *parsed) {
	for _, x := range [...]struct {
		mo *mergeObj
		s  span
	}{{in.ctx, p.ctx}, {in.integ, p.integ}} {
		if x.mo == nil {
			continue
		}
		clear(x.mo.present)
		copy(x.mo.present, x.mo.dropped) // a member a rule removes counts as had: it is not added
		if x.s.present() && b[x.s.start] == '{' {
			_, _, _, _ = in.walkNested(b, x.s.start, 2, x.mo, false, nil)
		}
	}
}

// walkNested validates the object at b[start], at nesting depth depth (a context or
// integrations object is at depth 2), counting its members, noting a "library" key when
// wantLibrary, marking in mo the batch-level keys it already has, and recording the edits of
// the scrub rules below node (nil: none) for its members and, through the objects on their
// paths, for the members of those. n counts the members the rules keep.
func (in *intake) walkNested(b []byte, start, depth int, mo *mergeObj, wantLibrary bool, node *scrubNode) (end, n int, library bool, se *syntaxError) {
	if depth > maxDepth {
		return 0, 0, false, &syntaxError{start, "nested too deeply"}
	}
	var rm removal
	it := newObjIter(b, start)
	for {
		m, ok, se := it.key()
		if se != nil {
			return 0, 0, false, se
		}
		if !ok {
			return it.end, n, library, nil
		}
		n++
		var rule *scrubNode
		if wantLibrary || mo != nil || node != nil {
			k := m.key(b)
			if wantLibrary && string(k) == "library" {
				library = true
			}
			if mo != nil {
				if j := mo.find(k); j >= 0 {
					mo.present[j] = true
				}
			}
			if node != nil {
				rule = node.child(k)
			}
		}
		var e int
		if rule != nil && rule.action == 0 && m.valStart < len(b) && b[m.valStart] == '{' {
			e, _, _, se = in.walkNested(b, m.valStart, depth+1, nil, false, rule)
		} else {
			e, se = scanValue(b, m.valStart, depth)
		}
		if se != nil {
			return 0, 0, false, se
		}
		if se = it.value(e); se != nil {
			return 0, 0, false, se
		}
		if rule != nil && rule.action != 0 && in.scrubMember(b, &m, e, &it, &rm, rule.action) {
			n--
		}
		rm.next(e)
	}
}

// describe names the kind of JSON value at the start of b, for errors.
func describe(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	if _, se := scanValue(b, 0, 0); se != nil {
		return notJSON(se)
	}
	switch c := b[0]; {
	case c == '"':
		return "a string"
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	case c == '-' || isDigit(c):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "invalid JSON"
}
