package event_test

import (
	"encoding/json"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

// FuzzNormalizeScrub holds that an event accepted with scrub rules comes out as valid JSON in
// which every removed field is gone, and that ParseBatch accepts it too and writes valid JSON.
func FuzzNormalizeScrub(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"type":"track","event":"e","userId":"u","ip":1,"context":{"ip":"1.2.3.4","traits":{"email":"x"}},"properties":{"card":"4111","a":{"b":2}}}`))
	f.Add([]byte(`{"type":"identify","userId":"u","traits":{"email":"a@b","email":"c@d"},"context":{"ip":null}}`))
	scrub, err := event.NewScrub([]event.ScrubRule{
		{Path: "context.ip", Action: event.ScrubRemove},
		{Path: "context.traits.email", Action: event.ScrubHash},
		{Path: "traits.email", Action: event.ScrubMask},
		{Path: "properties.card", Action: event.ScrubRemove},
		{Path: "properties.a", Action: event.ScrubRemove},
		{Path: "ip", Action: event.ScrubRemove},
	}, hashKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		o := opts()
		o.Scrub = scrub
		out, err := event.Normalize(raw, "", o)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %s\nfrom %s", out, raw)
		}
		// Maps, not a struct: encoding/json matches struct fields without regard to case.
		var top, ctx, props map[string]json.RawMessage
		_ = json.Unmarshal(out, &top) // shapes vary; what decodes as objects is checked
		_ = json.Unmarshal(top["context"], &ctx)
		_ = json.Unmarshal(top["properties"], &props)
		if top["ip"] != nil || ctx["ip"] != nil || props["card"] != nil || props["a"] != nil {
			t.Fatalf("a removed field is left: %s\nfrom %s", out, raw)
		}
		body := append(append([]byte(`{"batch":[`), raw...), "]}"...)
		evs, err := event.ParseBatch(body, o)
		if err != nil {
			t.Fatalf("ParseBatch refused what Normalize took: %v\n%s", err, raw)
		}
		if !json.Valid(evs[0]) {
			t.Fatalf("ParseBatch output is not JSON: %s", evs[0])
		}
	})
}
