package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReadEvents_InfersTypeFromFields(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"an explicit type is kept", `{"type":"screen","name":"Home","userId":"u"}`, "screen"},
		{"event means track", `{"event":"Clicked","userId":"u"}`, "track"},
		{"groupId means group", `{"groupId":"g","userId":"u"}`, "group"},
		{"previousId means alias", `{"previousId":"p","userId":"u"}`, "alias"},
		{"traits mean identify", `{"traits":{"a":1},"userId":"u"}`, "identify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := readEvents([]string{tc.in}, nil)
			if err != nil || len(evs) != 1 {
				t.Fatalf("readEvents = %v, %v", evs, err)
			}
			var got struct{ Type string }
			if err := json.Unmarshal(evs[0], &got); err != nil || got.Type != tc.want {
				t.Fatalf("type = %q (%v), want %q", got.Type, err, tc.want)
			}
		})
	}
}

func TestReadEvents_StdinLinesArraysAndErrors(t *testing.T) {
	evs, err := readEvents(nil, strings.NewReader("{\"event\":\"a\",\"userId\":\"u\"}\n\n[{\"event\":\"b\",\"userId\":\"u\"},{\"event\":\"c\",\"userId\":\"u\"}]\n"))
	if err != nil || len(evs) != 3 {
		t.Fatalf("readEvents from stdin = %d events, %v; want 3 (blank lines skipped, arrays expanded)", len(evs), err)
	}
	_, err = readEvents(nil, strings.NewReader("{\"event\":\"a\",\"userId\":\"u\"}\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "stdin line 2") || exitCode(err) != exitUsage {
		t.Fatalf("bad line: err %v, want a usage error naming stdin line 2", err)
	}
	_, err = readEvents([]string{`{"userId":"u"}`}, nil)
	if err == nil || !strings.Contains(err.Error(), `"type"`) {
		t.Fatalf("untyped event: err %v, want one asking for a type", err)
	}
}
