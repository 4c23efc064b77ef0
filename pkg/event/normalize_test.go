package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/version"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/segmentio/ksuid"
)

func TestNormalize_AcceptsValidEvents(t *testing.T) {
	cases := []struct {
		name, raw, typ string
	}{
		{"track with userId and event", `{"type":"track","event":"Signed Up","userId":"u1"}`, ""},
		{"track with only anonymousId", `{"type":"track","event":"x","anonymousId":"a1"}`, ""},
		{"userId may be a number", `{"type":"identify","userId":42}`, ""},
		{"empty userId is fine when anonymousId is set", `{"type":"identify","userId":"","anonymousId":"a"}`, ""},
		{"null userId is fine when anonymousId is set", `{"type":"identify","userId":null,"anonymousId":"a"}`, ""},
		{"identify", `{"type":"identify","userId":"u","traits":{"plan":"pro"}}`, ""},
		{"page", `{"type":"page","userId":"u","name":"Home"}`, ""},
		{"screen", `{"type":"screen","anonymousId":"a","name":"Home"}`, ""},
		{"group with string groupId", `{"type":"group","userId":"u","groupId":"g1"}`, ""},
		{"group with number groupId", `{"type":"group","userId":"u","groupId":7}`, ""},
		{"alias with previousId and userId", `{"type":"alias","previousId":"old","userId":"new"}`, ""},
		{"type may come from the route alone", `{"event":"x","userId":"u"}`, "track"},
		{"whitespace around and inside is allowed", " \n{ \"type\" : \"page\" ,\t\"userId\" : \"u\" }\r\n", ""},
		{"escaped type is decoded", `{"type":"tr\u0061ck","event":"x","userId":"u"}`, ""},
		{"timestamp with offset and nanoseconds is kept", `{"type":"page","userId":"u","timestamp":"2024-05-01T12:00:00.123456789+02:00"}`, ""},
		{"timestamp without fraction is kept", `{"type":"page","userId":"u","timestamp":"2024-05-01T12:00:00Z"}`, ""},
		{"unicode and escapes in unknown fields", `{"type":"page","userId":"ü\"\\","properties":{"k":"\ud83d\ude00 \n"}}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := event.Normalize([]byte(tc.raw), tc.typ, opts())
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			m := fields(t, out)
			for _, k := range []string{"type", "messageId", "timestamp", "context"} {
				if _, ok := m[k]; !ok {
					t.Errorf("output lacks %s: %s", k, out)
				}
			}
		})
	}
}

func TestNormalize_RejectsEventsBreakingARule(t *testing.T) {
	cases := []struct {
		name, raw, typ, field string
	}{
		{"event must be an object", `["type","track"]`, "", ""},
		{"event must be an object, not a string", `"track"`, "", ""},
		{"malformed JSON is refused", `{"type":"track","event":"x","userId":"u",}`, "", ""},
		{"trailing data after the object is refused", `{"type":"page","userId":"u"} {}`, "", ""},
		{"empty input is refused", ``, "", ""},
		{"type is required", `{"event":"x","userId":"u"}`, "", "type"},
		{"type must be known", `{"type":"purchase","userId":"u"}`, "", "type"},
		{"type must be a string", `{"type":1,"userId":"u"}`, "", "type"},
		{"type is case sensitive", `{"type":"Track","event":"x","userId":"u"}`, "", "type"},
		{"userId or anonymousId is required", `{"type":"identify","traits":{}}`, "", "userId"},
		{"empty ids do not count", `{"type":"identify","userId":"","anonymousId":""}`, "", "userId"},
		{"null ids do not count", `{"type":"identify","userId":null,"anonymousId":null}`, "", "userId"},
		{"userId must be a string or number", `{"type":"identify","userId":true}`, "", "userId"},
		{"userId must not be an object", `{"type":"identify","userId":{"id":1},"anonymousId":"a"}`, "", "userId"},
		{"anonymousId must be a string", `{"type":"identify","anonymousId":5}`, "", "anonymousId"},
		{"alias needs previousId", `{"type":"alias","userId":"new"}`, "", "previousId"},
		{"alias needs userId, anonymousId is not enough", `{"type":"alias","previousId":"old","anonymousId":"a"}`, "", "userId"},
		{"alias previousId must be a string or number", `{"type":"alias","previousId":[],"userId":"n"}`, "", "previousId"},
		{"track needs event", `{"type":"track","userId":"u"}`, "", "event"},
		{"track event must not be empty", `{"type":"track","event":"","userId":"u"}`, "", "event"},
		{"track event must be a string", `{"type":"track","event":7,"userId":"u"}`, "", "event"},
		{"route track needs event too", `{"userId":"u"}`, "track", "event"},
		{"group needs groupId", `{"type":"group","userId":"u"}`, "", "groupId"},
		{"group groupId must be a string or number", `{"type":"group","userId":"u","groupId":{}}`, "", "groupId"},
		{"messageId must be a string", `{"type":"page","userId":"u","messageId":123}`, "", "messageId"},
		{"timestamp must be RFC 3339", `{"type":"page","userId":"u","timestamp":"2024-05-01 12:00:00"}`, "", "timestamp"},
		{"timestamp needs a zone", `{"type":"page","userId":"u","timestamp":"2024-05-01T12:00:00"}`, "", "timestamp"},
		{"timestamp date must exist", `{"type":"page","userId":"u","timestamp":"2024-02-30T12:00:00Z"}`, "", "timestamp"},
		{"timestamp must be a string", `{"type":"page","userId":"u","timestamp":1714564800}`, "", "timestamp"},
		{"context must be an object", `{"type":"page","userId":"u","context":"web"}`, "", "context"},
		{"integrations must be an object", `{"type":"page","userId":"u","integrations":[]}`, "", "integrations"},
		{"duplicate top-level key is refused", `{"type":"page","userId":"u","userId":"v"}`, "", "userId"},
		{"duplicate key spelt with an escape is refused", `{"type":"page","userId":"u","user\u0049d":"v"}`, "", "userId"},
		{"nesting deeper than 512 is refused", `{"type":"page","userId":"u","p":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, "", "p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := event.Normalize([]byte(tc.raw), tc.typ, opts())
			if err == nil {
				t.Fatalf("Normalize accepted it: %s", out)
			}
			if out != nil {
				t.Errorf("output on error: %s", out)
			}
			e := asError(t, err)
			if e.Field != tc.field || e.Index != 0 {
				t.Errorf("got Field %q Index %d, want Field %q Index 0 (%v)", e.Field, e.Index, tc.field, err)
			}
			if errors.Is(err, event.ErrTooLarge) {
				t.Errorf("error matches ErrTooLarge: %v", err)
			}
			if e.Reason == "" || !strings.Contains(err.Error(), e.Reason) {
				t.Errorf("Error() %q does not carry the reason %q", err, e.Reason)
			}
		})
	}
}

