package main

import (
	"encoding/json"
	"fmt"
	"testing"
)

// decodeBatch parses a POST /v1/batch body and returns its events as raw JSON.
func decodeBatch(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var b struct {
		Batch []json.RawMessage `json:"batch"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	return b.Batch
}

func messageID(t *testing.T, ev json.RawMessage) string {
	t.Helper()
	var e struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal(ev, &e); err != nil {
		t.Fatalf("event is not JSON: %v", err)
	}
	return e.MessageID
}

func TestBatchBodyPatchWritesEachRequestsMessageIDsAndKeepsEventSize(t *testing.T) {
	for name, gen := range map[string]payloadFunc{"realTrack": realTrack} {
		for _, tc := range []struct {
			name         string
			first, n     int
			patchAt, use int
		}{
			{"full request, small numbers", 0, 100, 0, 100},
			{"full request, numbers wider than the template's", 5, 100, 987_654_300, 100},
			{"last request shorter than the body", 0, 100, 999_900, 37},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				bb, err := newBatchBody(gen, tc.first, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				evs := decodeBatch(t, bb.patch(tc.patchAt, tc.use))
				if len(evs) != tc.use {
					t.Fatalf("%d events, want %d", len(evs), tc.use)
				}
				for j, ev := range evs {
					if want := len(gen(tc.first + j)); len(ev) != want {
						t.Errorf("event %d is %d bytes, want %d (patching keeps the size)", j, len(ev), want)
					}
					if got, want := messageID(t, ev), fmt.Sprintf("msg-%012d", tc.patchAt+j); got != want {
						t.Errorf("event %d messageId %q, want %q", j, got, want)
					}
				}
			})
		}
	}
}

func TestBatchBodyRepatchLeavesNoDigitsOfThePreviousRequest(t *testing.T) {
	bb, err := newBatchBody(realTrack, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	bb.patch(123_456_789, 10)
	evs := decodeBatch(t, bb.patch(7, 10))
	if got := messageID(t, evs[3]); got != "msg-000000000010" {
		t.Errorf("messageId %q after a second patch, want msg-000000000010", got)
	}
}
