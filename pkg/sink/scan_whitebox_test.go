package sink

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestScanBatch_SplitsEventsAndFindsTopLevelMessageIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		events []string
		ids    []string
		sentAt string
	}{
		{"empty batch", `{"batch":[]}`, nil, nil, ""},
		{"whitespace everywhere", " {\n \"sentAt\" : \"t\" ,\t\"batch\" : [ {\"messageId\" : \"a\"} , {} ] } ",
			[]string{`{"messageId" : "a"}`, `{}`}, []string{"a", ""}, "t"},
		{"nested messageId is not the event's", `{"batch":[{"properties":{"messageId":"n"},"messageId":"top"}]}`,
			[]string{`{"properties":{"messageId":"n"},"messageId":"top"}`}, []string{"top"}, ""},
		{"braces and quotes inside strings", `{"batch":[{"event":"a}\"]{","messageId":"m\"1"}]}`,
			[]string{`{"event":"a}\"]{","messageId":"m\"1"}`}, []string{`m\"1`}, ""},
		{"other top-level fields are skipped", `{"writeKey":"k","context":{"a":[1,{"b":"]"}]},"batch":[{"n":null,"t":true,"f":-1.5e3}],"x":false}`,
			[]string{`{"n":null,"t":true,"f":-1.5e3}`}, []string{""}, ""},
		{"non-string messageId counts as absent", `{"batch":[{"messageId":7}]}`, []string{`{"messageId":7}`}, []string{""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := scanBatch([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.events) != len(tc.events) {
				t.Fatalf("%d events, want %d", len(d.events), len(tc.events))
			}
			for i := range tc.events {
				if string(d.events[i]) != tc.events[i] || string(d.ids[i]) != tc.ids[i] {
					t.Errorf("event %d = %s id %q, want %s id %q", i, d.events[i], d.ids[i], tc.events[i], tc.ids[i])
				}
			}
			if d.sentAt != tc.sentAt {
				t.Errorf("sentAt %q, want %q", d.sentAt, tc.sentAt)
			}
		})
	}
}

func TestScanBatch_RejectsWhatIsNotABatch(t *testing.T) {
	for _, body := range []string{``, `[]`, `{}`, `{"batch":{}}`, `{"batch":[1]}`, `{"batch":["a"]}`,
		`{"batch":[{}`, `{"batch":[{}]`, `{"batch":[{"a"}]}`, `{"batch":[{"a":1 "b":2}]}`, `{"batch":[{"a":"x]}`, `{"batch":[]x}`} {
		if _, err := scanBatch([]byte(body)); !errors.Is(err, ErrBadBody) {
			t.Errorf("scanBatch(%q) = %v, want ErrBadBody", body, err)
		}
	}
}