func TestNormalize_FillsMissingFields(t *testing.T) {
	raw := `{"type":"track","event":"x","userId":"u"}`
	out, err := event.Normalize([]byte(raw), "", opts())
	if err != nil {
		t.Fatal(err)
	}
	m := fields(t, out)
	if got := string(m["timestamp"]); got != fixedStamp {
		t.Errorf("timestamp = %s, want the intake time in UTC with ms %s", got, fixedStamp)
	}
	var id string
	if err := json.Unmarshal(m["messageId"], &id); err != nil {
		t.Fatal(err)
	}
	k, err := ksuid.Parse(id)
	if err != nil {
		t.Fatalf("messageId %q is not a KSUID: %v", id, err)
	}
	if !k.Time().Equal(fixedNow.Truncate(time.Second)) {
		t.Errorf("messageId time = %v, want the intake time %v", k.Time(), fixedNow)
	}
	want := `{"name":"outbox","version":` + strings.TrimSpace(string(mustJSON(t, version.Version))) + `}`
	if got := string(fields(t, m["context"])["library"]); got != want {
		t.Errorf("context.library = %s, want %s", got, want)
	}
	if _, ok := m["receivedAt"]; ok {
		t.Errorf("receivedAt was set: %s", out)
	}
	if !bytes.HasPrefix(out, []byte(raw[:len(raw)-1])) {
		t.Errorf("the event's own bytes were not kept as a prefix: %s", out)
	}
}

