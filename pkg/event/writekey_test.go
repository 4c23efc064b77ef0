package event_test

import (
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

func TestWriteKey_ReadsTheTopLevelStringOnly(t *testing.T) {
	cases := []struct {
		name, body string
		want       string
		ok         bool
	}{
		{"before the batch", `{"writeKey":"wk","batch":[{"writeKey":"inner"}]}`, "wk", true},
		{"after the batch", ` {"batch":[{"writeKey":"inner","p":{"a":[1,{"b":"}"}]}}], "writeKey" : "wk"}`, "wk", true},
		{"escaped", `{"writeKey":"w\u006b\"q"}`, `wk"q`, true},
		{"only inside an event", `{"batch":[{"writeKey":"inner"}]}`, "", false},
		{"not a string", `{"writeKey":7,"batch":[]}`, "", false},
		{"not an object", `["writeKey","wk"]`, "", false},
		{"broken before the key", `{"batch":[{]}, "writeKey":"wk"}`, "", false},
		{"broken after the key", `{"writeKey":"wk",`, "", false},
		{"data after the object", `{"writeKey":"wk"} x`, "", false},
		{"empty", ``, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := event.WriteKey([]byte(tc.body))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("WriteKey(%s) = %q, %v; want %q, %v", tc.body, got, ok, tc.want, tc.ok)
			}
		})
	}
}
