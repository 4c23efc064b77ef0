package main

import (
	"testing"
	"time"
)

// The outage rows count the attempts begun once the client knew of the outage: after a
// failed answer with no success after it. A success classified after a failure (its request
// overtook the failed one on the way and reached the collector before the outage) moves that
// moment to the next failure.
func TestAttemptTimes_CountFromAFailureWithNoSuccessAfterIt(t *testing.T) {
	t0 := time.Unix(100, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	fail := func(n int) classified { return classified{at: ms(n)} }
	ok := func(n int) classified { return classified{at: ms(n), ok: true} }
	tests := []struct {
		name               string
		began              []int
		known              []classified
		requests, informed int64
	}{
		{"only failures: from the first", []int{1, 2, 5, 9}, []classified{fail(3), fail(6)}, 4, 2},
		{"a success after the first failure: from the next failure", []int{1, 2, 4, 5, 8, 9}, []classified{fail(3), ok(4), fail(7)}, 6, 2},
		{"successes before the window or after its end do not count", []int{1, 5, 12}, []classified{ok(-5), fail(3), ok(20)}, 2, 1},
		{"no failure in the window: nothing after", []int{1, 2}, []classified{ok(1)}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := &attemptTimes{known: tt.known}
			for _, b := range tt.began {
				at.begin(ms(b))
			}
			req, inf := at.count(t0, ms(10))
			if req != tt.requests || inf != tt.informed {
				t.Fatalf("count = %d, %d after; want %d, %d after", req, inf, tt.requests, tt.informed)
			}
		})
	}
}
