package store_test

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
)

func TestDeadFilter_Match(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) // a dead batch's time: its id's second
	http429 := store.DeadBatch{At: at, Info: store.DeadInfo{Reason: store.DeadBudgetSpent, Status: 429, Code: "429", Source: "a"}}
	kafka := store.DeadBatch{At: at, Info: store.DeadInfo{Reason: store.DeadRejected, Code: "TOPIC_AUTHORIZATION_FAILED", Source: "default"}}
	network := store.DeadBatch{At: at, Info: store.DeadInfo{Reason: store.DeadBudgetSpent, ErrorClass: "maybe_sent", Code: "maybe_sent", Source: "default"}}
	tests := []struct {
		name string
		f    store.DeadFilter
		d    store.DeadBatch
		want bool
	}{
		{"the zero filter matches every batch", store.DeadFilter{}, http429, true},
		{"source matches the batch's source", store.DeadFilter{Source: "a"}, http429, true},
		{"another source does not match", store.DeadFilter{Source: "b"}, http429, false},
		{"default matches a batch whose source was left out", store.DeadFilter{Source: "default"}, store.DeadBatch{At: at}, true},
		{"since at the batch's second matches", store.DeadFilter{Since: at}, http429, true},
		{"since later in the batch's second still matches (times are to the second)", store.DeadFilter{Since: at.Add(600 * time.Millisecond)}, http429, true},
		{"since the next second does not match", store.DeadFilter{Since: at.Add(time.Second)}, http429, false},
		{"until after the batch matches", store.DeadFilter{Until: at.Add(time.Second)}, http429, true},
		{"until at the batch's time does not match (until is exclusive)", store.DeadFilter{Until: at}, http429, false},
		{"a window around the batch matches", store.DeadFilter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour)}, http429, true},
		{"a window before the batch does not match", store.DeadFilter{Since: at.Add(-2 * time.Hour), Until: at.Add(-time.Hour)}, http429, false},
		{"status matches the HTTP status", store.DeadFilter{Status: "429"}, http429, true},
		{"status matches the HTTP status of a record without a code", store.DeadFilter{Status: "429"}, store.DeadBatch{At: at, Info: store.DeadInfo{Status: 429}}, true},
		{"another status does not match", store.DeadFilter{Status: "500"}, http429, false},
		{"status matches a Kafka error name", store.DeadFilter{Status: "TOPIC_AUTHORIZATION_FAILED"}, kafka, true},
		{"a Kafka error name matches whatever its case", store.DeadFilter{Status: "topic_authorization_failed"}, kafka, true},
		{"status matches the network error class", store.DeadFilter{Status: "maybe_sent"}, network, true},
		{"an HTTP status does not match a batch that got none", store.DeadFilter{Status: "429"}, network, false},
		{"reason matches the batch's reason", store.DeadFilter{Reason: store.DeadRejected}, kafka, true},
		{"another reason does not match", store.DeadFilter{Reason: store.DeadRejected}, http429, false},
		{"every field set must match", store.DeadFilter{Source: "a", Status: "429", Reason: store.DeadBudgetSpent, Since: at}, http429, true},
		{"one field off is no match", store.DeadFilter{Source: "a", Status: "429", Reason: store.DeadTooLarge}, http429, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(tt.d); got != tt.want {
				t.Errorf("%+v.Match(%+v) = %v, want %v", tt.f, tt.d.Info, got, tt.want)
			}
		})
	}
}
