package event

import "sync"

// ParseBatch parses a Segment batch body {"batch":[…], "context"?,
// "integrations"?} and returns each event normalised as Normalize does (the
// type comes from each event). A top-level context or integrations object is
// merged key by key into each event's own: the event's keys win, the batch's
// other keys are added. Other top-level fields (writeKey, sentAt, …) are
// validated as JSON and ignored.
//
// It is all or nothing: on the first bad event it returns an *Error whose
// Index is that event's 0-based position, and no events; an error about the
// body itself has Index -1. An empty batch returns no events and no error
// (Segment answers 200 to it).
//
// An event that normalisation leaves as sent (an SDK's event carries its
// messageId, timestamp and context.library) is returned as its bytes in body,
// not copied: the caller keeps body unmodified while it uses the events. The
// others share one allocation. Every event is capped, so that appending to one
// cannot touch another or body.
func ParseBatch(body []byte, opt Options) ([][]byte, error) {
	evs, _, err := ParseBatchSuppressed(body, opt)
	return evs, err
}

// ParseBatchSuppressed is ParseBatch that also returns how many valid events it left out
// because Options.Suppress holds their user; the caller counts them as dropped once it has
// stored the others. A request with a bad event fails whole, its suppressed events included.
func ParseBatchSuppressed(body []byte, opt Options) (events [][]byte, suppressed int, err error) {
	var in intake
	if err := in.init("", &opt); err != nil {
		return nil, 0, err
	}
	start := skipSpace(body, 0)
	if start >= len(body) || body[start] != '{' {
		return nil, 0, &Error{Index: -1, Reason: `the body must be a JSON object {"batch":[…]}, got ` + describe(body[start:])}
	}
	ws := getWorkspace()
	defer putWorkspace(ws)
	in.scrubs = ws.scrubs[:0]
	defer func() { ws.scrubs = in.scrubs[:0] }()
	evs, found, bad := in.parseBody(body, start, ws)
	switch {
	case bad != nil:
		return nil, 0, bad
	case !found:
		return nil, 0, &Error{Index: -1, Field: "batch", Reason: "is required: an array of events"}
	case len(evs) == 0:
		return nil, 0, nil
	}

	// An event that needs no edit is returned as its bytes in body. The first
	// event that does allocates the arena for it and the events after it.
	out := make([][]byte, 0, len(evs))
	var arena []byte
	for k := range evs {
		ev, p := body[evs[k].off:], &evs[k].p
		if p.suppressed {
			suppressed++
			continue
		}
		in.mark(ev, p)
		var buf [5]edit
		edits := in.plan(ev, p, &buf)
		if len(edits) == 0 {
			if p.end > in.max {
				bad := in.tooLarge(p.end)
				bad.Index = k
				return nil, 0, bad
			}
			out = append(out, ev[:p.end:p.end])
			continue
		}
		if arena == nil {
			arena = make([]byte, 0, in.reserve(evs[k:]))
		}
		dst := arena[len(arena):]
		o, bad := in.apply(dst, ev, p, edits)
		if bad != nil {
			bad.Index = k
			return nil, 0, bad
		}
		if cap(o) == cap(dst) { // it fitted, as every event within the limit does
			arena = arena[:len(arena)+len(o)]
		}
		out = append(out, o[:len(o):len(o)])
	}
	if len(out) == 0 {
		out = nil
	}
	return out, suppressed, nil
}

// reserve is the arena size for evs once normalised. An event may reserve no
// more than the size limit: a big batch-level context merged into many
// events costs memory only for events that are accepted.
func (in *intake) reserve(evs []located) int {
	total := 0
	for k := range evs {
		total += min(evs[k].p.end+in.extra(&evs[k].p), in.max)
	}
	return total
}

// workspace is ParseBatch's working memory, kept for the next call: nothing it
// holds is returned.
type workspace struct {
	evs    []located // the events found in the body
	scrubs []edit    // their scrub edits
}