func TestNormalize_GivesEachEventItsOwnMessageID(t *testing.T) {
	raw := []byte(`{"type":"track","event":"x","userId":"u"}`)
	seen := map[string]bool{}
	for range 100 {
		out, err := event.Normalize(raw, "", opts())
		if err != nil {
			t.Fatal(err)
		}
		id := string(fields(t, out)["messageId"])
		if seen[id] {
			t.Fatalf("messageId %s generated twice", id)
		}
		seen[id] = true
	}
}

func TestNormalize_FieldValues(t *testing.T) {
	cases := []struct {
		name, raw, typ, field, want string
	}{
		{"messageId present is kept", `{"type":"page","userId":"u","messageId":"m-1"}`, "", "messageId", `"m-1"`},
		{"timestamp present is kept as sent", `{"type":"page","userId":"u","timestamp":"2024-01-02T03:04:05.6+01:00"}`, "", "timestamp", `"2024-01-02T03:04:05.6+01:00"`},
		{"null timestamp gets the intake time", `{"type":"page","userId":"u","timestamp":null}`, "", "timestamp", fixedStamp},
		{"empty timestamp gets the intake time", `{"type":"page","userId":"u","timestamp":""}`, "", "timestamp", fixedStamp},
		{"context.library present is kept", `{"type":"page","userId":"u","context":{"library":{"name":"analytics-go","version":"3"}}}`, "", "context", `{"library":{"name":"analytics-go","version":"3"}}`},
		{"library is inserted first into an existing context", `{"type":"page","userId":"u","context":{ "ip":"1.2.3.4" }}`, "", "context", `{"library":{"name":"lib"}, "ip":"1.2.3.4" }`},
		{"library is inserted into an empty context", `{"type":"page","userId":"u","context":{ }}`, "", "context", `{"library":{"name":"lib"} }`},
		{"null context gets the library", `{"type":"page","userId":"u","context":null}`, "", "context", `{"library":{"name":"lib"}}`},
		{"route type is set when the event has none", `{"userId":"u","name":"Home"}`, "page", "type", `"page"`},
		{"route type replaces the event's type", `{"type":"identify","userId":"u","name":"Home"}`, "screen", "type", `"screen"`},
		{"route type replaces a type of another kind", `{"type":null,"userId":"u"}`, "identify", "type", `"identify"`},
		{"event type equal to the route is kept", `{"type":"page","userId":"u"}`, "page", "type", `"page"`},
		{"receivedAt sent by the client is kept", `{"type":"page","userId":"u","receivedAt":"x"}`, "", "receivedAt", `"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			o.Library = []byte(` {"name":"lib"} `)
			out, err := event.Normalize([]byte(tc.raw), tc.typ, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fields(t, out)[tc.field]); got != tc.want {
				t.Errorf("%s = %s, want %s (event %s)", tc.field, got, tc.want, out)
			}
		})
	}
}

func TestNormalize_NullOrEmptyMessageIDIsReplaced(t *testing.T) {
	for _, v := range []string{`null`, `""`} {
		out, err := event.Normalize([]byte(`{"type":"page","userId":"u","messageId":`+v+`}`), "", opts())
		if err != nil {
			t.Fatal(err)
		}
		var id string
		if err := json.Unmarshal(fields(t, out)["messageId"], &id); err != nil {
			t.Fatal(err)
		}
		if _, err := ksuid.Parse(id); err != nil {
			t.Errorf("messageId %s was replaced by %q, not a KSUID", v, id)
		}
	}
}

func TestNormalize_KeepsUnknownFieldsByteForByte(t *testing.T) {
	props := `{ "b" : 1.50e+3, "a":[true ,false,null], "s":"\u00e9\n\/", "n":-0.0 }`
	traits := `{"z":{"y":{}}, "x":"dup", "x":"dup again"}`
	raw := `{"type":"identify","userId":"u","properties":` + props + `,  "traits" :` + traits +
		`,"context":{"ip":"1.2.3.4",  "page" : {"url":"http://x/?a=1&b=2"}},"custom":12345678901234567890}`
	out, err := event.Normalize([]byte(raw), "", opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"properties":` + props, `"traits" :` + traits,
		`"ip":"1.2.3.4",  "page" : {"url":"http://x/?a=1&b=2"}}`, `"custom":12345678901234567890`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lost %s:\n%s", want, out)
		}
	}
}

