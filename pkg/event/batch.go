package event

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
// (Segment answers 200 to it). The returned events share one allocation.
func ParseBatch(body []byte, opt Options) ([][]byte, error) {
	var in intake
	if err := in.init("", &opt); err != nil {
		return nil, err
	}
	start := skipSpace(body, 0)
	if start >= len(body) || body[start] != '{' {
		return nil, &Error{Index: -1, Reason: `the body must be a JSON object {"batch":[…]}, got ` + describe(body[start:])}
	}
	arr, count, elem, bad := in.parseBody(body, start)
	if bad != nil {
		bad.Index = elem
		return nil, bad
	}
	if !arr.present() {
		return nil, &Error{Index: -1, Field: "batch", Reason: "is required: an array of events"}
	}

	events := make([][]byte, 0, count)
	var ar arena
	extra := in.extra()
	ar.grow(arr.end - arr.start + count*extra)
	b := body[:arr.end]
	i := skipSpace(b, arr.start+1)
	if b[i] == ']' {
		return nil, nil
	}
	for k := 0; ; k++ {
		ev := b[i:]
		p, bad := in.parse(ev)
		var out []byte
		if bad == nil {
			out, bad = in.emit(ar.get(p.end+extra), ev, &p)
		}
		if bad != nil {
			bad.Index = k
			return nil, bad
		}
		events = append(events, ar.keep(out))
		i = skipSpace(b, i+p.end)
		switch b[i] {
		case ']':
			return events, nil
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, &Error{Index: -1, Reason: "invalid JSON at byte " + itoa(i) +
				" of the request body: expected ',' or ']' after event " + itoa(k) + "; send well-formed JSON"}
		}
	}
}

// parseBody validates the body's top-level object, returns the span of its
// batch array with a count of its elements, and reads the batch-level context
// and integrations into in. The array's events are only delimited here;
// they are validated one by one as they are normalised. elem is the index of
// the event an error is about, -1 when it is about the body.
func (in *intake) parseBody(body []byte, start int) (arr span, count, elem int, bad *Error) {
	var keys keySet
	it := newObjIter(body, start)
	for {
		m, ok, se := it.key()
		if se != nil {
			return arr, 0, -1, badSyntax(se, "request body")
		}
		if !ok {
			break
		}
		k := m.key(body)
		if keys.add(k) {
			return arr, 0, -1, badField(string(k), "duplicate key in the request body: send each top-level field once")
		}
		v := m.valStart
		var end int
		switch string(k) {
		case "batch":
			if v >= len(body) || body[v] != '[' {
				if end, se = scanValue(body, v, 1); se == nil {
					return arr, 0, -1, badField("batch", "must be an array of events, got "+describe(body[v:]))
				}
				break
			}
			if end, count, elem, se = delimitArray(body, v); se == nil {
				arr = span{v, end}
			} else if elem >= 0 {
				return arr, 0, elem, badSyntax(se, "request body")
			}
		case "context", "integrations":
			var mo *mergeObj
			if mo, end, bad = newMergeObj(body, v, string(k)); bad != nil {
				return arr, 0, -1, bad
			}
			if string(k) == "context" {
				in.ctx = mo
			} else {
				in.integ = mo
			}
		default:
			end, se = scanValue(body, v, 1)
		}
		if se != nil {
			return arr, 0, -1, badSyntax(se, "request body")
		}
		if se = it.value(end); se != nil {
			return arr, 0, -1, badSyntax(se, "request body")
		}
	}
	if j := skipSpace(body, it.end); j != len(body) {
		return arr, 0, -1, badSyntax(&syntaxError{j, "unexpected data after the body's object"}, "request body")
	}
	return arr, count, -1, nil
}

// delimitArray finds the end of the array at b[start] by matching brackets
// and skipping strings, without validating the rest, and counts its
// elements (commas at its top level, plus one). An error inside an element
// gives that element's index in elem, else elem is -1.
func delimitArray(b []byte, start int) (end, count, elem int, se *syntaxError) {
	var objects [maxDepth/64 + 1]uint64 // bit d: the bracket open at depth d is '{'
	depth := 0
	fail := func(i int, msg string) (int, int, int, *syntaxError) {
		if depth >= 2 {
			return 0, 0, count, &syntaxError{i, msg}
		}
		return 0, 0, -1, &syntaxError{i, msg}
	}
	for i := start; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			e, _, se := scanString(b, i)
			if se != nil {
				return fail(se.off, se.msg)
			}
			i = e - 1
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fail(i, "nested too deeply")
			}
			if c == '{' {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
		case '}', ']':
			if isObj := objects[depth/64]&(1<<(depth%64)) != 0; isObj != (c == '}') {
				return fail(i, "mismatched bracket")
			}
			depth--
			if depth == 0 {
				return i + 1, count + 1, -1, nil
			}
		case ',':
			if depth == 1 {
				count++
			}
		}
	}
	return fail(len(b), "unterminated array")
}

// arena hands out the output buffers of one batch from shared chunks.
type arena struct{ buf []byte }

// grow starts a new chunk of at least n bytes.
func (a *arena) grow(n int) { a.buf = make([]byte, 0, max(n, 4096)) }

// get returns an empty slice with room for n bytes.
func (a *arena) get(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n * 16)
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// keep commits out, taken from get and appended to, and returns it capped.
func (a *arena) keep(out []byte) []byte {
	if free := a.buf[len(a.buf):cap(a.buf)]; cap(free) > 0 && cap(out) == cap(free) && len(out) <= cap(free) {
		a.buf = a.buf[:len(a.buf)+len(out)]
	}
	return out[:len(out):len(out)]
}

// itoa formats n in decimal.
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