var workspaces = sync.Pool{New: func() any { return new(workspace) }}

// maxKeptEvents bounds the located events a kept workspace holds (about
// 140 bytes each), so that one huge batch does not pin its memory.
const maxKeptEvents = 4096

func getWorkspace() *workspace { return workspaces.Get().(*workspace) }

func putWorkspace(ws *workspace) {
	if cap(ws.evs) > maxKeptEvents || cap(ws.scrubs) > maxKeptEvents {
		return
	}
	ws.evs = ws.evs[:0] // located holds no pointers: nothing to clear
	workspaces.Put(ws)
}

// located is an event of a batch: its offset in the body and what parse
// learnt.
type located struct {
	off int
	p   parsed
}

// parseBody validates the body in one pass: its top-level object, each event
// of its batch array (parsed and checked against the rules as it goes), and
// the batch-level context and integrations, which it reads into in.
func (in *intake) parseBody(body []byte, start int, ws *workspace) (evs []located, found bool, bad *Error) {
	var keys keySet
	it := newObjIter(body, start)
	for {
		m, ok, se := it.key()
		if se != nil {
			return nil, false, bodySyntax(se)
		}
		if !ok {
			break
		}
		k := m.key(body)
		if keys.add(k) {
			return nil, false, &Error{Index: -1, Field: string(k),
				Reason: "duplicate key in the request body: send each top-level field once"}
		}
		v := m.valStart
		var end int
		switch string(k) {
		case "batch":
			if v >= len(body) || body[v] != '[' {
				if _, se = scanValue(body, v, 1); se != nil {
					return nil, false, bodySyntax(se)
				}
				return nil, false, &Error{Index: -1, Field: "batch", Reason: "must be an array of events, got " + describe(body[v:])}
			}
			found = true
			if ws.evs, end, bad = in.parseEvents(body, v, ws.evs[:0]); bad != nil {
				return nil, false, bad
			}
			evs = ws.evs
		case "context", "integrations":
			var mo *mergeObj
			if mo, end, bad = in.newMergeObj(body, v, string(k)); bad != nil {
				bad.Index = -1
				return nil, false, bad
			}
			if string(k) == "context" {
				in.ctx = mo
			} else {
				in.integ = mo
			}
		default:
			if end, se = scanValue(body, v, 1); se != nil {
				return nil, false, bodySyntax(se)
			}
		}
		if se = it.value(end); se != nil {
			return nil, false, bodySyntax(se)
		}
	}
	if j := skipSpace(body, it.end); j != len(body) {
		return nil, false, bodySyntax(&syntaxError{j, "unexpected data after the body's object"})
	}
	return evs, found, nil
}

// parseEvents parses the events of the batch array at body[v], appends them
// to evs and returns it with the offset past the array.
func (in *intake) parseEvents(body []byte, v int, evs []located) ([]located, int, *Error) {
	i := skipSpace(body, v+1)
	if i < len(body) && body[i] == ']' {
		return evs, i + 1, nil
	}
	if evs == nil {
		evs = make([]located, 0, len(body)/512+1)
	}
	for k := 0; ; k++ {
		p, bad := in.parse(body[i:])
		if bad != nil {
			bad.Index = k
			return nil, 0, bad
		}
		evs = append(evs, located{i, p})
		i = skipSpace(body, i+p.end)
		if i >= len(body) {
			return nil, 0, bodySyntax(&syntaxError{i, "unterminated batch array"})
		}
		switch body[i] {
		case ']':
			return evs, i + 1, nil
		case ',':
			i = skipSpace(body, i+1)
		default:
			return nil, 0, bodySyntax(&syntaxError{i, "expected ',' or ']' after event " + itoa(k)})
		}
	}
}

// bodySyntax is the *Error for malformed JSON outside the events.
func bodySyntax(se *syntaxError) *Error {
	e := badSyntax(se, "request body")
	e.Index = -1
	return e
}

// itoa formats n ≥ 0 in decimal.
func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
