package event

import (
	"bytes"
	"encoding/json"
	"time"
)

// typeList names the event types, for error messages.
const typeList = "track, identify, page, screen, group, alias"

// knownType reports whether t is one of Segment's event types.
func knownType(t string) bool {
	switch t {
	case "track", "identify", "page", "screen", "group", "alias":
		return true
	}
	return false
}

// value kinds, from a value's first byte.
func isString(b []byte, s span) bool { return b[s.start] == '"' }
func isNull(b []byte, s span) bool   { return b[s.start] == 'n' }
func isNumber(b []byte, s span) bool { return b[s.start] == '-' || isDigit(b[s.start]) }

// isEmptyString reports whether the value is "".
func isEmptyString(b []byte, s span) bool { return s.end-s.start == 2 && b[s.start] == '"' }

// content returns a string value's decoded content. It allocates only when
// the string holds escapes.
func content(b []byte, s span) []byte {
	raw := b[s.start+1 : s.end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	var str string
	if json.Unmarshal(b[s.start:s.end], &str) != nil {
		return raw // unreachable: the scanner validated the string
	}
	return []byte(str)
}

// given reports whether an identifier field is set: present, not null and
// not "". wrong is non-empty when the field has a kind it may not have.
func given(b []byte, s span, numberOK bool) (ok bool, wrong string) {
	switch {
	case !s.present() || isNull(b, s) || isEmptyString(b, s):
		return false, ""
	case isString(b, s):
		return true, ""
	case numberOK && isNumber(b, s):
		return true, ""
	case numberOK:
		return false, "must be a string or a number, got " + describe(b[s.start:])
	}
	return false, "must be a string, got " + describe(b[s.start:])
}

// check applies the event rules (doc.go) to a parsed event.
func (in *intake) check(b []byte, p *parsed, id *ids) *Error {
	typ := in.typ
	if typ == "" {
		switch {
		case !p.typ.present() || isNull(b, p.typ):
			return badField("type", "is required: one of "+typeList)
		case !isString(b, p.typ):
			return badField("type", "must be a string, one of "+typeList+", got "+describe(b[p.typ.start:]))
		}
		t := content(b, p.typ)
		if !knownType(string(t)) {
			return badField("type", quoteShort(t)+" is not a known type: use one of "+typeList)
		}
		typ = string(t)
	}

	user, wrong := given(b, id.userID, true)
	if wrong != "" {
		return badField("userId", wrong)
	}
	anon, wrong := given(b, id.anonID, false)
	if wrong != "" {
		return badField("anonymousId", wrong)
	}
	switch typ {
	case "alias":
		prev, wrong := given(b, id.prevID, true)
		if wrong != "" {
			return badField("previousId", wrong)
		}
		if !prev {
			return badField("previousId", "is required for alias: the old id (a non-empty string or number)")
		}
		if !user {
			return badField("userId", "is required for alias: the new id (a non-empty string or number)")
		}
	default:
		if !user && !anon {
			return badField("userId", "userId or anonymousId is required: set one to a non-empty string")
		}
	}
	switch typ {
	case "track":
		if id.event.present() && !isString(b, id.event) && !isNull(b, id.event) {
			return badField("event", "must be a string naming the action, got "+describe(b[id.event.start:]))
		}
		if ok, _ := given(b, id.event, false); !ok {
			return badField("event", "is required for track: a non-empty string naming the action")
		}
	case "group":
		group, wrong := given(b, id.groupID, true)
		if wrong != "" {
			return badField("groupId", wrong)
		}
		if !group {
			return badField("groupId", "is required for group: a non-empty string or number")
		}
	}

	if p.msgID.present() && !isString(b, p.msgID) && !isNull(b, p.msgID) {
		return badField("messageId", "must be a string (or leave it out and one is generated), got "+
			describe(b[p.msgID.start:]))
	}
	if p.ts.present() && !isNull(b, p.ts) && !isEmptyString(b, p.ts) {
		if !isString(b, p.ts) {
			return badField("timestamp", "must be an RFC 3339 string such as 2024-05-01T12:00:00.000Z, got "+
				describe(b[p.ts.start:]))
		}
		if t := content(b, p.ts); !validTime(t) {
			return badField("timestamp", quoteShort(t)+" is not an RFC 3339 time such as "+
				"2024-05-01T12:00:00.000Z (or leave it out and the intake time is used)")
		}
	}
	if p.ctx.present() && !isNull(b, p.ctx) && b[p.ctx.start] != '{' {
		return badField("context", "must be an object, got "+describe(b[p.ctx.start:]))
	}
	if p.integ.present() && !isNull(b, p.integ) && b[p.integ.start] != '{' {
		return badField("integrations", "must be an object, got "+describe(b[p.integ.start:]))
	}
	return nil
}

// validTime reports whether t is an RFC 3339 date-time, as time.Parse with
// time.RFC3339 reads it (fractional seconds allowed).
func validTime(t []byte) bool {
	if len(t) < len("2006-01-02T15:04:05Z") || len(t) > 64 {
		return false
	}
	_, err := time.Parse(time.RFC3339, string(t))
	return err == nil
}

// quoteShort quotes s for an error message, cut to a readable length.
func quoteShort(s []byte) string {
	const max = 40
	if len(s) > max {
		return string(appendString(nil, string(s[:max]))) + "…"
	}
	return string(appendString(nil, string(s)))
}
