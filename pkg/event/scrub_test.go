package event_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

// hashKey is the hash rules' key in the tests.
var hashKey = []byte("0123456789abcdef-test-key")

// hmacHex is what a hash rule writes for text.
func hmacHex(text string) string {
	m := hmac.New(sha256.New, hashKey)
	m.Write([]byte(text))
	return `"` + hex.EncodeToString(m.Sum(nil)) + `"`
}

// mustScrub compiles rules written path=action.
func mustScrub(t testing.TB, rules ...string) *event.Scrub {
	t.Helper()
	var rs []event.ScrubRule
	for _, r := range rules {
		rule, err := event.ParseScrubRule(r)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, rule)
	}
	s, err := event.NewScrub(rs, hashKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sdkHead is the start of an event that needs no normalisation.
const sdkHead = `{"type":"track","event":"x","userId":"u1","messageId":"m1","timestamp":"2024-05-01T10:00:00.000Z",`

func TestNormalize_Scrub(t *testing.T) {
	lib := `"library":{"name":"l"}`
	for _, tc := range []struct {
		name  string
		rules []string
		in    string
		want  string
	}{
		{"mask keeps the length of a string and hides its characters", []string{"context.ip=mask"},
			sdkHead + `"context":{` + lib + `,"ip":"1.2.3.4"}}`,
			sdkHead + `"context":{` + lib + `,"ip":"*******"}}`},
		{"mask counts characters, not bytes, and decodes escapes", []string{"properties.name=mask"},
			sdkHead + `"properties":{"name":"J\u00e9r\u00f4me"},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"name":"******"},"context":{` + lib + `}}`},
		{"mask turns a number into a string of its length", []string{"properties.card=mask"},
			sdkHead + `"properties":{"card":4111111111111111},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"card":"****************"},"context":{` + lib + `}}`},
		{"hash writes the HMAC of the string's content", []string{"traits.email=hash"},
			sdkHead + `"traits":{"email":"a@example.com","plan":"pro"},"context":{` + lib + `}}`,
			sdkHead + `"traits":{"email":` + hmacHex("a@example.com") + `,"plan":"pro"},"context":{` + lib + `}}`},
		{"null is left as it is by mask and hash", []string{"traits.email=hash", "context.ip=mask"},
			sdkHead + `"traits":{"email":null},"context":{` + lib + `,"ip":null}}`,
			sdkHead + `"traits":{"email":null},"context":{` + lib + `,"ip":null}}`},
		{"remove a middle member takes the comma before it", []string{"properties.card=remove"},
			sdkHead + `"properties":{"a":1,"card":"4111","b":2},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"a":1,"b":2},"context":{` + lib + `}}`},
		{"remove a first member takes the comma after it", []string{"properties.card=remove"},
			sdkHead + `"properties":{"card":"4111","b":2},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"b":2},"context":{` + lib + `}}`},
		{"remove the only member leaves an empty object", []string{"properties.card=remove"},
			sdkHead + `"properties":{"card":"4111"},"context":{` + lib + `}}`,
			sdkHead + `"properties":{},"context":{` + lib + `}}`},
		{"remove every member of an object", []string{"properties.a=remove", "properties.b=remove", "properties.c=remove"},
			sdkHead + `"properties":{"a":1,"b":2,"c":3},"context":{` + lib + `}}`,
			sdkHead + `"properties":{},"context":{` + lib + `}}`},
		{"remove first and last around a kept member", []string{"properties.a=remove", "properties.c=remove"},
			sdkHead + `"properties":{"a":1,"b":2,"c":3},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"b":2},"context":{` + lib + `}}`},
		{"remove a top-level field", []string{"ip=remove"},
			sdkHead + `"ip":"1.2.3.4","context":{` + lib + `}}`,
			sdkHead + `"context":{` + lib + `}}`},
		{"a path goes through nested objects", []string{"context.traits.email=hash"},
			sdkHead + `"context":{` + lib + `,"traits":{"email":"a@b.c","name":"n"}}}`,
			sdkHead + `"context":{` + lib + `,"traits":{"email":` + hmacHex("a@b.c") + `,"name":"n"}}}`},
		{"a key repeated inside an object is scrubbed every time", []string{"properties.card=mask"},
			sdkHead + `"properties":{"card":"12","card":"345"},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"card":"**","card":"***"},"context":{` + lib + `}}`},
		{"a path stops at a value that is not an object", []string{"properties.card.number=mask"},
			sdkHead + `"properties":{"card":["1"]},"context":{` + lib + `}}`,
			sdkHead + `"properties":{"card":["1"]},"context":{` + lib + `}}`},
		{"keys are matched case and all", []string{"context.ip=mask"},
			sdkHead + `"context":{` + lib + `,"IP":"1.2.3.4"}}`,
			sdkHead + `"context":{` + lib + `,"IP":"1.2.3.4"}}`},
		{"an escaped key is matched decoded", []string{"context.ip=mask"},
			sdkHead + `"context":{` + lib + `,"\u0069p":"1.2"}}`,
			sdkHead + `"context":{` + lib + `,"\u0069p":"***"}}`},
		{"whitespace around removed members stays valid", []string{"properties.a=remove"},
			sdkHead + `"properties": { "a" : 1 , "b" : 2 },"context":{` + lib + `}}`,
			sdkHead + `"properties": { "b" : 2 },"context":{` + lib + `}}`},
		{"the library is added before a context whose only member is removed", []string{"context.ip=remove"},
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","timestamp":"2024-05-01T10:00:00.000Z","context":{"ip":"1.2.3.4"}}`,
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","timestamp":"2024-05-01T10:00:00.000Z","context":{"library":{"name":"outbox","version":"test"}}}`},
		{"the library is added with a comma before a context member kept", []string{"context.ip=remove"},
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","timestamp":"2024-05-01T10:00:00.000Z","context":{"ip":"1.2.3.4","locale":"fr"}}`,
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","timestamp":"2024-05-01T10:00:00.000Z","context":{"library":{"name":"outbox","version":"test"},"locale":"fr"}}`},
		{"a removed last top-level member before a filled-in timestamp", []string{"ip=remove"},
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","context":{` + lib + `},"ip":"1.2.3.4"}`,
			`{"type":"track","event":"x","userId":"u1","messageId":"m1","context":{` + lib + `},"timestamp":` + fixedStamp + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			o.Library = []byte(`{"name":"outbox","version":"test"}`)
			o.Scrub = mustScrub(t, tc.rules...)
			out, err := event.Normalize([]byte(tc.in), "", o)
			if err != nil {
				t.Fatal(err)
			}
			fields(t, out)
			if string(out) != tc.want {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
			// The batch intake scrubs the same way.
			evs, err := event.ParseBatch([]byte(`{"batch":[`+tc.in+`]}`), o)
			if err != nil {
				t.Fatal(err)
			}
			if string(evs[0]) != tc.want {
				t.Errorf("ParseBatch got  %s\nwant %s", evs[0], tc.want)
			}
		})
	}
}

func TestParseBatch_ScrubsBatchLevelContext(t *testing.T) {
	o := opts()
	o.Scrub = mustScrub(t, "context.ip=remove", "context.traits.email=hash", "context.locale=mask")
	body := `{"context":{"ip":"9.9.9.9","traits":{"email":"a@b.c"},"locale":"fr"},"batch":[` +
		sdkHead + `"context":{"library":{"name":"l"}}},` +
		sdkHead + `"context":{"library":{"name":"l"},"ip":"1.1.1.1"}}]}`
	evs, err := event.ParseBatch([]byte(body), o)
	if err != nil {
		t.Fatal(err)
	}
	want0 := sdkHead + `"context":{"traits":{"email":` + hmacHex("a@b.c") + `},"locale":"**","library":{"name":"l"}}}`
	want1 := sdkHead + `"context":{"traits":{"email":` + hmacHex("a@b.c") + `},"locale":"**","library":{"name":"l"}}}`
	if string(evs[0]) != want0 {
		t.Errorf("event 0: got  %s\nwant %s", evs[0], want0)
	}
	if string(evs[1]) != want1 {
		t.Errorf("event 1: got  %s\nwant %s", evs[1], want1)
	}
	for _, ev := range evs {
		if strings.Contains(string(ev), "9.9.9.9") || strings.Contains(string(ev), "1.1.1.1") || strings.Contains(string(ev), "a@b.c") {
			t.Errorf("scrubbed data left in %s", ev)
		}
	}
}

func TestNormalize_ScrubHashIsStable(t *testing.T) {
	o := opts()
	o.Scrub = mustScrub(t, "traits.email=hash")
	a, err := event.Normalize([]byte(`{"type":"identify","userId":"1","traits":{"email":"x@y.z"}}`), "", o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := event.Normalize([]byte(`{"type":"identify","userId":"2","traits":{"email":"x@y.z"}}`), "", o)
	if err != nil {
		t.Fatal(err)
	}
	if string(fields(t, a)["traits"]) != string(fields(t, b)["traits"]) {
		t.Errorf("the same email hashed differently: %s and %s", a, b)
	}
	other, err := event.NewScrub([]event.ScrubRule{{Path: "traits.email", Action: event.ScrubHash}}, []byte("another key of 16+ bytes"))
	if err != nil {
		t.Fatal(err)
	}
	o.Scrub = other
	c, err := event.Normalize([]byte(`{"type":"identify","userId":"1","traits":{"email":"x@y.z"}}`), "", o)
	if err != nil {
		t.Fatal(err)
	}
	if string(fields(t, a)["traits"]) == string(fields(t, c)["traits"]) {
		t.Errorf("two keys gave the same hash: %s", c)
	}
}

func TestParseScrubRule_RefusesWithASpecificError(t *testing.T) {
	for _, tc := range []struct {
		name, rule, want string
	}{
		{"unknown action", "context.ip=blur", `unknown action "blur": use remove, mask or hash`},
		{"no action", "context.ip", "write path=action"},
		{"empty path", "=mask", "the path is empty"},
		{"doubled dot", "context..ip=mask", "empty key"},
		{"trailing dot", "context.ip.=mask", "empty key"},
		{"a field outbox reads", "userId=hash", "outbox reads it"},
		{"the whole context", "context=remove", "scrub the fields inside it"},
		{"context.library", "context.library=remove", "outbox fills it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := event.ParseScrubRule(tc.rule)
			if err == nil || !errors.Is(err, event.ErrBadScrubRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseScrubRule(%q) = %v; want an error containing %q", tc.rule, err, tc.want)
			}
		})
	}
}

func TestNewScrub_RefusesConflictsAndAMissingKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []event.ScrubRule
		key   []byte
		want  string
	}{
		{"a path twice", []event.ScrubRule{{"context.ip", event.ScrubMask}, {"context.ip", event.ScrubRemove}}, nil, "two rules"},
		{"a path inside another", []event.ScrubRule{{"traits", event.ScrubRemove}, {"traits.email", event.ScrubHash}}, hashKey, "inside"},
		{"a path around another", []event.ScrubRule{{"traits.email", event.ScrubMask}, {"traits", event.ScrubRemove}}, nil, "other rules scrub fields inside"},
		{"hash without a key", []event.ScrubRule{{"traits.email", event.ScrubHash}}, nil, "needs a hash key"},
		{"hash with a short key", []event.ScrubRule{{"traits.email", event.ScrubHash}}, []byte("short"), "at least 16 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := event.NewScrub(tc.rules, tc.key)
			if err == nil || !errors.Is(err, event.ErrBadScrubRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewScrub = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNormalize_SuppressedUser(t *testing.T) {
	o := opts()
	o.Suppress = event.NewIDSet("u-gone", "42", "anon-gone")
	for _, tc := range []struct {
		name       string
		in         string
		suppressed bool
	}{
		{"userId held", `{"type":"track","event":"e","userId":"u-gone"}`, true},
		{"numeric userId held as its text", `{"type":"track","event":"e","userId":42}`, true},
		{"anonymousId held", `{"type":"track","event":"e","anonymousId":"anon-gone"}`, true},
		{"escaped id decoded", `{"type":"track","event":"e","userId":"u-g\u006fne"}`, true},
		{"other user kept", `{"type":"track","event":"e","userId":"u-kept"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := event.Normalize([]byte(tc.in), "", o)
			if tc.suppressed {
				if !errors.Is(err, event.ErrSuppressed) || out != nil {
					t.Fatalf("Normalize = %s, %v; want ErrSuppressed", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseBatchSuppressed_LeavesOutAndCounts(t *testing.T) {
	o := opts()
	o.Suppress = event.NewIDSet("gone")
	body := `{"batch":[{"type":"track","event":"a","userId":"gone"},{"type":"track","event":"b","userId":"kept"},{"type":"identify","anonymousId":"gone"}]}`
	evs, n, err := event.ParseBatchSuppressed([]byte(body), o)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(evs) != 1 || string(fields(t, evs[0])["userId"]) != `"kept"` {
		t.Fatalf("got %d events, %d suppressed: %q", len(evs), n, evs)
	}
	// A bad event fails the request whole, suppressed ones included.
	bad := `{"batch":[{"type":"track","event":"a","userId":"gone"},{"type":"track","userId":"kept"}]}`
	if _, _, err := event.ParseBatchSuppressed([]byte(bad), o); asError(t, err).Index != 1 {
		t.Fatalf("err = %v; want event 1 refused", err)
	}
}

func TestUserMatcher_Match(t *testing.T) {
	m := event.UserMatcher{Users: event.NewIDSet("u1", "7"), Anonymous: event.NewIDSet("a1")}
	for _, tc := range []struct {
		ev   string
		want bool
	}{
		{`{"type":"track","userId":"u1"}`, true},
		{`{"type":"track","userId":7}`, true},
		{`{"type":"track","anonymousId":"a1","userId":"zz"}`, true},
		{`{"type":"track","anonymousId":"u1"}`, false},
		{`{"type":"track","userId":"a1"}`, false},
		{`{"type":"track","properties":{"userId":"u1"}}`, false},
		{`not json`, false},
	} {
		if got := m.Match([]byte(tc.ev)); got != tc.want {
			t.Errorf("Match(%s) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}
