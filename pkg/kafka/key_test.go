package kafka

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestMemberKey_FindsTheTopLevelMemberOnly(t *testing.T) {
	tests := []struct {
		name, ev, member, want string
		absent                 bool
	}{
		{name: "a plain string", ev: `{"type":"track","messageId":"m-1"}`, member: "messageId", want: "m-1"},
		{name: "spaces around the colon and commas", ev: "{ \"a\" : 1 ,\n \"messageId\" :\t\"m-2\" }", member: "messageId", want: "m-2"},
		{name: "a nested member of the same name is skipped", ev: `{"properties":{"messageId":"inner"},"messageId":"outer"}`, member: "messageId", want: "outer"},
		{name: "a name inside a string value is skipped", ev: `{"event":"\"messageId\":\"fake\"","messageId":"real"}`, member: "messageId", want: "real"},
		{name: "arrays with objects and strings are skipped", ev: `{"a":[{"messageId":"x"},"]"],"messageId":"m-3"}`, member: "messageId", want: "m-3"},
		{name: "an escaped value is decoded", ev: `{"userId":"caf\u00e9 \"q\""}`, member: "userId", want: `café "q"`},
		{name: "an escaped name matches", ev: `{"user\u0049d":"u-1"}`, member: "userId", want: "u-1"},
		{name: "a number is its literal", ev: `{"userId":12345}`, member: "userId", want: "12345"},
		{name: "absent", ev: `{"type":"track"}`, member: "messageId", absent: true},
		{name: "null", ev: `{"userId":null}`, member: "userId", absent: true},
		{name: "empty string", ev: `{"userId":""}`, member: "userId", absent: true},
		{name: "an object", ev: `{"userId":{"id":1}}`, member: "userId", absent: true},
		{name: "not an object", ev: `["messageId","m"]`, member: "messageId", absent: true},
		{name: "truncated", ev: `{"messageId":"m-1`, member: "messageId", absent: true},
		{name: "empty input", ev: ``, member: "messageId", absent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memberKey([]byte(tt.ev), tt.member)
			if tt.absent {
				if got != nil {
					t.Fatalf("memberKey = %q, want nil", got)
				}
				return
			}
			if string(got) != tt.want {
				t.Fatalf("memberKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKeyFor_UserIDFallsBackToAnonymousID(t *testing.T) {
	k := keyFor(KeyUserID)
	if got := k([]byte(`{"anonymousId":"a-1","userId":"u-1"}`)); string(got) != "u-1" {
		t.Errorf("with both: %q, want u-1", got)
	}
	if got := k([]byte(`{"anonymousId":"a-1"}`)); string(got) != "a-1" {
		t.Errorf("without userId: %q, want a-1", got)
	}
	if got := keyFor(KeyNone)([]byte(`{"messageId":"m"}`)); got != nil {
		t.Errorf("none: %q, want nil", got)
	}
}

// FuzzMemberKey checks the scanner against encoding/json on every JSON object with unique
// top-level names (what intake stores), and that it never panics on anything else.
func FuzzMemberKey(f *testing.F) {
	for _, s := range []string{`{"messageId":"m"}`, `{"a":{"messageId":1},"messageId":"x\"y"}`, `{"messageId":12}`, `{`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		got := memberKey(ev, "messageId")
		var m map[string]json.RawMessage
		if json.Unmarshal(ev, &m) != nil || duplicateNames(ev) {
			return
		}
		raw, ok := m["messageId"]
		var want []byte
		if ok {
			var s string
			switch {
			case json.Unmarshal(raw, &s) == nil:
				if s != "" {
					want = []byte(s)
				}
			case len(raw) > 0 && raw[0] != '{' && raw[0] != '[' && raw[0] != 'n':
				want = raw
			}
		}
		if string(got) != string(want) {
			t.Fatalf("memberKey(%q) = %q, encoding/json says %q", ev, got, want)
		}
	})
}

// duplicateNames reports whether the object ev has a top-level name twice (encoding/json
// keeps the last, the scanner the first; intake refuses such events).
func duplicateNames(ev []byte) bool {
	d := json.NewDecoder(bytes.NewReader(ev))
	if _, err := d.Token(); err != nil {
		return true
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return true
		}
		name, _ := tok.(string)
		if seen[name] {
			return true
		}
		seen[name] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return true
		}
	}
	return false
}
