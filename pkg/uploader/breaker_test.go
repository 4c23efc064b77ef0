package uploader

import (
	"testing"
	"time"
)

func TestBreaker_States(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	// The probe schedule of the table: the n-th paced probe n seconds after the first failure.
	pace := func(n int) time.Duration { return time.Duration(n) * time.Second }
	// An event: an attempt begins (allow must say yes), or an attempt ends with a health at
	// a time; after the events, allow is asked at a time with sending attempts in flight.
	type ev struct {
		begin bool
		h     health
		sent  uint64 // the attempt's number
		inFly int    // attempts still in flight after an answer
		at    time.Time
	}
	down := func(sent uint64, inFly int, at time.Time) ev {
		return ev{h: healthDown, sent: sent, inFly: inFly, at: at}
	}
	up := func(sent uint64, inFly int) ev { return ev{h: healthUp, sent: sent, inFly: inFly, at: t0} }
	begin := ev{begin: true}
	tests := []struct {
		name    string
		events  []ev
		state   string
		at      time.Time
		sending int
		allow   bool
		wait    time.Duration
	}{
		{"closed lets every attempt start", nil, "closed", t0, 5, true, 0},
		{"after a failure nothing starts while an answer is pending",
			[]ev{down(1, 3, t0)}, "suspect", t0, 3, false, 0},
		{"after a failure one attempt may start once nothing is in flight",
			[]ev{down(1, 1, t0), up(0, 0)}, "suspect", t0, 0, true, 0},
		{"a success after the failure closes it",
			[]ev{down(1, 3, t0), up(2, 2)}, "closed", t0, 2, true, 0},
		{"a success sent before the failure says nothing of now",
			[]ev{down(5, 3, t0), up(4, 2)}, "suspect", t0, 2, false, 0},
		{"a failure of the last attempt in flight opens it, and the first probe goes at once",
			[]ev{down(1, 0, t0)}, "open", t0, 0, true, 0},
		{"breakerThreshold failures in a row open it with attempts in flight, which no probe joins",
			[]ev{down(1, 9, t0), down(2, 8, t0), down(3, 7, t0), down(4, 6, t0), down(5, 5, t0), down(6, 4, t0)},
			"open", t0, 4, false, 0},
		{"the probe is alone: half-open holds every other attempt",
			[]ev{down(1, 0, t0), begin}, "half-open", t0, 1, false, 0},
		{"after the first probe failed the next waits for the schedule's first step",
			[]ev{down(1, 0, t0), begin, down(2, 0, sec(0.1))}, "open", sec(0.4), 0, false, 600 * time.Millisecond},
		{"the schedule counts from the first failure, not from the last probe",
			[]ev{down(1, 0, t0), begin, down(2, 0, sec(0.1)), begin, down(3, 0, sec(1.2))}, "open", sec(1.5), 0, false, 500 * time.Millisecond},
		{"a probe may start once its step has come",
			[]ev{down(1, 0, t0), begin, down(2, 0, sec(0.1)), begin, down(3, 0, sec(1.2))}, "open", sec(2), 0, true, 0},
		{"a probe's success closes it",
			[]ev{down(1, 0, t0), begin, up(2, 0)}, "closed", t0, 3, true, 0},
		{"a probe's success closes it even when sent before a failure",
			[]ev{down(5, 0, t0), begin, up(1, 0)}, "closed", t0, 3, true, 0},
		{"an answer that is not a failure says the destination is up",
			[]ev{down(1, 1, t0), up(2, 0)}, "closed", t0, 0, true, 0},
		{"a request not made says nothing",
			[]ev{down(1, 1, t0), {h: healthNone, sent: 2, at: t0}}, "suspect", t0, 0, true, 0},
		{"a probe not made keeps its place in the schedule",
			[]ev{down(1, 0, t0), begin, {h: healthNone, sent: 2, at: t0}}, "open", t0, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := breaker{pace: pace}
			for _, e := range tt.events {
				if e.begin {
					if _, ok := b.allow(t0.Add(time.Hour), 0); !ok {
						t.Fatalf("no attempt allowed to begin in state %s", b.state())
					}
					b.begin()
					continue
				}
				b.observe(e.h, e.sent, e.inFly, e.at)
			}
			if got := b.state(); got != tt.state {
				t.Fatalf("state %s, want %s", got, tt.state)
			}
			wait, ok := b.allow(tt.at, tt.sending)
			if ok != tt.allow || wait != tt.wait {
				t.Fatalf("allow(+%s, %d sending) = %s, %v; want %s, %v", tt.at.Sub(t0), tt.sending, wait, ok, tt.wait, tt.allow)
			}
		})
	}
}
