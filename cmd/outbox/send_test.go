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

func TestReadEvents_DashReadsStandardInputInItsPlace(t *testing.T) {
	stdin := "{\"event\":\"in1\",\"userId\":\"u\"}\n{\"event\":\"in2\",\"userId\":\"u\"}\n"
	tests := []struct {
		name    string
		args    []string
		want    []string // the events' names, in order
		wantErr string
	}{
		{"a lone dash reads every line", []string{"-"}, []string{"in1", "in2"}, ""},
		{"no arguments read every line", nil, []string{"in1", "in2"}, ""},
		{"a dash among arguments keeps their order", []string{`{"event":"a1","userId":"u"}`, "-", `{"event":"a3","userId":"u"}`}, []string{"a1", "in1", "in2", "a3"}, ""},
		{"a second dash is refused", []string{"-", "-"}, nil, `argument 2: "-" (standard input) is given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := readEvents(tt.args, strings.NewReader(stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err) != exitUsage {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range evs {
				var e struct{ Event string }
				_ = json.Unmarshal(ev, &e)
				got = append(got, e.Event)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("events %v, want %v", got, tt.want)
			}
		})
	}
}
