package kafka

import (
	"encoding/json"
	"unicode/utf8"
)

// keyFunc returns the record key of a stored event, nil for none. The key may alias ev.
type keyFunc func(ev []byte) []byte

// keyFor is the key function of a Config.Key value (validated).
func keyFor(mode string) keyFunc {
	switch mode {
	case KeyNone:
		return func([]byte) []byte { return nil }
	case KeyUserID:
		return func(ev []byte) []byte {
			if k := memberKey(ev, "userId"); k != nil {
				return k
			}
			return memberKey(ev, "anonymousId")
		}
	}
	return func(ev []byte) []byte { return memberKey(ev, "messageId") }
}

// memberKey returns the value of ev's top-level member name as key bytes: a string's text (a
// sub-slice of ev when it has no escapes and is valid UTF-8; otherwise decoded as
// encoding/json does, invalid bytes becoming U+FFFD, so the key is what a consumer decoding the
// value reads), a number's or boolean's literal; nil when the member is absent, null, empty, an
// object or an array, or ev is not a JSON object.
func memberKey(ev []byte, name string) []byte {
	raw := member(ev, name)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"':
		inner := raw[1 : len(raw)-1]
		slow := !utf8.Valid(inner)
		for _, c := range inner {
			if c == '\\' {
				slow = true
				break
			}
		}
		if slow {
			var s string
			if json.Unmarshal(raw, &s) != nil || s == "" {
				return nil
			}
			return []byte(s)
		}
		if len(inner) == 0 {
			return nil
		}
		return inner
	case '{', '[', 'n':
		return nil
	}
	return raw
}

// member returns the raw JSON value of the top-level member name of the object ev, or nil.
// It walks the members without decoding them: stored events are valid JSON objects whose
// top-level names are unique (intake checks both), so the first match is the member. On
// malformed input it returns nil, never panics.
func member(ev []byte, name string) []byte {
	i := skipWS(ev, 0)
	if i >= len(ev) || ev[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipWS(ev, i)
		if i >= len(ev) || ev[i] != '"' {
			return nil // "}" of an object without the member, or malformed
		}
		keyEnd, escaped := skipString(ev, i)
		if keyEnd < 0 {
			return nil
		}
		match := keyIs(ev[i:keyEnd], escaped, name)
		i = skipWS(ev, keyEnd)
		if i >= len(ev) || ev[i] != ':' {
			return nil
		}
		i = skipWS(ev, i+1)
		end := skipValue(ev, i)
		if end < 0 {
			return nil
		}
		if match {
			return ev[i:end]
		}
		i = skipWS(ev, end)
		if i >= len(ev) || ev[i] != ',' {
			return nil
		}
		i++
	}
}

// keyIs reports whether the quoted JSON string raw is name.
func keyIs(raw []byte, escaped bool, name string) bool {
	if !escaped {
		return string(raw[1:len(raw)-1]) == name
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == name
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"' and whether it holds
// an escape; -1 when it does not end.
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
