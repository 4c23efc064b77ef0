package event

import "encoding/json"

// WriteKey returns the top-level "writeKey" string of a batch body (where Segment's API also
// takes the write key, and analytics-node 2.x sends it only there). It walks the body's top
// level with the batch parser's scanner and skips every other value without parsing events,
// so it costs a fraction of ParseBatch. ok is false when the body is not one well-formed JSON
// object, has no writeKey, or its writeKey is not a string: a key read from a broken body
// authenticates nothing.
func WriteKey(body []byte) (key string, ok bool) {
	start := skipSpace(body, 0)
	if start >= len(body) || body[start] != '{' {
		return "", false
	}
	it := newObjIter(body, start)
	for {
		m, more, se := it.key()
		if se != nil {
			return "", false
		}
		if !more {
			if !ok || skipSpace(body, it.end) != len(body) {
				return "", false
			}
			return key, true
		}
		end, se := scanValue(body, m.valStart, 1)
		if se != nil {
			return "", false
		}
		if !ok && string(m.key(body)) == "writeKey" {
			if body[m.valStart] != '"' || json.Unmarshal(body[m.valStart:end], &key) != nil {
				return "", false
			}
			ok = true
		}
		if se = it.value(end); se != nil {
			return "", false
		}
	}
}
