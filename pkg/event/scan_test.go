package event_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

// TestNormalize_AcceptsExactlyStrictJSON embeds values in an unknown field and checks that
// acceptance matches strictValid: encoding/json's Valid, made strict (UTF-8, surrogate pairs,
// finite numbers).
func TestNormalize_AcceptsExactlyStrictJSON(t *testing.T) {
	values := []string{
		`0`, `-0`, `1.5`, `-1.5e10`, `1E+2`, `1e-2`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `0x10`, `1.5e+`,
		`true`, `false`, `null`, `tru`, `nul`, `True`, `NaN`, `Infinity`,
		`""`, `"a\"b"`, `"\u00e9"`, `"\uD83D\uDE00"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\t\"", "\"\x7f\"", "\"\xff\xfe\"", `"\ud800"`, `"\udc00\ud800"`, `1e999`, `-1e400`,
		`"unterminated`, `"\"`, `"\\"`, `"\/"`,
		`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[1,[2,[3]]]`, `[`, `]`,
		`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":{"b":{"c":[]}}}`, `{"a":1}}`,
		`'single'`, ``,
	}
	for _, v := range values {
		raw := `{"type":"page","userId":"u","x":` + v + `}`
		want := strictValid([]byte(raw))
		_, err := event.Normalize([]byte(raw), "", opts())
		if got := err == nil; got != want {
			t.Errorf("value %q: accepted = %v, strictValid = %v (%v)", v, got, want, err)
		}
	}
}

// TestNormalize_FindsEachStringsEndWhereverTheSpecialByteFalls moves a quote, an escape and a
// control character through every offset of strings up to three words long, so that the
// scanner's word-at-a-time search meets each at every position of a word and at the end of
// the input.
func TestNormalize_FindsEachStringsEndWhereverTheSpecialByteFalls(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for _, tail := range []string{"", strings.Repeat("x", 9)} {
			for pos := 0; pos <= n; pos++ {
				pre, post := strings.Repeat("a", pos), strings.Repeat("b", n-pos)
				for _, tc := range []struct {
					name, value string
				}{
					{"plain", `"` + pre + post + `"`},
					{"escaped quote", `"` + pre + `\"` + post + `"`},
					{"escaped backslash", `"` + pre + `\\` + post + `"`},
					{"unicode escape", `"` + pre + `\u00e9` + post + `"`},
					{"control character", "\"" + pre + "\x01" + post + "\""},
					{"byte 0x7f and above", "\"" + pre + "\x7f\xc3\xa9" + post + "\""},
					{"unterminated", `"` + pre + post},
				} {
					raw := `{"type":"page","userId":"u","x":` + tc.value + tail
					if tc.name != "unterminated" {
						raw += `}`
					}
					want := json.Valid([]byte(raw))
					out, err := event.Normalize([]byte(raw), "", opts())
					if got := err == nil; got != want {
						t.Fatalf("%s, length %d, at %d, tail %q: accepted = %v, json.Valid = %v (%v)", tc.name, n, pos, tail, got, want, err)
					}
					if err == nil && !strings.Contains(string(out), `"x":`+tc.value) {
						t.Fatalf("%s, length %d, at %d: value not kept as sent: %s", tc.name, n, pos, out)
					}
				}
			}
		}
	}
}
