package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// AppendJSON appends v, an event as an application holds it, to dst as JSON, so that
// Normalize can check and complete it. It gives what encoding/json's Marshal gives, with
// differences that do not change the JSON's meaning: <, > and & are not escaped, and a
// json.RawMessage keeps the whitespace inside it.
//
// The shapes events have (map[string]any, []any, strings, numbers, booleans, nil,
// time.Time, json.RawMessage, json.Number and the maps and slices of strings an app builds
// its properties from) are written without reflection; map keys are sorted, as
// encoding/json sorts them, so the same event gives the same bytes. Any other value,
// struct values included, is written by encoding/json. A value nested deeper than 512
// levels (a map that contains itself, for one) is an error, as Normalize would refuse it.
//
// Encoding a map[string]any event this way costs a fraction of encoding/json's reflection
// and its sorting of reflect.Values: for an SDK that takes the app's event and serialises
// it, this is the serialisation.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*valueEncoder)
	defer encoders.Put(e)
	return e.value(dst, v, 0)
}

// encoders keeps valueEncoders, so the key slices are allocated once, not per event.
var encoders = sync.Pool{New: func() any { return new(valueEncoder) }}

// maxEncodeDepth is the deepest nesting AppendJSON writes; Normalize accepts 512 levels.
const maxEncodeDepth = 512

// errTooDeep is returned for a value nested deeper than maxEncodeDepth.
var errTooDeep = errors.New("nested deeper than 512 levels (does a map or slice contain itself?)")

// valueEncoder holds the scratch of one AppendJSON call: the member slices map sorting uses,
// one per nesting level in use, so a nested map does not overwrite its parent's keys. The
// slices are cleared after use, so a pooled encoder holds no app's values; it keeps only the
// sorted keys of the maps it wrote last (orders).
type valueEncoder struct {
	members [][]mapEntry
	orders  [maxOrders][]string // sorted key sets of recent maps, most recent at last
	next    int                 // the slot of orders the next new key set takes
}

// Events are built from a few shapes (a track event's top level, its properties, its
// context), so the maps an app hands over keep having the same keys. Iterating a map and
// sorting its keys costs more than looking its keys up in an order already known, so the
// encoder remembers the sorted key sets of the last maxOrders maps it wrote: a map of the
// same length that holds every key of one of them has exactly that key set, and is written
// in that order without a sort. A map of other keys costs a lookup or two per remembered set
// of its length before it is sorted as before. Maps of more than maxOrderKeys keys (an app's
// lookup table, say) are not remembered.
const (
	maxOrders    = 16
	maxOrderKeys = 64
)

func (e *valueEncoder) value(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxEncodeDepth {
		return b, errTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendQuoted(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case json.Number:
		if x == "" {
			return append(b, '0'), nil // as encoding/json writes an empty Number
		}
		if !json.Valid([]byte(x)) || !(x[0] == '-' || isDigit(x[0])) || !isDigit(x[len(x)-1]) {
			return b, fmt.Errorf("json.Number %q is not a number", string(x))
		}
		return append(b, x...), nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendRaw(b, x)
	case time.Time:
		return appendTime(b, x)
	case map[string]any:
		return e.object(b, x, depth)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.value(b, el, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]string:
		return e.stringObject(b, x, depth)
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, s)
		}
		return append(b, ']'), nil
	default: // structs, named types, Marshalers: encoding/json knows their rules
		raw, err := json.Marshal(v)
		if err != nil {
			return b, err
		}
		return append(b, raw...), nil
	}
}

// mapEntry is one key and value of a map being written.
type mapEntry struct {
	key string
	val any
}

func (e *valueEncoder) object(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	for len(e.members) <= depth {
		e.members = append(e.members, nil)
	}
	ms := e.sortedMembers(m, e.members[depth][:0])
	e.members[depth] = ms
	defer clear(ms)
	b = append(b, '{')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, ms[i].key)
		b = append(b, ':')
		var err error
		if b, err = e.value(b, ms[i].val, depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// sortedMembers appends m's entries to ms in key order, from a remembered order when m has
// one of the key sets of orders, else by sorting (and then remembers m's key set).
func (e *valueEncoder) sortedMembers(m map[string]any, ms []mapEntry) []mapEntry {
	n := len(m)
	for _, keys := range e.orders {
		if len(keys) != n || n == 0 {
			continue
		}
		hit := true
		for _, k := range keys {
			v, ok := m[k]
			if !ok {
				hit = false
				break
			}
			ms = append(ms, mapEntry{k, v})
		}
		if hit {
			return ms
		}
		clear(ms)
		ms = ms[:0]
	}
	for k, v := range m {
		ms = append(ms, mapEntry{k, v})
	}
	slices.SortFunc(ms, func(x, y mapEntry) int { return strings.Compare(x.key, y.key) })
	if n > 0 && n <= maxOrderKeys {
		keys := e.orders[e.next][:0]
		if cap(keys) < n {
			keys = make([]string, 0, n)
		}
		for _, me := range ms {
			keys = append(keys, me.key)
		}
		e.orders[e.next] = keys
		e.next = (e.next + 1) % maxOrders
	}
	return ms
}

func (e *valueEncoder) stringObject(b []byte, m map[string]string, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, k)
		b = append(b, ':')
		b = appendQuoted(b, m[k])
	}
	return append(b, '}'), nil
}

// appendFloat writes f as encoding/json does: the shortest decimal that reads back as f,
// in exponent form below 1e-6 and from 1e21 up.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported number %v (JSON has no NaN or infinity)", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' { // e-09 → e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendTime writes t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds), without
// its allocation.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("time %v: year outside [0,9999]", t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendRaw appends raw JSON, checked and without the whitespace around it; whitespace
// inside it is kept, as Normalize keeps what it does not need to change.
func appendRaw(b []byte, raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return b, errors.New("json.RawMessage: not valid JSON")
	}
	start, end := skipSpace(raw, 0), len(raw)
	for end > start && isSpace(raw[end-1]) {
		end--
	}
	return append(b, raw[start:end]...), nil
}

// appendQuoted writes s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD, and U+2028 and U+2029 escaped, as encoding/json
// does.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
