package sink

import (
	"bytes"
	"fmt"
)

// This file splits a Segment batch body into its events without unmarshalling them: one pass
// over the bytes finds the top-level "batch" array, the end of each element and each element's
// top-level "messageId" string. Escaped keys are not unescaped (no SDK escapes these names).

// decoded is the result of scanning one batch body.
type decoded struct {
	events [][]byte // sub-slices of the body
	ids    [][]byte // messageId of each event (raw string content), nil when absent
	sentAt string
}

// scanBatch scans body, a JSON object with a "batch" array of objects.
func scanBatch(b []byte) (decoded, error) {
	var d decoded
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return d, fmt.Errorf("%w: body is not a JSON object", ErrBadBody)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return d, fmt.Errorf("%w: no \"batch\" array", ErrBadBody)
	}
	sawBatch := false
	for {
		i = skipWS(b, i)
		key, j, err := scanString(b, i)
		if err != nil {
			return d, err
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return d, fmt.Errorf("%w: expected ':' at offset %d", ErrBadBody, i)
		}
		i = skipWS(b, i+1)
		switch string(key) {
		case "batch":
			sawBatch = true
			if i, err = scanEvents(b, i, &d); err != nil {
				return d, err
			}
		case "sentAt":
			if i < len(b) && b[i] == '"' {
				var v []byte
				if v, i, err = scanString(b, i); err != nil {
					return d, err
				}
				d.sentAt = string(v)
				break
			}
			fallthrough
		default:
			if i, err = skipValue(b, i); err != nil {
				return d, err
			}
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			break
		}
		return d, fmt.Errorf("%w: expected ',' or '}' at offset %d", ErrBadBody, i)
	}
	if !sawBatch {
		return d, fmt.Errorf("%w: no \"batch\" array", ErrBadBody)
	}
	return d, nil
}

// scanEvents scans the batch array starting at b[i] == '[' and returns the offset after it.
func scanEvents(b []byte, i int, d *decoded) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return i, fmt.Errorf("%w: \"batch\" is not an array", ErrBadBody)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		i = skipWS(b, i)
		start := i
		end, id, err := scanEvent(b, i)
		if err != nil {
			return i, fmt.Errorf("batch[%d]: %w", len(d.events), err)
		}
		d.events = append(d.events, b[start:end])
		d.ids = append(d.ids, id)
		i = skipWS(b, end)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, fmt.Errorf("%w: expected ',' or ']' at offset %d", ErrBadBody, i)
	}
}

// scanEvent scans one event object at b[i] and returns its end and top-level messageId.
func scanEvent(b []byte, i int) (end int, id []byte, err error) {
	if i >= len(b) || b[i] != '{' {
		return i, nil, fmt.Errorf("%w: event is not a JSON object", ErrBadBody)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil, nil
	}
	for {
		i = skipWS(b, i)
		var key []byte
		if key, i, err = scanString(b, i); err != nil {
			return i, nil, err
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, nil, fmt.Errorf("%w: expected ':' at offset %d", ErrBadBody, i)
		}
		i = skipWS(b, i+1)
		if string(key) == "messageId" && i < len(b) && b[i] == '"' {
			if id, i, err = scanString(b, i); err != nil {
				return i, nil, err
			}
		} else if i, err = skipValue(b, i); err != nil {
			return i, nil, err
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, id, nil
		}
		return i, nil, fmt.Errorf("%w: expected ',' or '}' at offset %d", ErrBadBody, i)
	}
}

// scanString scans a string at b[i] == '"' and returns its raw content and the offset after it.
func scanString(b []byte, i int) ([]byte, int, error) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, fmt.Errorf("%w: expected a string at offset %d", ErrBadBody, i)
	}
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		bs := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return b[i+1 : j], j + 1, nil
		}
		j++
	}
	return nil, i, fmt.Errorf("%w: unterminated string at offset %d", ErrBadBody, i)
}

// skipValue skips any JSON value at b[i] and returns the offset after it.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, fmt.Errorf("%w: unexpected end of body", ErrBadBody)
	}
	switch b[i] {
	case '"':
		_, j, err := scanString(b, i)
		return j, err
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, k, err := scanString(b, j)
				if err != nil {
					return j, err
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return i, fmt.Errorf("%w: unterminated value at offset %d", ErrBadBody, i)
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				break
			}
			j++
		}
		if j == i {
			return i, fmt.Errorf("%w: unexpected %q at offset %d", ErrBadBody, b[i], i)
		}
		return j, nil
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
