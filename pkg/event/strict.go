package event

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// This file holds the checks that make the scanner (scan.go) accept strict JSON only, the
// JSON every collector can decode: strings are valid UTF-8 (RFC 8259 section 8.1), a \u escape
// of a UTF-16 surrogate comes in a high-low pair (section 8.2: a lone one names no character),
// and a number is finite as a float64 (1e999 is valid grammar, but no IEEE 754 double holds
// it, and a strict collector refuses it). encoding/json's Valid accepts all three; an event
// that carries one would be accepted here, then refused by the collector and dead-lettered.
//
// The checks run only off the common path: a string's bytes are looked at only when the
// scanner's eight-byte test flags a non-ASCII byte or an escape, and a number is parsed only
// when it has an exponent or more digits than any finite double needs.

// utf8Seq checks the UTF-8 sequence that starts at the non-ASCII byte b[i] and returns its
// length; 0 when it is not valid UTF-8 (a stray continuation byte, a truncated or overlong
// sequence, an encoded surrogate).
func utf8Seq(b []byte, i int) int {
	r, n := utf8.DecodeRune(b[i:])
	if r == utf8.RuneError && n <= 1 {
		return 0
	}
	return n
}

// hexValue returns the value of the four hex digits at b[i:i+4]; the caller checked them.
func hexValue(b []byte, i int) rune {
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// scanUnicodeEscape checks the \uXXXX escape whose backslash is at b[i] (its four hex digits
// checked by the caller) and returns the offset past it, past the pair when it is a high
// surrogate followed by its low one.
func scanUnicodeEscape(b []byte, i int) (int, *syntaxError) {
	r := hexValue(b, i+2)
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return i + 6, nil
	case r >= 0xDC00:
		return 0, &syntaxError{i, `lone UTF-16 surrogate \u` + string(b[i+2:i+6]) + ` in string (a low surrogate must follow a high one)`}
	}
	j := i + 6
	if j+6 <= len(b) && b[j] == '\\' && b[j+1] == 'u' && isHex(b[j+2]) && isHex(b[j+3]) && isHex(b[j+4]) && isHex(b[j+5]) {
		if lo := hexValue(b, j+2); lo >= 0xDC00 && lo <= 0xDFFF {
			return j + 6, nil
		}
	}
	return 0, &syntaxError{i, `lone UTF-16 surrogate \u` + string(b[i+2:i+6]) + ` in string (a high surrogate must be followed by a low one)`}
}

// maxFiniteDigits is the most integer digits a number without an exponent may have and still
// be certain to be a finite double (the largest is about 1.8e308: 309 digits).
const maxFiniteDigits = 308

// checkFinite reports whether the number b[start:end] (valid grammar), which has an exponent
// or more than maxFiniteDigits digits, is a finite float64.
func checkFinite(b []byte, start, end int) *syntaxError {
	f, err := strconv.ParseFloat(string(b[start:end]), 64)
	if err != nil && math.IsInf(f, 0) {
		return &syntaxError{start, "number " + abbreviate(b[start:end]) + " is beyond the range of a 64-bit float " +
			"(about ±1.8e308), which no collector reads as a number (a string can carry it)"}
	}
	return nil
}

// abbreviate returns a number's text, shortened when long.
func abbreviate(num []byte) string {
	if len(num) <= 24 {
		return string(num)
	}
	return string(num[:20]) + "…"
}

// notJSON describes input that is not JSON at all (describe's answer for it), with where and
// why the scanner stopped.
func notJSON(se *syntaxError) string {
	return "something that is not JSON (at byte " + strconv.Itoa(se.off) + ": " + se.msg + ")"
}
