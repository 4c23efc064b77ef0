package httpdest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/httpdest"
)

func TestAppendBody_SplicesEventsAsStored(t *testing.T) {
	sentAt := time.Date(2025, 3, 4, 5, 6, 7, 891_000_000, time.FixedZone("X", 3600))
	tests := []struct {
		name   string
		events [][]byte
		want   string
	}{
		{"one event", [][]byte{[]byte(`{"a":1}`)}, `{"batch":[{"a":1}],"sentAt":"2025-03-04T04:06:07.891Z"}`},
		{"events are kept byte for byte, spacing included", [][]byte{[]byte(`{ "a" : 1 }`), []byte(`{"b":"é\u00e9"}`)},
			`{"batch":[{ "a" : 1 },{"b":"é\u00e9"}],"sentAt":"2025-03-04T04:06:07.891Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := httpdest.AppendBody(nil, tt.events, sentAt)
			if string(got) != tt.want {
				t.Errorf("body = %s, want %s", got, tt.want)
			}
			if n := httpdest.EncodedSize(tt.events); n != len(got) {
				t.Errorf("EncodedSize = %d, body is %d bytes", n, len(got))
			}
			if !json.Valid(got) {
				t.Errorf("body is not valid JSON")
			}
		})
	}
}
