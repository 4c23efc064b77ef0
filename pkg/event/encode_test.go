package event_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/event/eventtest"
	"pgregory.net/rapid"
)

// marshalNoHTML is encoding/json's output without HTML escaping, which AppendJSON does not do.
func marshalNoHTML(t interface{ Fatal(...any) }, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type point struct {
	X int    `json:"x"`
	Y string `json:"y,omitempty"`
}

func TestAppendJSON_WritesWhatEncodingJSONWrites(t *testing.T) {
	when := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	cycleFree := map[string]any{"a": []any{1, "b", nil, true, 2.5}, "m": map[string]any{"z": 1, "a": 2}}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"a track event as a map", map[string]any{"type": "track", "event": "Order Completed", "userId": "u1",
			"properties": map[string]any{"price": 19.99, "qty": 2, "tags": []string{"a", "b"}}, "context": map[string]string{"ip": "1.2.3.4"}}},
		{"keys sorted at every level", cycleFree},
		{"escapes quotes, backslashes and control characters", "a\"b\\c\n\r\t\x00\x1f\x7f"},
		{"replaces invalid UTF-8", "ok\xffok\xc3"},
		{"escapes the JavaScript line separators", "a\u2028b\u2029c"},
		{"keeps HTML characters and non-ASCII", "<a href=\"x\">&</a> é 日本 😀"},
		{"floats in decimal form", []any{0.1, math.Copysign(0, -1), 1.5e20, 123456789.0, float32(0.1)}},
		{"floats in exponent form", []any{1e21, 1e-7, -2.5e-10, float32(1e-7), math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{"integers of every size", []any{int8(-8), int16(-16), int32(-32), int64(math.MinInt64), -1, uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64), uint(7)}},
		{"nils of every kind", []any{nil, map[string]any(nil), []any(nil), []string(nil), map[string]string(nil), json.RawMessage(nil)}},
		{"time as RFC 3339 with nanoseconds", when},
		{"json.Number", []any{json.Number("12.5e3"), json.Number("-1")}},
		{"json.RawMessage", json.RawMessage(`{"a":[1,2]}`)},
		{"a struct, through encoding/json", map[string]any{"p": point{X: 1}, "pp": &point{X: 2, Y: "y"}}},
		{"a named map type, through encoding/json", map[string]any{"n": map[string]int{"b": 2, "a": 1}}},
		{"empty containers", map[string]any{"o": map[string]any{}, "a": []any{}, "s": []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.AppendJSON(nil, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if want := marshalNoHTML(t, tc.v); !bytes.Equal(got, want) {
				t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestAppendJSON_AppendsToWhatDstHolds(t *testing.T) {
	got, err := event.AppendJSON([]byte("prefix "), map[string]any{"a": 1})
	if err != nil || string(got) != `prefix {"a":1}` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAppendJSON_RawMessageTrimmed(t *testing.T) {
	got, err := event.AppendJSON(nil, []any{json.RawMessage(" {\"a\": 1}\n")})
	if err != nil || string(got) != `[{"a": 1}]` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAppendJSON_RefusesWhatJSONCannotHold(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	for _, tc := range []struct {
		name, want string
		v          any
	}{
		{"NaN", "NaN", map[string]any{"x": math.NaN()}},
		{"infinity", "JSON has no NaN or infinity", []any{math.Inf(-1)}},
		{"a map that contains itself", "nested deeper than 512", cycle},
		{"invalid raw JSON", "json.RawMessage: not valid JSON", json.RawMessage(`{"a":`)},
		{"a json.Number that is not a number", "not a number", json.Number("true")},
		{"a year past 9999", "year outside", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"a channel, through encoding/json", "unsupported type", map[string]any{"c": make(chan int)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := event.AppendJSON(nil, tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// anyValue draws a random tree of the Go values events are built from.
func anyValue(t *rapid.T, label string, depth int) any {
	kind := rapid.IntRange(0, 8).Draw(t, label+"_kind")
	if depth > 3 {
		kind %= 5
	}
	switch kind {
	case 0:
		return rapid.String().Draw(t, label+"_s")
	case 1:
		return rapid.Float64().Filter(func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }).Draw(t, label+"_f")
	case 2:
		return rapid.Int64().Draw(t, label+"_i")
	case 3:
		return rapid.Bool().Draw(t, label+"_b")
	case 4:
		return nil
	case 5:
		return rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, label+"_ss")
	case 6:
		n := rapid.IntRange(0, 3).Draw(t, label+"_n")
		arr := make([]any, n)
		for i := range arr {
			arr[i] = anyValue(t, label+"_e", depth+1)
		}
		return arr
	default:
		n := rapid.IntRange(0, 4).Draw(t, label+"_n")
		m := make(map[string]any, n)
		for range n {
			m[rapid.String().Draw(t, label+"_k")] = anyValue(t, label+"_v", depth+1)
		}
		return m
	}
}

func TestAppendJSON_MatchesEncodingJSONOnRandomValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := anyValue(t, "v", 0)
		got, err := event.AppendJSON(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalNoHTML(t, v); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
		}
	})
}

// TestAppendJSON_NormalizesLikeTheEventsBytes checks the path Enqueue takes for a Go value:
// the encoded map normalises to the same event as its encoding/json bytes.
func TestAppendJSON_NormalizesLikeTheEventsBytes(t *testing.T) {
	raw := eventtest.Track(7)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	enc, err := event.AppendJSON(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	a, err := event.Normalize(enc, "", event.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := event.Normalize(marshalNoHTML(t, m), "", event.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || !reflect.DeepEqual(x, y) {
		t.Fatalf("normalised differently:\n%s\n%s", a, b)
	}
}

// BenchmarkAppendJSON compares AppendJSON with encoding/json's Marshal on a 535-byte track
// event held as a map[string]any, as an app builds it.
func BenchmarkAppendJSON(b *testing.B) {
	var m map[string]any
	if err := json.Unmarshal(eventtest.Track(42), &m); err != nil {
		b.Fatal(err)
	}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			var err error
			if buf, err = event.AppendJSON(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Maps written one after the other share the encoder's remembered key orders: a map with the
// same keys as one before, with other keys of the same count, with one key swapped for
// another, empty, or too large to remember, each comes out as encoding/json writes it.
func TestAppendJSON_RemembersKeyOrdersWithoutMixingKeySets(t *testing.T) {
	big := map[string]any{}
	for i := range 100 {
		big[fmt.Sprintf("k%03d", 99-i)] = i
	}
	seq := []map[string]any{
		{"b": 1, "a": 2, "c": 3},
		{"c": "x", "b": "y", "a": "z"},   // the same keys: the remembered order
		{"d": 1, "a": 2, "c": 3},         // as many keys, one other
		{"a": 1, "b": 2},                 // fewer keys, all among a remembered set
		{"a": 1, "b": 2, "c": 3, "d": 4}, // more keys, a remembered set among them
		{},                               // empty
		big,                              // too many keys to remember
		{"b": map[string]any{"b": 1, "a": 2}, "a": map[string]any{"a": 1, "b": 2}}, // nested, same shape
	}
	for round := range 3 { // later rounds find every order remembered
		for i, m := range seq {
			want, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := event.AppendJSON(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("round %d, map %d: AppendJSON = %s, want %s", round, i, got, want)
			}
		}
	}
}
