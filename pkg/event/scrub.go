package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is scrubbing at ingest: rules that remove, mask or hash fields of an event before
// it is stored, so that the data never reaches the disk. The rules are applied in the one pass
// over the event that validates it (normalize.go walks the objects a rule reaches, recording
// where each scrubbed value or member lies) and in the one copy that emits it (emit.go splices
// the edits): an event is not decoded a second time.

// ScrubAction is what a rule does to the value of its field.
type ScrubAction uint8

// The scrub actions. A null value is left as it is by mask and hash (there is nothing to
// hide); remove takes the member away whatever its value.
const (
	// ScrubRemove deletes the member (key and value) from its object.
	ScrubRemove ScrubAction = iota + 1
	// ScrubMask replaces the value with a string of '*', one per character of a string's
	// content, or per byte of any other value's JSON text: the shape stays, the content goes.
	ScrubMask
	// ScrubHash replaces the value with the lower-case hex HMAC-SHA256 of a string's content
	// (of any other value's JSON text) under the hash key: equal values give equal hashes, so
	// joins on the field still work, and without the key the value cannot be guessed by
	// hashing candidates.
	ScrubHash
)

// String returns the action's name as configured: remove, mask or hash.
func (a ScrubAction) String() string {
	switch a {
	case ScrubRemove:
		return "remove"
	case ScrubMask:
		return "mask"
	case ScrubHash:
		return "hash"
	}
	return fmt.Sprintf("ScrubAction(%d)", uint8(a))
}

// ScrubRule scrubs one field. Path names the field from the event's top level, its keys
// joined by dots: "context.ip", "traits.email", "properties.card", "context.traits.email", or
// a top-level key alone ("ip"). Keys are matched exactly (case included) against the decoded
// keys of the event; a path goes through objects only (not arrays), and a key that holds a dot
// cannot be named. A key sent more than once in a nested object is scrubbed every time.
type ScrubRule struct {
	Path   string
	Action ScrubAction
}

// String returns the rule as configured: path=action.
func (r ScrubRule) String() string { return r.Path + "=" + r.Action.String() }

// maxScrubPathKeys bounds the keys of one path.
const maxScrubPathKeys = 32

// ErrBadScrubRule is matched (errors.Is) by every error of ParseScrubRule and NewScrub.
var ErrBadScrubRule = errors.New("bad scrub rule")

// ownedFields are the fields outbox itself reads or writes on intake: validation, routing,
// normalisation and forgetting a user depend on them, so no rule may change them.
var ownedFields = map[string]string{
	"type":            "it is the event's type",
	"userId":          "outbox reads it to validate, forget and suppress a user",
	"anonymousId":     "outbox reads it to validate, forget and suppress a user",
	"previousId":      "alias events need it",
	"event":           "track events need it",
	"groupId":         "group events need it",
	"messageId":       "collectors deduplicate on it",
	"timestamp":       "outbox validates and fills it",
	"context":         "outbox fills context.library in it; scrub the fields inside it (context.ip)",
	"integrations":    "outbox merges batch-level integrations into it; scrub the fields inside it",
	"context.library": "outbox fills it",
}

// ParseScrubRule reads a rule written path=action ("context.ip=mask"; spaces around either
// part are ignored). The error says what is wrong and matches ErrBadScrubRule.
func ParseScrubRule(s string) (ScrubRule, error) {
	path, action, ok := strings.Cut(s, "=")
	if !ok {
		return ScrubRule{}, fmt.Errorf("%w %q: write path=action, such as context.ip=mask", ErrBadScrubRule, s)
	}
	path, action = strings.TrimSpace(path), strings.TrimSpace(action)
	r := ScrubRule{Path: path}
	switch action {
	case "remove":
		r.Action = ScrubRemove
	case "mask":
		r.Action = ScrubMask
	case "hash":
		r.Action = ScrubHash
	default:
		return ScrubRule{}, fmt.Errorf("%w %q: unknown action %q: use remove, mask or hash", ErrBadScrubRule, s, action)
	}
	if _, err := splitPath(path); err != nil {
		return ScrubRule{}, fmt.Errorf("%w %q: %w", ErrBadScrubRule, s, err)
	}
	return r, nil
}