// FuzzScanBatch checks the scanner against encoding/json on every valid body.
func FuzzScanBatch(f *testing.F) {
	f.Add(`{"batch":[{"messageId":"a","p":{"messageId":"b"}},{}],"sentAt":"x"}`)
	f.Add(`{"batch":[{"a":"}\\"{"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		d, err := scanBatch([]byte(body))
		// The key is "batch" exactly, as the scanner reads it: a map, unlike a struct field,
		// does not match "BATCH" or "Batch" too.
		var top map[string]json.RawMessage
		var want struct{ Batch []map[string]json.RawMessage }
		if !json.Valid([]byte(body)) || json.Unmarshal([]byte(body), &top) != nil || top["batch"] == nil ||
			json.Unmarshal(top["batch"], &want.Batch) != nil || want.Batch == nil ||
			strings.Contains(body, `\u`) || strings.Count(body, `"batch"`) != 1 {
			return // only compare on unambiguous valid batches
		}
		if err != nil {
			t.Fatalf("valid batch %q refused: %v", body, err)
		}
		if len(d.events) != len(want.Batch) {
			t.Fatalf("%d events, want %d", len(d.events), len(want.Batch))
		}
		for i, ev := range want.Batch {
			var id string
			if raw, ok := ev["messageId"]; ok && json.Unmarshal(raw, &id) == nil && !strings.Contains(string(raw), `\`) {
				if string(d.ids[i]) != id {
					t.Fatalf("event %d id %q, want %q", i, d.ids[i], id)
				}
			}
			if !json.Valid(d.events[i]) {
				t.Fatalf("event %d %q is not the whole object", i, d.events[i])
			}
		}
	})
}

// FuzzScanBatchEvents builds a valid batch from the fuzzer's bytes, so the expected answer is
// known, and checks that the scanner returns each event's exact bytes (no surrounding
// whitespace, nothing cut), each top-level messageId's raw content (nil when the event has none
// at the top level) and sentAt. The pieces of data (split at NUL) become JSON strings in events
// of several shapes: braces, brackets, quotes, backslashes and a "messageId" or "batch" key
// nested where the scanner must not take it for the event's own.
func FuzzScanBatchEvents(f *testing.F) {
	f.Add([]byte("a\x00b}\"]{\x00\\\x00\x03\\\"\x00"))
	f.Add([]byte("\x01messageId\x00\x02batch\x00\x03\n\t"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		pieces := bytes.Split(data, []byte{0})
		if len(pieces) > 32 {
			pieces = pieces[:32]
		}
		spaces := []string{"", " ", "\n\t", "\r\n "}
		var events [][]byte
		var ids [][]byte
		for _, p := range pieces {
			s := jsonString(t, p)
			raw := s[1 : len(s)-1]
			ws := spaces[len(p)%len(spaces)]
			shape := 0
			if len(p) > 0 {
				shape = int(p[0]) % 5
			}
			var ev string
			var id []byte
			switch shape {
			case 0:
				ev, id = `{"messageId":`+s+`,"p":`+s+`}`, []byte(raw)
			case 1:
				ev = `{` + ws + `"properties"` + ws + `:` + ws + `{"messageId":` + s + `,"a":[1,{"b":` + s + `}]}` + ws + `,` +
					ws + `"messageId"` + ws + `:` + ws + s + ws + `}`
				id = []byte(raw)
			case 2:
				ev = `{"n":null,"t":true,"f":-1.5e3,"s":` + s + `,"batch":[{"messageId":` + s + `}]}`
			case 3:
				ev = `{"x":[[` + s + `],[],{}],"messageId":7}`
			default:
				ev = `{` + ws + `}`
			}
			events = append(events, []byte(ev))
			ids = append(ids, id)
		}
		sentAt := jsonString(t, pieces[0])
		var body bytes.Buffer
		body.WriteString(`{"writeKey":` + sentAt + `,"context":{"batch":[{"messageId":"no"}]}`)
		if len(data)%2 == 0 {
			body.WriteString(`,"sentAt":` + sentAt)
		}
		body.WriteString(`,"batch":[`)
		for i, ev := range events {
			ws := spaces[i%len(spaces)]
			if i > 0 {
				body.WriteString(ws + ",")
			}
			body.WriteString(ws)
			body.Write(ev)
		}
		body.WriteString(spaces[len(data)%len(spaces)] + "]")
		if len(data)%2 == 1 {
			body.WriteString(`,"sentAt":` + sentAt)
		}
		body.WriteString("}")
		if !json.Valid(body.Bytes()) {
			t.Fatalf("the test built an invalid body: %s", body.Bytes())
		}

		d, err := scanBatch(body.Bytes())
		if err != nil {
			t.Fatalf("valid batch %s refused: %v", body.Bytes(), err)
		}
		if len(d.events) != len(events) {
			t.Fatalf("%d events, want %d, in %s", len(d.events), len(events), body.Bytes())
		}
		for i := range events {
			if !bytes.Equal(d.events[i], events[i]) {
				t.Fatalf("event %d = %q, want %q", i, d.events[i], events[i])
			}
			if (d.ids[i] == nil) != (ids[i] == nil) || !bytes.Equal(d.ids[i], ids[i]) {
				t.Fatalf("event %d messageId = %q (nil %v), want %q (nil %v)", i, d.ids[i], d.ids[i] == nil, ids[i], ids[i] == nil)
			}
		}
		if want := sentAt[1 : len(sentAt)-1]; d.sentAt != want {
			t.Fatalf("sentAt = %q, want %q", d.sentAt, want)
		}
	})
}

// jsonString returns p as a JSON string literal, quotes included, with <, > and & left as they
// are (so the scanner meets them raw).
func jsonString(t *testing.T, p []byte) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(p)); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
