package event

import (
	"crypto/rand"
	"strconv"

	"github.com/segmentio/ksuid"
)

// editKind says what an edit writes.
type editKind uint8

const (
	editType editKind = iota
	editMsgID
	editTS
	editCtx
	editInteg
	editMask // a scrub rule's mask (scrub.go)
	editHash // a scrub rule's hash (scrub.go)
)

// editMode says how an edit is placed.
type editMode uint8

const (
	modeAppend  editMode = iota // add a member before the event's closing '}'
	modeReplace                 // replace the value span [pos, end)
	modeInsert                  // insert members just after an object's '{'
	modeDelete                  // delete [pos, end): a member a scrub rule removes
)

// edit is one splice into the event.
type edit struct {
	pos, end int
	kind     editKind
	mode     editMode
}

// emit appends the normalised event to dst: the bytes of b[:p.end] with the
// edits that fill in what is missing. It fails only when the result is over
// the size limit.
func (in *intake) emit(dst []byte, b []byte, p *parsed) ([]byte, *Error) {
	var buf [5]edit
	return in.apply(dst, b, p, in.plan(b, p, &buf))
}

// plan returns, in buf and sorted by position, the edits that normalise
// b[:p.end]; none when the event is already normal, as an SDK's event is.
func (in *intake) plan(b []byte, p *parsed, buf *[5]edit) []edit {
	edits := buf[:0]
	closing := p.end - 1
	if in.typ != "" && (!p.typ.present() || string(b[p.typ.start:p.typ.end]) != `"`+in.typ+`"`) {
		edits = addEdit(edits, p.typ, closing, editType, true)
	}
	edits = addEdit(edits, p.msgID, closing, editMsgID, p.msgID.present() && (isNull(b, p.msgID) || isEmptyString(b, p.msgID)))
	edits = addEdit(edits, p.ts, closing, editTS, p.ts.present() && (isNull(b, p.ts) || isEmptyString(b, p.ts)))
	if in.needCtx(p) {
		if p.ctx.present() && !isNull(b, p.ctx) {
			edits = append(edits, edit{p.ctx.start + 1, p.ctx.start + 1, editCtx, modeInsert})
		} else {
			edits = addEdit(edits, p.ctx, closing, editCtx, true)
		}
	}
	if in.integ != nil && in.integ.missing() > 0 {
		if p.integ.present() && !isNull(b, p.integ) {
			edits = append(edits, edit{p.integ.start + 1, p.integ.start + 1, editInteg, modeInsert})
		} else {
			edits = addEdit(edits, p.integ, closing, editInteg, true)
		}
	}
	// The scrub rules' edits go after normalisation's: an insertion at an object's '{'
	// stays before the removal of a first member that starts there.
	edits = append(edits, in.scrubs[p.scrubFrom:p.scrubTo]...)
	// Insertion sort by position; appends share one position and keep
	// their order.
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].pos < edits[j-1].pos; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
	return edits
}

// apply appends b[:p.end] with edits spliced in to dst. It fails only when
// the result is over the size limit.
func (in *intake) apply(dst []byte, b []byte, p *parsed, edits []edit) ([]byte, *Error) {
	out := dst
	last := 0
	comma := p.members > 0
	for _, e := range edits {
		out = append(out, b[last:e.pos]...)
		last = e.end
		switch e.mode {
		case modeAppend:
			if comma {
				out = append(out, ',')
			}
			comma = true
			out = append(out, memberName[e.kind]...)
			out = in.appendValue(out, p, e.kind)
		case modeReplace:
			if e.kind >= editMask {
				out = in.scrubValue(out, b, e)
			} else {
				out = in.appendValue(out, p, e.kind)
			}
		case modeDelete:
		case modeInsert:
			out = in.appendMembers(out, p, e.kind)
			if (e.kind == editCtx && p.ctxMembers > 0) || (e.kind == editInteg && p.integMembers > 0) {
				out = append(out, ',')
			}
		}
	}
	out = append(out, b[last:p.end]...)
	if n := len(out) - len(dst); n > in.max {
		return nil, in.tooLarge(n)
	}
	return out, nil
}

// tooLarge is the error for an event of n bytes after normalisation.
func (in *intake) tooLarge(n int) *Error {
	return &Error{Field: "", tooLarge: true, Reason: "is " + strconv.Itoa(n) +
		" bytes after normalisation, over the limit of " + strconv.Itoa(in.max) +
		" bytes (limits.max_event_bytes): send less data in this event"}
}

// addEdit adds the edit for a field: an append when it is absent, a
// replacement of its value when replace is set.
func addEdit(edits []edit, s span, closing int, kind editKind, replace bool) []edit {
	switch {
	case !s.present():
		return append(edits, edit{closing, closing, kind, modeAppend})
	case replace:
		return append(edits, edit{s.start, s.end, kind, modeReplace})
	}
	return edits
}

// memberName is the key written before an appended value, by edit kind.
var memberName = [...]string{
	editType:  `"type":`,
	editMsgID: `"messageId":`,
	editTS:    `"timestamp":`,
	editCtx:   `"context":`,
	editInteg: `"integrations":`,
}

// needCtx reports whether the event's context lacks anything: library, or a
// key of the batch-level context.
func (in *intake) needCtx(p *parsed) bool {
	return in.needLibrary(p) || (in.ctx != nil && in.ctx.missing() > 0)
}

// needLibrary reports whether context.library must be set from Options:
// neither the event's context nor the batch-level one has it.
func (in *intake) needLibrary(p *parsed) bool {
	return !p.ctxLibrary && (in.ctx == nil || in.ctx.library < 0)
}

// appendValue appends the value an edit of kind writes.
func (in *intake) appendValue(out []byte, p *parsed, kind editKind) []byte {
	switch kind {
	case editType:
		out = append(out, '"')
		out = append(out, in.typ...)
		return append(out, '"')
	case editMsgID:
		var payload [16]byte
		_, _ = rand.Read(payload[:]) // never fails (crypto/rand, Go ≥ 1.24)
		id, _ := ksuid.FromParts(in.intakeTime(), payload[:])
		out = append(out, '"')
		out = id.Append(out)
		return append(out, '"')
	case editTS:
		out = append(out, '"')
		out = append(out, in.timestamp()...)
		return append(out, '"')
	}
	out = append(out, '{')
	out = in.appendMembers(out, p, kind)
	return append(out, '}')
}

// appendMembers appends, comma-separated, the members a context or
// integrations edit adds: the batch-level members the event lacks and, for
// context, the library.
func (in *intake) appendMembers(out []byte, p *parsed, kind editKind) []byte {
	mo := in.integ
	if kind == editCtx {
		mo = in.ctx
	}
	first := true
	if mo != nil {
		for j := range mo.members {
			if mo.present[j] {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, mo.member(j)...)
		}
	}
	if kind == editCtx && in.needLibrary(p) {
		if !first {
			out = append(out, ',')
		}
		out = append(out, `"library":`...)
		out = append(out, in.lib()...)
	}
	return out
}
