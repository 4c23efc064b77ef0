package uploader

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// step is one answer fed to a limiter in a table test: n answers of a with round trip rtt,
// each with the limiter's whole limit in flight, dt apart on the injected clock.
type step struct {
	n   int
	a   answer
	rtt time.Duration
}

func runSteps(l *limiter, steps []step) *limiter {
	now := time.Unix(0, 0)
	for _, s := range steps {
		for range s.n {
			now = now.Add(s.rtt)
			l.observe(s.a, s.rtt, l.Limit(), now)
		}
	}
	return l
}

func TestLimiter_AdaptsToWhatTheDestinationAnswers(t *testing.T) {
	const rtt = 50 * time.Millisecond
	tests := []struct {
		name     string
		steps    []step
		min, max int // the limit after the steps lies in [min, max]
	}{
		{"starts at one batch in flight (a start is a probe)", nil, 1, 1},
		{"slow start doubles per round trip: 31 good answers reach 32", []step{{31, answerGood, rtt}}, 32, 32},
		{"never above max_concurrency", []step{{500, answerGood, rtt}}, 32, 32},
		{"a 429 halves it", []step{{31, answerGood, rtt}, {1, answerBackPressure, rtt}}, 16, 16},
		{"a burst of 429s from one event halves it once", []step{{31, answerGood, rtt}, {3, answerBackPressure, 0}}, 16, 16},
		{"after a cut it grows additively, about one per round trip",
			[]step{{31, answerGood, rtt}, {1, answerBackPressure, rtt}, {16, answerGood, rtt}}, 16, 17},
		{"isolated failures among successes do not shrink it",
			[]step{{31, answerGood, rtt}, {1, answerFailed, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}}, 32, 32},
		{"20% failures spread out keep it up",
			[]step{{31, answerGood, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}, {4, answerGood, rtt}, {1, answerFailed, rtt}}, 32, 32},
		{"an outage (every attempt fails) falls to 1", []step{{31, answerGood, rtt}, {16, answerFailed, rtt}}, 1, 1},
		{"a few failures in a row are not an outage", []step{{31, answerGood, rtt}, {limiterOutage - 1, answerFailed, rtt}}, 32, 32},
		{"limiterOutage failures in a row are an outage", []step{{31, answerGood, rtt}, {limiterOutage, answerFailed, rtt}}, 1, 1},
		{"it stays at 1 through a long outage", []step{{31, answerGood, rtt}, {200, answerFailed, rtt}}, 1, 1},
		{"the first successes after an outage probe back up (slow start)",
			[]step{{31, answerGood, rtt}, {32, answerFailed, rtt}, {7, answerGood, rtt}}, 8, 8},
		{"round trips well above the baseline halve it",
			[]step{{31, answerGood, rtt}, {2, answerGood, 5 * rtt}}, 16, 16},
		{"one slow round trip (a busy host's hiccup) is not inflation",
			[]step{{31, answerGood, rtt}, {1, answerGood, 5 * rtt}, {1, answerGood, rtt}}, 32, 32},
		{"slow round trips among fast ones on a loopback collector are not inflation",
			[]step{{31, answerGood, time.Millisecond}, {1, answerGood, 15 * time.Millisecond}, {3, answerGood, time.Millisecond},
				{1, answerGood, 30 * time.Millisecond}, {3, answerGood, time.Millisecond}, {1, answerGood, 15 * time.Millisecond}}, 32, 32},
		{"a slightly slower round trip is not inflation",
			[]step{{31, answerGood, rtt}, {1, answerGood, rtt + 5*time.Millisecond}}, 32, 32},
		{"a window where most attempts failed shrinks it (without a streak)",
			[]step{{31, answerGood, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerGood, rtt}, {3, answerFailed, rtt}, {1, answerFailed, 0}}, 1, 16},
		{"a Retry-After halves it once however many answers carry it",
			[]step{{31, answerGood, rtt}, {5, answerRetryAfter, rtt}}, 16, 16},
		{"after a Retry-After it climbs back by slow start",
			[]step{{31, answerGood, rtt}, {1, answerRetryAfter, rtt}, {16, answerGood, rtt}}, 32, 32},
		{"rejections say nothing about capacity", []step{{31, answerGood, rtt}, {50, answerNeutral, rtt}}, 32, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runSteps(newLimiter(32), tt.steps).Limit()
			if got < tt.min || got > tt.max {
				t.Errorf("limit = %d, want %d..%d", got, tt.min, tt.max)
			}
		})
	}
}

