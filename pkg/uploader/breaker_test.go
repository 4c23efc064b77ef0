package uploader

import "testing"

func TestBreaker_States(t *testing.T) {
	// An event: a batch (id) begins an attempt (allow must say yes), or an attempt ends with
	// a health; after the events, allow is asked for ask with sending attempts in flight.
	type ev struct {
		id    uint64
		begin bool
		h     health
		sent  uint64 // the attempt's number
		inFly int    // attempts still in flight after an answer
	}
	tests := []struct {
		name     string
		events   []ev
		state    string
		ask      uint64
		eligible bool
		sending  int
		allow    bool
	}{
		{"closed lets every attempt start", nil, "closed", 1, false, 5, true},
		{"after a failure nothing starts while an answer is pending",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 3}}, "suspect", 2, true, 3, false},
		{"a success after the failure closes it",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 3}, {id: 2, h: healthUp, sent: 2, inFly: 2}}, "closed", 3, false, 2, true},
		{"a success sent before the failure says nothing of now",
			[]ev{{id: 2, h: healthDown, sent: 5, inFly: 3}, {id: 1, h: healthUp, sent: 4, inFly: 2}}, "suspect", 3, true, 2, false},
		{"a failure of the last attempt in flight opens it",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}}, "open", 1, true, 0, true},
		{"breakerThreshold failures in a row open it with attempts in flight",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 9}, {id: 2, h: healthDown, sent: 2, inFly: 8}, {id: 3, h: healthDown, sent: 3, inFly: 7},
				{id: 4, h: healthDown, sent: 4, inFly: 6}, {id: 5, h: healthDown, sent: 5, inFly: 5}, {id: 6, h: healthDown, sent: 6, inFly: 4}},
			"open", 1, true, 4, false},
		{"open: a batch that did not fail does not probe while one that did is in flight",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}}, "open", 2, false, 0, false},
		{"open: the probe is alone: half-open holds every other batch",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}, {id: 1, begin: true}}, "half-open", 2, true, 1, false},
		{"a failed probe stays the probe",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}, {id: 2, h: healthDown, sent: 2, inFly: 0}, {id: 1, begin: true},
				{id: 1, h: healthDown, sent: 3, inFly: 0}}, "open", 2, true, 0, false},
		{"the probe's own next attempt is allowed",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}, {id: 1, begin: true}, {id: 1, h: healthDown, sent: 2, inFly: 0}},
			"open", 1, true, 0, true},
		{"a probe's success closes it",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 0}, {id: 1, begin: true}, {id: 1, h: healthUp, sent: 2, inFly: 0}},
			"closed", 7, false, 3, true},
		{"an answer that is not a failure says the destination is up",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 1}, {id: 2, h: healthUp, sent: 2, inFly: 0}}, "closed", 3, false, 0, true},
		{"a request not made says nothing",
			[]ev{{id: 1, h: healthDown, sent: 1, inFly: 1}, {id: 2, h: healthNone, sent: 2, inFly: 0}}, "suspect", 3, true, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b breaker
			for _, e := range tt.events {
				if e.begin {
					if !b.allow(e.id, true, 0) {
						t.Fatalf("batch %d not allowed to begin in state %s", e.id, b.state())
					}
					b.begin(e.id)
					continue
				}
				b.observe(e.id, e.h, e.sent, e.inFly)
			}
			if got := b.state(); got != tt.state {
				t.Fatalf("state %s, want %s", got, tt.state)
			}
			if got := b.allow(tt.ask, tt.eligible, tt.sending); got != tt.allow {
				t.Fatalf("allow(%d, eligible %v, %d sending) = %v, want %v", tt.ask, tt.eligible, tt.sending, got, tt.allow)
			}
		})
	}
}

func TestBreaker_WhenTheProbeLeavesFlightTheNextEligibleBatchProbes(t *testing.T) {
	var b breaker
	b.observe(1, healthDown, 1, 0)
	b.begin(1) // 1 probes
	b.observe(1, healthDown, 2, 0)
	if b.allow(2, true, 0) {
		t.Fatal("another batch probed while the probe is still in flight")
	}
	b.left(1) // dead-lettered
	if !b.allow(2, true, 0) || b.allow(3, false, 0) {
		t.Fatal("after the probe left, the next eligible batch (and only it) may probe")
	}
}
