package event_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

func TestError_MessageNamesIndexFieldAndReason(t *testing.T) {
	cases := []struct {
		name string
		err  *event.Error
		want string
	}{
		{"event with a field", &event.Error{Index: 3, Field: "userId", Reason: "must be a string"}, "event 3: userId: must be a string"},
		{"event without a field", &event.Error{Index: 0, Reason: "an event must be a JSON object"}, "event 0: an event must be a JSON object"},
		{"request-level error", &event.Error{Index: -1, Field: "batch", Reason: "is required"}, "request: batch: is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestError_MatchesSentinelsThroughWrapping(t *testing.T) {
	_, err := event.Normalize([]byte(`{"type":"page","userId":"u","p":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`), "",
		event.Options{Limits: event.Limits{MaxEventBytes: 64}})
	wrapped := fmt.Errorf("ingest: %w", err)
	if !errors.Is(wrapped, event.ErrTooLarge) || !errors.Is(wrapped, event.ErrInvalid) {
		t.Errorf("%v does not match ErrTooLarge and ErrInvalid", wrapped)
	}
	_, err = event.Normalize([]byte(`{}`), "", event.Options{})
	if !errors.Is(err, event.ErrInvalid) || errors.Is(err, event.ErrTooLarge) {
		t.Errorf("%v: want ErrInvalid only", err)
	}
}

func TestError_ReasonsSayWhatToDo(t *testing.T) {
	cases := []struct{ name, raw, want string }{
		{"missing id names both fields", `{"type":"page"}`, "event 0: userId: userId or anonymousId is required: set one to a non-empty string"},
		{"bad type lists the types", `{"type":"buy","userId":"u"}`, `event 0: type: "buy" is not a known type: use one of track, identify, page, screen, group, alias`},
		{"bad JSON gives the offset", `{"type":"page",}`, "event 0: invalid JSON at byte 15 of the event: expected a string key; send well-formed JSON"},
		{"bad timestamp shows an example", `{"type":"page","userId":"u","timestamp":"now"}`,
			`event 0: timestamp: "now" is not an RFC 3339 time such as 2024-05-01T12:00:00.000Z (or leave it out and the intake time is used)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := event.Normalize([]byte(tc.raw), "", opts())
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v\nwant    %s", err, tc.want)
			}
		})
	}
}