func TestLimiter_DoesNotGrowWhileTheClientHasLessToSend(t *testing.T) {
	l := newLimiter(32)
	now := time.Unix(0, 0)
	for range 100 {
		now = now.Add(time.Millisecond)
		l.observe(answerGood, time.Millisecond, 1, now) // one batch in flight at a time
	}
	if got := l.Limit(); got > 2 {
		t.Errorf("limit = %d after 100 answers with 1 in flight, want at most 2", got)
	}
}

// The probe of an outage is paced as one batch that failed at the outage's first failure and
// at every retry since. Of the outage's first round trip (requests on their way before its
// first failure could be known), the first probe ignores all but the first, so a blip costs
// half a backoff base; once that probe has failed too, limiterFirstRound more count as
// retries of that batch, so that an outage that began with many batches in flight costs about
// what one batch in flight costs.
func TestLimiter_OutageProbeIsPacedAsOneBatch(t *testing.T) {
	retry := budget.DefaultConfig()
	l := newLimiter(32)
	l.limit = 32
	t0 := time.Unix(0, 0)
	l.observe(answerFailed, time.Millisecond, 32, t0)
	for i := range 15 { // on their way before t0, answered just after
		l.observe(answerFailed, 30*time.Millisecond, 32, t0.Add(time.Duration(5+i)*time.Millisecond))
	}
	if !l.outage() {
		t.Fatal("16 failures in a row at limit 32 are not an outage")
	}
	if got, want := l.probeAt(retry), t0.Add(retry.BackoffBase/2); !got.Equal(want) {
		t.Errorf("probe at %v after one round trip of failures, want %v (the soonest one batch's first retry)", got.Sub(t0), want.Sub(t0))
	}
	l.observe(answerFailed, time.Millisecond, 1, t0.Add(300*time.Millisecond))
	if got, want := l.probeAt(retry), t0.Add(budget.Unjittered(retry, 2+limiterFirstRound)); !got.Equal(want) {
		t.Errorf("probe at %v after the first probe failed, want %v", got.Sub(t0), want.Sub(t0))
	}
	l.observe(answerFailed, time.Millisecond, 1, t0.Add(8*time.Second))
	if got, want := l.probeAt(retry), t0.Add(budget.Unjittered(retry, 3+limiterFirstRound)); !got.Equal(want) {
		t.Errorf("probe at %v after the second probe failed, want %v", got.Sub(t0), want.Sub(t0))
	}
	l.observe(answerGood, time.Millisecond, 1, t0.Add(16*time.Second))
	if l.outage() || l.failing() || !l.probeAt(retry).IsZero() {
		t.Error("a success did not end the outage and its pace")
	}
}

// When the destination goes down with many batches in flight, answers to requests it took
// just before come in among the first failures: a success sent before the streak's failures
// does not end it, one sent after the first of them does.
func TestLimiter_ASuccessSentBeforeTheFailuresDoesNotEndTheStreak(t *testing.T) {
	l := newLimiter(32)
	l.limit = 8
	t0 := time.Unix(0, 0)
	l.observe(answerFailed, 10*time.Millisecond, 8, t0) // sent at t0-10ms
	l.observe(answerGood, 20*time.Millisecond, 8, t0.Add(time.Millisecond))
	if !l.failing() {
		t.Fatal("a success sent before the failure ended the streak")
	}
	l.observe(answerGood, time.Millisecond, 8, t0.Add(2*time.Millisecond))
	if l.failing() {
		t.Fatal("a success sent after the failure did not end the streak")
	}
}
