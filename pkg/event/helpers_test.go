package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/event"
)

// fixedNow is the intake time of the tests.
var fixedNow = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

// fixedStamp is fixedNow as a normalised timestamp.
const fixedStamp = `"2024-05-01T10:00:00.123Z"`

// opts returns Options with the fixed clock.
func opts() event.Options {
	return event.Options{Now: func() time.Time { return fixedNow }}
}

// fields decodes the top level of a JSON object, failing the test when it is
// not one.
func fields(t testing.TB, b []byte) map[string]json.RawMessage {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("output is not valid JSON: %s", b)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("output is not a JSON object: %v: %s", err, b)
	}
	return m
}

// asError returns err as *event.Error, failing the test when it is not one.
func asError(t testing.TB, err error) *event.Error {
	t.Helper()
	var e *event.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *event.Error", err, err)
	}
	if !errors.Is(err, event.ErrInvalid) {
		t.Fatalf("error %v does not match ErrInvalid", err)
	}
	return e
}

// sameButMessageID reports whether two events hold the same fields, messageId aside (a
// normalised event without one gets a new KSUID each time).
func sameButMessageID(t *testing.T, a, b []byte) bool {
	t.Helper()
	m, n := fields(t, a), fields(t, b)
	delete(m, "messageId")
	delete(n, "messageId")
	return bytes.Equal(mustJSON(t, m), mustJSON(t, n))
}
