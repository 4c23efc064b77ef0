package sink

import (
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
		var want struct {
			Batch []map[string]json.RawMessage `json:"batch"`
		}
		if !json.Valid([]byte(body)) || json.Unmarshal([]byte(body), &want) != nil || want.Batch == nil ||
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
