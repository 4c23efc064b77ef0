package event

import (
	"encoding/binary"
	"math/bits"
)

// This file is the JSON scanner: a strict, allocation-free validator that
// walks RFC 8259 JSON and reports where values start and end, so that the
// normaliser can splice bytes instead of decoding and re-encoding them.
//
// The grammar accepted is the one encoding/json's Valid accepts, made strict
// (strict.go): strings hold valid UTF-8 and no lone surrogate escape, numbers
// are finite as float64, and nesting deeper than maxDepth is refused.

// maxDepth bounds the nesting of arrays and objects in one value.
const maxDepth = 512

// syntaxError describes malformed JSON at a byte offset of the scanned input.
type syntaxError struct {
	off int
	msg string
}

// isSpace reports whether c is JSON insignificant whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the offset of the first non-whitespace byte at or after i.
// Compact JSON has no whitespace, so the first test usually answers: every
// byte above ' ' is not whitespace.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return skipSpaceSlow(b, i)
}

// skipSpaceSlow is skipSpace past its fast path, kept apart so that skipSpace
// inlines.
func skipSpaceSlow(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// strSafe marks the bytes that need no attention inside a string: ASCII other
// than a control character, a quote or a backslash (a non-ASCII byte starts a
// UTF-8 sequence to check).
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans the string whose opening quote is at b[i]. It returns the
// offset just past the closing quote and whether the string holds an escape.
func scanString(b []byte, i int) (end int, escaped bool, err *syntaxError) {
	i++ // opening quote
	for {
		// Eight bytes at a time: the lowest flagged byte of a word is the
		// first one that needs attention, so it is reached without a byte
		// loop. Only the last seven bytes of the input go byte by byte.
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			i += 8
		}
		for i < len(b) && strSafe[b[i]] {
			i++
		}
	found:
		if i >= len(b) {
			return 0, false, &syntaxError{i, "unterminated string"}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c >= 0x80:
			end, bad := utf8Run(b, i)
			if bad >= 0 {
				return 0, false, &syntaxError{bad, "invalid UTF-8 in string (send text as UTF-8)"}
			}
			i = end
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, &syntaxError{i, "unterminated string"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, &syntaxError{i, `invalid \u escape in string`}
				}
				var err *syntaxError
				if i, err = scanUnicodeEscape(b, i); err != nil {
					return 0, false, err
				}
			default:
				return 0, false, &syntaxError{i, "invalid escape in string"}
			}
		default:
			return 0, false, &syntaxError{i, "control character in string (escape it)"}
		}
	}
}

// special flags the bytes of the word w (eight string bytes, little endian)
// that are a quote, a backslash, a control character (by the zero-byte trick)
// or not ASCII (their own high bit): the result is 0 when there is none. A
// borrow may also flag a byte above a flagged one, never below it, so the
// lowest flag is exact.
func special(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (ones * '"')
	bslash := w ^ (ones * '\\')
	return ((quote-ones)&^quote | (bslash-ones)&^bslash | (w-ones*0x20)&^w | w) & highs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber scans the number starting at b[i] and returns the offset past it.
func scanNumber(b []byte, i int) (int, *syntaxError) {
	start := i
	long := false // more integer digits than a finite double is sure to hold
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i-start > maxFiniteDigits {
			long = true
		}
	default:
		return 0, &syntaxError{start, "invalid number"}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, &syntaxError{start, "invalid number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, &syntaxError{start, "invalid number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		long = true
	}
	if long {
		if err := checkFinite(b, start, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// scanLiteral checks that lit is at b[i] and returns the offset past it.
func scanLiteral(b []byte, i int, lit string) (int, *syntaxError) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, &syntaxError{i, "invalid literal (expected " + lit + ")"}
	}
	return i + len(lit), nil
}

// scanValue validates the value starting at b[i] (no leading whitespace) and
// returns the offset just past it.
func scanValue(b []byte, i, depth int) (int, *syntaxError) {
	if i >= len(b) {
		return 0, &syntaxError{i, "unexpected end of input, expected a value"}
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		return scanObject(b, i, depth+1)
	case c == '[':
		return scanArray(b, i, depth+1)
	case c == '-' || isDigit(c):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	default:
		return 0, &syntaxError{i, "unexpected character, expected a value"}
	}
}

// scanObject validates the object whose '{' is at b[i].
func scanObject(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return 0, &syntaxError{i, "nested too deeply"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, &syntaxError{i, "expected a string key"}
		}
		end, _, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, &syntaxError{i, "expected ':' after key"}
		}
		i = skipSpace(b, i+1)
		if i, err = scanValue(b, i, depth); err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, &syntaxError{i, "unterminated object"}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, &syntaxError{i, "expected ',' or '}' in object"}
		}
	}
}

// scanArray validates the array whose '[' is at b[i].
func scanArray(b []byte, i, depth int) (int, *syntaxError) {
	if depth > maxDepth {
		return 0, &syntaxError{i, "nested too deeply"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err *syntaxError
		if i, err = scanValue(b, i, depth); err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, &syntaxError{i, "unterminated array"}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, &syntaxError{i, "expected ',' or ']' in array"}
		}
	}
}
