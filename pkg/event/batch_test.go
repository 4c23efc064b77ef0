package event_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/event/eventtest"
)

func TestParseBatch_NormalisesEveryEventInOrder(t *testing.T) {
	body := eventtest.Batch(50, 0, eventtest.TrackBare)
	evs, err := event.ParseBatch(body, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 50 {
		t.Fatalf("got %d events, want 50", len(evs))
	}
	for i, ev := range evs {
		single, err := event.Normalize(eventtest.TrackBare(i), "", opts())
		if err != nil {
			t.Fatal(err)
		}
		if !sameButMessageID(t, ev, single) {
			t.Errorf("event %d = %s, want it as Normalize makes it: %s", i, ev, single)
		}
	}
}

func TestParseBatch_EventsAreIndependentSlices(t *testing.T) {
	evs, err := event.ParseBatch(eventtest.Batch(3, 0, eventtest.Track), opts())
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.Clone(evs[1])
	_ = append(evs[0], "garbage"...)
	if !bytes.Equal(evs[1], second) {
		t.Errorf("appending to event 0 changed event 1: %s", evs[1])
	}
}

func TestParseBatch_MergesBatchContextAndIntegrations(t *testing.T) {
	cases := []struct {
		name, body, field, want string
	}{
		{"batch context is added to an event without one",
			`{"batch":[{"type":"page","userId":"u"}],"context":{"ip":"1.1.1.1"}}`,
			"context", `{"ip":"1.1.1.1","library":{"name":"lib"}}`},
		{"event context keys win over the batch's",
			`{"batch":[{"type":"page","userId":"u","context":{"ip":"2.2.2.2"}}],"context":{"ip":"1.1.1.1","locale":"en"}}`,
			"context", `{"locale":"en","library":{"name":"lib"},"ip":"2.2.2.2"}`},
		{"merge is shallow: the event's nested object wins whole",
			`{"batch":[{"type":"page","userId":"u","context":{"page":{"url":"e"}}}],"context":{"page":{"url":"b","title":"t"}}}`,
			"context", `{"library":{"name":"lib"},"page":{"url":"e"}}`},
		{"batch library counts when the event has none",
			`{"batch":[{"type":"page","userId":"u","context":{"ip":"x"}}],"context":{"library":{"name":"analytics-node"}}}`,
			"context", `{"library":{"name":"analytics-node"},"ip":"x"}`},
		{"event library wins over the batch's",
			`{"batch":[{"type":"page","userId":"u","context":{"library":{"name":"ev"}}}],"context":{"library":{"name":"batch"}}}`,
			"context", `{"library":{"name":"ev"}}`},
		{"batch context replaces a null context",
			`{"batch":[{"type":"page","userId":"u","context":null}],"context":{"ip":"x"}}`,
			"context", `{"ip":"x","library":{"name":"lib"}}`},
		{"batch integrations are added to an event without any",
			`{"batch":[{"type":"page","userId":"u"}],"integrations":{"All":false,"Mixpanel":true}}`,
			"integrations", `{"All":false,"Mixpanel":true}`},
		{"event integrations keys win over the batch's",
			`{"batch":[{"type":"page","userId":"u","integrations":{"All":true}}],"integrations":{"All":false,"Mixpanel":true}}`,
			"integrations", `{"Mixpanel":true,"All":true}`},
		{"batch integrations replace null integrations",
			`{"batch":[{"type":"page","userId":"u","integrations":null}],"integrations":{"X":1}}`,
			"integrations", `{"X":1}`},
		{"batch members are copied byte for byte",
			`{"batch":[{"type":"page","userId":"u"}],"context":{ "traits" : {"a" : 1.0e0} }}`,
			"context", `{"traits" : {"a" : 1.0e0},"library":{"name":"lib"}}`},
		{"null batch context is ignored",
			`{"batch":[{"type":"page","userId":"u"}],"context":null}`,
			"context", `{"library":{"name":"lib"}}`},
		{"many batch keys still merge",
			`{"batch":[{"type":"page","userId":"u","context":{"k3":"ev"}}],"context":{` + manyKeys(40) + `}}`,
			"context", `{` + strings.Replace(manyKeys(40), `"k3":3,`, "", 1) + `,"library":{"name":"lib"},"k3":"ev"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			o.Library = []byte(`{"name":"lib"}`)
			evs, err := event.ParseBatch([]byte(tc.body), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 {
				t.Fatalf("got %d events", len(evs))
			}
			if got := string(fields(t, evs[0])[tc.field]); got != tc.want {
				t.Errorf("%s = %s\nwant %s", tc.field, got, tc.want)
			}
		})
	}
}

func TestParseBatch_MergeMarksDoNotLeakBetweenEvents(t *testing.T) {
	body := `{"batch":[{"type":"page","userId":"u","context":{"ip":"ev"}},{"type":"page","userId":"u"}],"context":{"ip":"batch"}}`
	evs, err := event.ParseBatch([]byte(body), opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(fields(t, fields(t, evs[1])["context"])["ip"]); got != `"batch"` {
		t.Errorf("second event's context.ip = %s, want the batch's", got)
	}
}

func TestParseBatch_RejectsTheWholeRequestNamingTheBadEvent(t *testing.T) {
	good := `{"type":"page","userId":"u"}`
	cases := []struct {
		name, body string
		index      int
		field      string
	}{
		{"a rule broken by the third event", `{"batch":[` + good + `,` + good + `,{"type":"page"}]}`, 2, "userId"},
		{"first event bad", `{"batch":[{"type":"x","userId":"u"},` + good + `]}`, 0, "type"},
		{"malformed JSON inside an event", `{"batch":[` + good + `,{"type":"page","userId":tru}]}`, 1, "userId"},
		{"mismatched bracket inside an event", `{"batch":[` + good + `,{"type":"page","userId":"u"]}]}`, 1, ""},
		{"an element that is not an object", `{"batch":[` + good + `,42]}`, 1, ""},
		{"a null element", `{"batch":[null]}`, 0, ""},
		{"trailing comma in the batch", `{"batch":[` + good + `,]}`, 1, ""},
		{"context of the event not an object", `{"batch":[` + good + `,{"type":"page","userId":"u","context":1}]}`, 1, "context"},
		{"duplicate key in an event", `{"batch":[{"type":"page","type":"page","userId":"u"}]}`, 0, "type"},
		{"body is not an object", `[` + good + `]`, -1, ""},
		{"body is empty", ``, -1, ""},
		{"batch is missing", `{"events":[` + good + `]}`, -1, "batch"},
		{"batch is not an array", `{"batch":{"0":` + good + `}}`, -1, "batch"},
		{"batch is null", `{"batch":null}`, -1, "batch"},
		{"batch-level context is not an object", `{"batch":[` + good + `],"context":"x"}`, -1, "context"},
		{"batch-level integrations is not an object", `{"batch":[` + good + `],"integrations":[]}`, -1, "integrations"},
		{"duplicate key in the batch-level context", `{"batch":[` + good + `],"context":{"a":1,"a":2}}`, -1, "context"},
		{"duplicate top-level batch", `{"batch":[` + good + `],"batch":[]}`, -1, "batch"},
		{"malformed ignored field", `{"batch":[` + good + `],"sentAt":2024-01-01}`, -1, ""},
		{"unterminated batch", `{"batch":[` + good, -1, ""},
		{"trailing data after the body", `{"batch":[` + good + `]}x`, -1, ""},
		{"missing comma between events", `{"batch":[` + good + ` ` + good + `]}`, -1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := event.ParseBatch([]byte(tc.body), opts())
			if err == nil {
				t.Fatalf("accepted: %q", evs)
			}
			if evs != nil {
				t.Errorf("returned %d events with the error", len(evs))
			}
			e := asError(t, err)
			if e.Index != tc.index || e.Field != tc.field {
				t.Errorf("got Index %d Field %q, want Index %d Field %q (%v)", e.Index, e.Field, tc.index, tc.field, err)
			}
		})
	}
}

func TestParseBatch_TooLargeEventNamesItsIndex(t *testing.T) {
	big := `{"type":"page","userId":"u","p":"` + strings.Repeat("x", 400) + `"}`
	body := `{"batch":[{"type":"page","userId":"u"},` + big + `]}`
	o := opts()
	o.Limits.MaxEventBytes = 300
	_, err := event.ParseBatch([]byte(body), o)
	if !errors.Is(err, event.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if e := asError(t, err); e.Index != 1 {
		t.Errorf("Index = %d, want 1", e.Index)
	}
	if !strings.HasPrefix(err.Error(), "event 1: ") {
		t.Errorf("Error() = %q does not name event 1", err)
	}
}

func TestParseBatch_EmptyBatchIsAcceptedWithNoEvents(t *testing.T) {
	for _, body := range []string{`{"batch":[]}`, ` { "batch" : [ ] , "writeKey":"k" } `} {
		evs, err := event.ParseBatch([]byte(body), opts())
		if err != nil || len(evs) != 0 {
			t.Errorf("%s: got %d events, %v; want none and no error", body, len(evs), err)
		}
	}
}

func TestParseBatch_IgnoresOtherTopLevelFields(t *testing.T) {
	body := `{"writeKey":"wk","sentAt":"2024-05-01T12:00:00Z","messageId":"batch-1","metadata":{"x":[1,2]},` +
		`"batch":[{"type":"page","userId":"u","messageId":"m"}]}`
	evs, err := event.ParseBatch([]byte(body), opts())
	if err != nil {
		t.Fatal(err)
	}
	m := fields(t, evs[0])
	for _, k := range []string{"writeKey", "sentAt", "metadata"} {
		if _, ok := m[k]; ok {
			t.Errorf("batch-level %s leaked into the event: %s", k, evs[0])
		}
	}
	if string(m["messageId"]) != `"m"` {
		t.Errorf("messageId = %s", m["messageId"])
	}
}

func TestParseBatch_UsesOneIntakeTimeForTheRequest(t *testing.T) {
	calls := 0
	o := opts()
	o.Now = func() time.Time { calls++; return fixedNow }
	if _, err := event.ParseBatch(eventtest.Batch(10, 0, eventtest.TrackBare), o); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Now called %d times for one request, want 1", calls)
	}
}

// manyKeys returns "k0":0,"k1":1,… for n keys.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + itoa(i) + `":` + itoa(i))
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseBatch_BigBatchContextMergedIntoEveryEvent(t *testing.T) {
	// 200 events that each receive a 20 KB batch-level context: every event
	// is within the 32 KB limit and carries the whole context.
	ctx := `{"blob":"` + strings.Repeat("c", 20000) + `"}`
	body := `{"context":` + ctx + `,"batch":[` + strings.Repeat(`{"type":"page","userId":"u"},`, 199) + `{"type":"page","userId":"u"}]}`
	evs, err := event.ParseBatch([]byte(body), opts())
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if !bytes.Contains(ev, []byte(`"blob":"cccc`)) || len(ev) < 20000 {
			t.Fatalf("event %d lacks the batch context: %d bytes", i, len(ev))
		}
	}
}

func TestEventtest_TrackEventsAreExactly535Bytes(t *testing.T) {
	for _, i := range []int{0, 9, 12345, 999999999} {
		for name, ev := range map[string][]byte{"Track": eventtest.Track(i), "TrackBare": eventtest.TrackBare(i)} {
			if len(ev) != eventtest.TrackSize {
				t.Errorf("%s(%d) is %d bytes, want %d", name, i, len(ev), eventtest.TrackSize)
			}
			if _, err := event.Normalize(ev, "", opts()); err != nil {
				t.Errorf("%s(%d) is not a valid event: %v", name, i, err)
			}
		}
	}
}

func TestParseBatch_EventsNormalisationLeavesAsSentAreTheBodysBytes(t *testing.T) {
	// Events 0 and 2 carry everything (as SDKs send them); event 1 lacks its messageId,
	// timestamp and context.library.
	body := []byte(`{"batch":[` + string(eventtest.Track(0)) + `,` + string(eventtest.TrackBare(1)) + `,` +
		string(eventtest.Track(2)) + `]}`)
	sent := bytes.Clone(body)
	evs, err := event.ParseBatch(body, opts())
	if err != nil {
		t.Fatal(err)
	}
	within := func(ev []byte) bool {
		return len(ev) > 0 && &ev[0] == &body[bytes.Index(body, ev)]
	}
	for i, want := range [][]byte{eventtest.Track(0), nil, eventtest.Track(2)} {
		ev := evs[i]
		if cap(ev) != len(ev) {
			t.Errorf("event %d: cap %d, len %d: appending to it could write past it", i, cap(ev), len(ev))
		}
		if want == nil {
			if bytes.Contains(body, ev) {
				t.Errorf("event %d was normalised but is in the body as is: %s", i, ev)
			}
			single, err := event.Normalize(eventtest.TrackBare(1), "", opts())
			if err != nil {
				t.Fatal(err)
			}
			if !sameButMessageID(t, ev, single) {
				t.Errorf("event %d = %s, want it as Normalize makes it: %s", i, ev, single)
			}
			continue
		}
		if !bytes.Equal(ev, want) || !within(ev) {
			t.Errorf("event %d = %s, want its bytes in the body, as sent", i, ev)
		}
	}
	for i := range evs {
		_ = append(evs[i], "garbage"...)
	}
	if !bytes.Equal(body, sent) {
		t.Errorf("appending to the events changed the body")
	}
}
