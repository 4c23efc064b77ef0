package event_test

import (
	"encoding/json"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

// TestNormalize_AcceptsExactlyTheJSONThatEncodingJSONAccepts embeds values in
// an unknown field and checks that acceptance matches json.Valid.
func TestNormalize_AcceptsExactlyTheJSONThatEncodingJSONAccepts(t *testing.T) {
	values := []string{
		`0`, `-0`, `1.5`, `-1.5e10`, `1E+2`, `1e-2`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `0x10`, `1.5e+`,
		`true`, `false`, `null`, `tru`, `nul`, `True`, `NaN`, `Infinity`,
		`""`, `"a\"b"`, `"\u00e9"`, `"\uD83D\uDE00"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\t\"", "\"\x7f\"", "\"\xff\xfe\"",
		`"unterminated`, `"\"`, `"\\"`, `"\/"`,
		`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[1,[2,[3]]]`, `[`, `]`,
		`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":{"b":{"c":[]}}}`, `{"a":1}}`,
		`'single'`, ``,
	}
	for _, v := range values {
		raw := `{"type":"page","userId":"u","x":` + v + `}`
		want := json.Valid([]byte(raw))
		_, err := event.Normalize([]byte(raw), "", opts())
		if got := err == nil; got != want {
			t.Errorf("value %q: accepted = %v, json.Valid = %v (%v)", v, got, want, err)
		}
	}
}
