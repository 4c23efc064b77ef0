package sink_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
)

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want sink.Script
	}{
		{"empty spec accepts everything", "", sink.Script{}},
		{"steps repeat with xN and keep their order", "503x2,429:ra=1,reset-after-body,200",
			sink.Script{Steps: []sink.Response{{Status: 503}, {Status: 503}, {Status: 429, RetryAfter: "1"},
				{Reset: sink.ResetAfterBody}, {Status: 200}}}},
		{"xN also works as a modifier", "429:ra=1:x2",
			sink.Script{Steps: []sink.Response{{Status: 429, RetryAfter: "1"}, {Status: 429, RetryAfter: "1"}}}},
		{"percentages are chances with a seed", "503:20%,429:5%:ra=1,seed=7",
			sink.Script{Seed: 7, Chances: []sink.Chance{{P: 0.2, Response: sink.Response{Status: 503}},
				{P: 0.05, Response: sink.Response{Status: 429, RetryAfter: "1"}}}}},
		{"default replaces the 200 after the steps", "500x2,503:ra=2:default",
			sink.Script{Steps: []sink.Response{{Status: 500}, {Status: 500}}, Default: sink.Response{Status: 503, RetryAfter: "2"}}},
		{"loc takes the rest of the item, colons included", "307:loc=http://127.0.0.1:9/v1/batch,ok",
			sink.Script{Steps: []sink.Response{{Status: 307, Location: "http://127.0.0.1:9/v1/batch"}, {Status: 200}}}},
		{"body takes the rest of the item", `400:body={"error":"bad"}`,
			sink.Script{Steps: []sink.Response{{Status: 400, Body: `{"error":"bad"}`}}}},
		{"ra=date is a relative HTTP-date", "429:ra=date+30s,503:ra=date-1m",
			sink.Script{Steps: []sink.Response{{Status: 429, RetryAfterIn: 30 * time.Second}, {Status: 503, RetryAfterIn: -time.Minute}}}},
		{"garbage Retry-After is passed raw", "503:ra=soon,503:ra=-1",
			sink.Script{Steps: []sink.Response{{Status: 503, RetryAfter: "soon"}, {Status: 503, RetryAfter: "-1"}}}},
		{"reset, hang and delay", "reset,hang,200:delay=50ms",
			sink.Script{Steps: []sink.Response{{Reset: sink.ResetBeforeBody}, {Hang: true}, {Status: 200, Delay: 50 * time.Millisecond}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sink.ParseFaults(tc.spec)
			if err != nil {
				t.Fatalf("ParseFaults(%q): %v", tc.spec, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseFaults(%q)\n got %+v\nwant %+v", tc.spec, got, tc.want)
			}
		})
	}
}

func TestParseFaults_RejectsBadSpecs(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"status out of range", "600"},
		{"unknown word", "boom"},
		{"empty item", "503,,200"},
		{"probabilities over 100%", "503:60%,429:50%"},
		{"percentage out of range", "503:120%"},
		{"unknown modifier", "503:retry=1"},
		{"repeat count with a chance", "503x2:10%"},
		{"two defaults", "503:default,429:default"},
		{"zero repeat", "503x0"},
		{"bad delay", "200:delay=soon"},
		{"bad seed", "seed=-1"},
		{"bad relative date", "429:ra=date+soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := sink.ParseFaults(tc.spec); !errors.Is(err, sink.ErrBadFaultSpec) {
				t.Errorf("ParseFaults(%q) = %v, want ErrBadFaultSpec", tc.spec, err)
			}
		})
	}
}
