package event_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/outboxhq/outbox/pkg/event"
)

// strictValid is the oracle of the JSON the scanner accepts: what encoding/json's Valid
// accepts, with valid UTF-8, no lone surrogate escape and only numbers that are finite as a
// float64.
func strictValid(data []byte) bool {
	if !json.Valid(data) || !utf8.Valid(data) || hasLoneSurrogate(data) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return finite(v)
}

// finite reports whether every number in v parses to a finite float64.
func finite(v any) bool {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return !math.IsInf(f, 0)
	case []any:
		for _, e := range x {
			if !finite(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range x {
			if !finite(e) {
				return false
			}
		}
	}
	return true
}

// hasLoneSurrogate reports whether valid JSON data holds a \u escape of a UTF-16 surrogate
// that is not part of a high-low pair.
func hasLoneSurrogate(data []byte) bool {
	pendingHigh := false
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			if pendingHigh {
				return true
			}
			continue
		}
		if data[i+1] != 'u' {
			if pendingHigh {
				return true
			}
			i++
			continue
		}
		r, _ := strconv.ParseUint(string(data[i+2:i+6]), 16, 32)
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if pendingHigh {
				return true
			}
			pendingHigh = true
		case r >= 0xDC00 && r <= 0xDFFF:
			if !pendingHigh {
				return true
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return true
			}
		}
		i += 5
	}
	return pendingHigh
}

func TestParseBatch_RefusesJSONACollectorCannotReadNamingTheEventAndField(t *testing.T) {
	good := `{"type":"track","userId":"u","event":"E"}`
	for _, tc := range []struct {
		name, bad, field, reason string
	}{
		{"invalid UTF-8 in a value", "{\"type\":\"track\",\"userId\":\"u\xff\",\"event\":\"E\"}", "userId", "invalid UTF-8 in string"},
		{"a truncated UTF-8 sequence in a nested value", "{\"type\":\"track\",\"userId\":\"u\",\"event\":\"E\",\"properties\":{\"name\":\"caf\xc3\"}}", "properties", "invalid UTF-8"},
		{"a UTF-8 encoded surrogate", "{\"type\":\"track\",\"userId\":\"u\",\"event\":\"E\",\"x\":\"\xed\xa0\x80\"}", "x", "invalid UTF-8"},
		{"an overlong UTF-8 encoding", "{\"type\":\"track\",\"userId\":\"u\",\"event\":\"E\",\"x\":\"\xc0\xaf\"}", "x", "invalid UTF-8"},
		{"a lone high surrogate escape", `{"type":"track","userId":"u","event":"E","x":"a\ud800b"}`, "x", `lone UTF-16 surrogate \ud800`},
		{"a high surrogate before a non-surrogate escape", `{"type":"track","userId":"u","event":"E","x":"\ud83d\u0041"}`, "x", "lone UTF-16 surrogate"},
		{"a lone low surrogate escape", `{"type":"track","userId":"u","event":"E","properties":{"x":["\uDC00"]}}`, "properties", `lone UTF-16 surrogate \uDC00`},
		{"a number beyond float64", `{"type":"track","userId":"u","event":"E","properties":{"total":1e999}}`, "properties", "number 1e999 is beyond the range of a 64-bit float"},
		{"a negative number beyond float64", `{"type":"track","userId":"u","event":"E","x":-1.5E+400}`, "x", "beyond the range"},
		{"an integer of 400 digits", `{"type":"track","userId":"u","event":"E","x":` + strings.Repeat("9", 400) + `}`, "x", "beyond the range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"batch":[` + good + `,` + tc.bad + `]}`
			evs, err := event.ParseBatch([]byte(body), opts())
			if err == nil {
				t.Fatalf("accepted %d events", len(evs))
			}
			e := asError(t, err)
			if e.Index != 1 || e.Field != tc.field || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("got %v (index %d, field %q), want index 1, field %q, reason with %q", err, e.Index, e.Field, tc.field, tc.reason)
			}
			if _, err := event.Normalize([]byte(tc.bad), "", opts()); err == nil {
				t.Errorf("Normalize accepted %q", tc.bad)
			}
		})
	}
}

func TestParseBatch_KeepsStrictJSONThatLooksUnusual(t *testing.T) {
	for _, v := range []string{
		`"\ud83d\ude00"`, `"\uD83D\uDE00 and \u00e9"`, "\"é日本語🙂\"", `"\\ud800"`, `1e308`, `-1.7976931348623157e308`,
		`1e-400`, `0.` + strings.Repeat("0", 400) + `1`, strings.Repeat("9", 308), `"\uffff"`,
	} {
		raw := `{"type":"track","userId":"u","event":"E","x":` + v + `}`
		out, err := event.Normalize([]byte(raw), "", opts())
		if err != nil {
			t.Errorf("value %s refused: %v", v, err)
			continue
		}
		if !bytes.Contains(out, []byte(`"x":`+v)) {
			t.Errorf("value %s not kept as sent: %s", v, out)
		}
	}
}

func TestParseBatch_SaysABodyThatIsNotJSONIsNotJSON(t *testing.T) {
	for _, body := range []string{"not json", "nul", "<html>", "{'batch':[]}"} {
		_, err := event.ParseBatch([]byte(body), opts())
		if err == nil || (!strings.Contains(err.Error(), "not JSON") && !strings.Contains(err.Error(), "invalid JSON")) || strings.Contains(err.Error(), "got null") {
			t.Errorf("body %q: %v; want it to say the body is not JSON", body, err)
		}
	}
}
