package event

import (
	"encoding/binary"
	"math"
	"math/bits"
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

// utf8Run checks the string text from the non-ASCII byte b[i] up to the next byte the
// string scanner must look at (a quote, a backslash or a control character, none of which can
// be inside a UTF-8 sequence) and returns that byte's offset, or the end of b. The run is
// checked whole by utf8.Valid, whose ASCII path takes eight bytes at a time: text in a
// non-Latin script costs one pass, not a call per character. bad is the offset of the first
// byte that is not valid UTF-8 (a stray continuation byte, a truncated or overlong sequence,
// an encoded surrogate), or -1.
func utf8Run(b []byte, i int) (end, bad int) {
	end = i
	for end+8 <= len(b) {
		if m := specialASCII(binary.LittleEndian.Uint64(b[end:])); m != 0 {
			end += bits.TrailingZeros64(m) >> 3
			goto found
		}
		end += 8
	}
	for end < len(b) && b[end] >= 0x20 && b[end] != '"' && b[end] != '\\' {
		end++
	}
found:
	if utf8.Valid(b[i:end]) {
		return end, -1
	}
	for j := i; j < end; {
		r, n := utf8.DecodeRune(b[j:end])
		if r == utf8.RuneError && n <= 1 {
			return end, j
		}
		j += n
	}
	return end, i // not reached: utf8.Valid and DecodeRune agree
}

// specialASCII is special (scan.go) without the flag of non-ASCII bytes: a quote, a
// backslash or a control character.
func specialASCII(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (ones * '"')
	bslash := w ^ (ones * '\\')
	return ((quote-ones)&^quote | (bslash-ones)&^bslash | (w-ones*0x20)&^w) & highs
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
	if surelyFinite(b[start:end]) {
		return nil
	}
	f, err := strconv.ParseFloat(string(b[start:end]), 64)
	if err != nil && math.IsInf(f, 0) {
		return &syntaxError{start, "number " + abbreviate(b[start:end]) + " is beyond the range of a 64-bit float " +
			"(about ±1.8e308), which no collector reads as a number (a string can carry it)"}
	}
	return nil
}

// surelyFinite reports, without parsing the number num (valid grammar), that it is below
// 1e308: its integer digits and its exponent together say how many digits it has before the
// point. false means "parse it to know".
func surelyFinite(num []byte) bool {
	i := 0
	if num[0] == '-' {
		i++
	}
	digits := 0 // integer digits, leading zeros not counted
	for ; i < len(num) && isDigit(num[i]); i++ {
		if digits > 0 || num[i] != '0' {
			digits++
		}
	}
	for i < len(num) && num[i] != 'e' && num[i] != 'E' {
		i++
	}
	exp, neg := 0, false
	if i < len(num) {
		i++
		if num[i] == '+' || num[i] == '-' {
			neg = num[i] == '-'
			i++
		}
		for ; i < len(num); i++ {
			if exp > 1000 {
				return neg // a huge negative exponent only underflows towards 0
			}
			exp = exp*10 + int(num[i]-'0')
		}
	}
	if neg {
		exp = -exp
	}
	return digits+exp <= maxFiniteDigits
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