// splitPath checks a rule's path and returns its keys.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("the path is empty: name a field, such as context.ip")
	}
	keys := strings.Split(path, ".")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("path %q has an empty key (a leading, trailing or doubled dot): join keys with single dots, such as context.ip", path)
		}
	}
	if len(keys) > maxScrubPathKeys {
		return nil, fmt.Errorf("path %q has %d keys, more than %d", path, len(keys), maxScrubPathKeys)
	}
	if why, ok := ownedFields[path]; ok {
		return nil, fmt.Errorf("path %q cannot be scrubbed: %s", path, why)
	}
	return keys, nil
}

// Scrub is a compiled set of scrub rules with the key of its hash rules, safe for concurrent
// use: set it as Options.Scrub and every event Normalize and ParseBatch take is scrubbed
// before it is returned. A nil *Scrub scrubs nothing. One Scrub is one rule set: callers that
// keep several (one per source of events) pick the one an event's source uses and pass it in
// that call's Options.
type Scrub struct {
	root  scrubNode
	rules []ScrubRule
	key   []byte
	macs  sync.Pool // *macState (HMAC-SHA256 under key), reused between values
}

// macState is a pooled HMAC with the buffer its sum is written to, so that hashing a value
// allocates nothing.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// scrubNode is one key of the rules' paths: a leaf carries its action, an inner node the keys
// below it.
type scrubNode struct {
	action ScrubAction // non-zero on a leaf
	keys   []string    // inner node: the next keys, parallel to kids
	kids   []*scrubNode
}

// child returns the node of key k below n, nil when no rule goes through it.
func (n *scrubNode) child(k []byte) *scrubNode {
	for i, key := range n.keys {
		if key == string(k) {
			return n.kids[i]
		}
	}
	return nil
}

// NewScrub compiles rules. hashKey keys the hash rules; it is required (at least 16 bytes)
// when a rule hashes, and copied. A path given twice, or a path inside another rule's path
// ("context.traits" and "context.traits.email"), is an error: which rule would win? Errors
// match ErrBadScrubRule. No rules give a nil *Scrub.
func NewScrub(rules []ScrubRule, hashKey []byte) (*Scrub, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	s := &Scrub{rules: append([]ScrubRule(nil), rules...)}
	for _, r := range rules {
		keys, err := splitPath(r.Path)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrBadScrubRule, r, err)
		}
		switch r.Action {
		case ScrubRemove, ScrubMask:
		case ScrubHash:
			if len(hashKey) < 16 {
				return nil, fmt.Errorf("%w %s: a hash rule needs a hash key of at least 16 bytes (privacy.hash_key_file)", ErrBadScrubRule, r)
			}
		default:
			return nil, fmt.Errorf("%w %s: unknown action: use remove, mask or hash", ErrBadScrubRule, r)
		}
		n := &s.root
		for i, k := range keys {
			if n.action != 0 {
				return nil, fmt.Errorf("%w %s: %q is inside %q, which another rule scrubs whole", ErrBadScrubRule, r, r.Path, strings.Join(keys[:i], "."))
			}
			next := n.child([]byte(k))
			if next == nil {
				next = &scrubNode{}
				n.keys, n.kids = append(n.keys, k), append(n.kids, next)
			}
			n = next
		}
		switch {
		case n.action != 0:
			return nil, fmt.Errorf("%w %s: path %q has two rules: keep one", ErrBadScrubRule, r, r.Path)
		case len(n.keys) > 0:
			return nil, fmt.Errorf("%w %s: other rules scrub fields inside %q: keep either", ErrBadScrubRule, r, r.Path)
		}
		n.action = r.Action
	}
	if hashKey != nil {
		s.key = append([]byte(nil), hashKey...)
		key := s.key
		s.macs.New = func() any { return &macState{h: hmac.New(sha256.New, key)} }
	}
	return s, nil
}