func TestNormalize_RejectsEventOverTheLimit(t *testing.T) {
	small := `{"type":"page","userId":"u","messageId":"m","timestamp":"2024-05-01T12:00:00Z","context":{"library":{}},"p":"`
	for _, tc := range []struct {
		name    string
		padding int
		limit   int
		tooBig  bool
	}{
		{"exactly the limit is accepted", 200 - len(small) - 2, 200, false},
		{"one byte over the limit is refused", 201 - len(small) - 2, 200, true},
		{"the default limit is 32768 bytes", 32769 - len(small) - 2, 0, true},
		{"just under the default limit is accepted", 32768 - len(small) - 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := small + strings.Repeat("x", tc.padding) + `"}`
			o := opts()
			o.Limits.MaxEventBytes = tc.limit
			out, err := event.Normalize([]byte(raw), "", o)
			if !tc.tooBig {
				if err != nil || len(out) != len(raw) {
					t.Fatalf("got %d bytes, %v; want %d bytes accepted", len(out), err, len(raw))
				}
				return
			}
			if !errors.Is(err, event.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if e := asError(t, err); e.Index != 0 {
				t.Errorf("Index = %d", e.Index)
			}
		})
	}
}

func TestNormalize_MeasuresTheLimitAfterNormalisation(t *testing.T) {
	raw := `{"type":"page","userId":"u"}`
	o := opts()
	o.Limits.MaxEventBytes = len(raw) + 10 // room for the input, not for what is added
	if _, err := event.Normalize([]byte(raw), "", o); !errors.Is(err, event.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestNormalize_RejectsUnknownRouteType(t *testing.T) {
	_, err := event.Normalize([]byte(`{"userId":"u"}`), "purchase", opts())
	if e := asError(t, err); e.Field != "type" || e.Index != -1 {
		t.Errorf("got %+v", e)
	}
}

func TestNormalize_RejectsLibraryThatIsNotAnObject(t *testing.T) {
	for _, lib := range []string{`"outbox"`, `{"name":`, `{} {}`, ``} {
		o := opts()
		o.Library = []byte(lib)
		if _, err := event.Normalize([]byte(`{"type":"page","userId":"u"}`), "", o); !errors.Is(err, event.ErrBadLibrary) {
			t.Errorf("Library %q: err = %v, want ErrBadLibrary", lib, err)
		}
	}
}

func TestNormalize_DoesNotModifyItsInput(t *testing.T) {
	raw := []byte(`{"type":"identify","userId":"u","context":{"ip":"x"}}`)
	keep := bytes.Clone(raw)
	if _, err := event.Normalize(raw, "track", opts()); err == nil {
		t.Fatal("identify event on track route without event name was accepted")
	}
	if _, err := event.Normalize(raw, "", opts()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, keep) {
		t.Errorf("input changed: %s", raw)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// AppendNormalized writes after what dst holds, the bytes Normalize returns; on bad input it
// returns dst as it was.
func TestAppendNormalized_AppendsWhatNormalizeReturns(t *testing.T) {
	opt := event.Options{Now: func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) }}
	dst := []byte("before|")
	for _, raw := range []string{
		`{"type":"track","event":"A","userId":"u","messageId":"m1","timestamp":"2026-12-01T00:00:00Z"}`,
		`{"type":"identify","anonymousId":"a","messageId":"m2"}`,
	} {
		want, err := event.Normalize([]byte(raw), "", opt)
		if err != nil {
			t.Fatal(err)
		}
		before := len(dst)
		dst, err = event.AppendNormalized(dst, []byte(raw), "", opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := dst[before:]; !bytes.Equal(got, want) {
			t.Fatalf("AppendNormalized wrote %s, want %s", got, want)
		}
	}
	kept := len(dst)
	out, err := event.AppendNormalized(dst, []byte(`{"type":"track"}`), "", opt)
	if err == nil || len(out) != kept || !bytes.HasPrefix(out, []byte("before|")) {
		t.Fatalf("bad event: %d bytes, %v; want the %d bytes before and an error", len(out), err, kept)
	}
}
