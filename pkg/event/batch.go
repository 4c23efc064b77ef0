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
	arr, count, bad := in.parseBody(body, start)
	if bad != nil {
		bad.Index = -1
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
// they are validated one by one as they are normalised.
func (in *intake) parseBody(body []byte, start int) (arr span, count int, bad *Error) {
	var keys keySet
	it := newObjIter(body, start)
	for {
		m, ok, se := it.key()
		if se != nil {
			return arr, 0, badSyntax(se, "request body")
		}
		if !ok {
			break
		}
		k := m.key(body)
		if keys.add(k) {
			return arr, 0, badField(string(k), "duplicate key in the request body: send each top-level field once")
		}
		v := m.valStart
		var end int
		switch string(k) {
		case "batch":
			if v >= len(body) || body[v] != '[' {
				if end, se = scanValue(body, v, 1); se == nil {
					return arr, 0, badField("batch", "must be an array of events, got "+describe(body[v:]))
				}
				break
			}
			if end, count, se = delimitArray(body, v); se == nil {
				arr = span{v, end}
			}
		case "context", "integrations":
			var mo *mergeObj
			if mo, end, bad = newMergeObj(body, v, string(k)); bad != nil {
				return arr, 0, bad
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
			return arr, 0, badSyntax(se, "request body")
		}
		if se = it.value(end); se != nil {
			return arr, 0, badSyntax(se, "request body")
		}
	}
	if j := skipSpace(body, it.end); j != len(body) {
		return arr, 0, badSyntax(&syntaxError{j, "unexpected data after the body's object"}, "request body")
	}
	return arr, count, nil
}

// delimitArray finds the end of the array at b[start] by matching brackets
// and skipping strings, without validating the rest, and counts its
// elements (commas at its top level, plus one).
func delimitArray(b []byte, start int) (end, count int, se *syntaxError) {
	depth := 0
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			e, _, se := scanString(b, i)
			if se != nil {
				return 0, 0, se
			}
			i = e - 1
		case '{', '[':
			depth++
			if depth > maxDepth {
				return 0, 0, &syntaxError{i, "nested too deeply"}
			}
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, count + 1, nil
			}
		case ',':
			if depth == 1 {
				count++
			}
		}
	}
	return 0, 0, &syntaxError{len(b), "unterminated array"}
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