// Rules returns the rules s was compiled from, in their order.
func (s *Scrub) Rules() []ScrubRule {
	if s == nil {
		return nil
	}
	return append([]ScrubRule(nil), s.rules...)
}

// appendScrubbed appends the value v (a JSON value, as sent) scrubbed by action a: a masked
// string or a hash, as a JSON string. null is kept.
func (s *Scrub) appendScrubbed(out, v []byte, a ScrubAction) []byte {
	if len(v) == 0 || v[0] == 'n' {
		return append(out, v...)
	}
	text := v
	if v[0] == '"' {
		text = content(v, span{0, len(v)})
	}
	out = append(out, '"')
	switch a {
	case ScrubMask:
		n := len(text)
		if v[0] == '"' {
			n = utf8.RuneCount(text)
		}
		for range n {
			out = append(out, '*')
		}
	case ScrubHash:
		mac := s.macs.Get().(*macState)
		mac.h.Reset()
		mac.h.Write(text)
		out = hex.AppendEncode(out, mac.h.Sum(mac.sum[:0]))
		s.macs.Put(mac)
	}
	return append(out, '"')
}

// scrubbedLen bounds the bytes a scrubbed value takes, for buffer sizing.
const scrubbedLen = 2 + 2*sha256.Size

// removal tracks, while the members of one object are walked, what removing a member must
// take away with it: the comma before it when a member before it is kept, else the comma
// after it (the member is then the first one left).
type removal struct {
	prevEnd int  // where the previous member's value ended
	kept    bool // a member before the current one is kept
	removed bool // the current member is removed
}

// next moves past the current member, whose value ended at end.
func (rm *removal) next(end int) {
	if !rm.removed {
		rm.kept = true
	}
	rm.removed, rm.prevEnd = false, end
}

// scrubMember records the edit of action a on the member m, whose value ends at end; it has
// been consumed from it (so it.i is the next key, when there is one). It reports whether the
// member is removed.
func (in *intake) scrubMember(b []byte, m *member, end int, it *objIter, rm *removal, a ScrubAction) bool {
	if in.scrubs == nil {
		in.scrubs = make([]edit, 0, 8) // one allocation for the edits of a call, not one per growth
	}
	switch {
	case a == ScrubMask || a == ScrubHash:
		if b[m.valStart] != 'n' {
			kind := editMask
			if a == ScrubHash {
				kind = editHash
			}
			in.scrubs = append(in.scrubs, edit{m.valStart, end, kind, modeReplace})
		}
		return false
	case rm.kept:
		in.scrubs = append(in.scrubs, edit{rm.prevEnd, end, editMask, modeDelete})
	case !it.done:
		in.scrubs = append(in.scrubs, edit{m.keyStart, it.i, editMask, modeDelete})
	default:
		in.scrubs = append(in.scrubs, edit{m.keyStart, end, editMask, modeDelete})
	}
	rm.removed = true
	return true
}

// scrubValue appends the value b[e.pos:e.end] as a mask or hash edit writes it.
func (in *intake) scrubValue(out []byte, b []byte, e edit) []byte {
	a := ScrubMask
	if e.kind == editHash {
		a = ScrubHash
	}
	return in.scrub.appendScrubbed(out, b[e.pos:e.end], a)
}

// scrubObject returns a copy of the object body[v:end] with the edits of the rules below node:
// a batch-level context or integrations member, scrubbed once per batch.
func (in *intake) scrubObject(body []byte, v, end int, node *scrubNode) ([]byte, *syntaxError) {
	from := len(in.scrubs)
	if _, _, _, se := in.walkNested(body, v, 3, nil, false, node); se != nil {
		return nil, se
	}
	edits := in.scrubs[from:]
	in.scrubs = in.scrubs[:from]
	out := make([]byte, 0, end-v+len(edits)*scrubbedLen)
	last := v
	for _, e := range edits {
		out = append(out, body[last:e.pos]...)
		last = e.end
		if e.mode == modeReplace {
			out = in.scrubValue(out, body, e)
		}
	}
	return append(out, body[last:end]...), nil
}
