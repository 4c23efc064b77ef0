package uploader

import (
	"testing"
	"time"
)

func TestLimit_FixedIsAConstant(t *testing.T) {
	l := fixedLimit(4)
	for _, a := range []answer{answerGood, answerBackPressure, answerSlowed, answerFailed} {
		l.Observe(sample{answer: a, rtt: time.Second, inflight: 4})
		if l.Limit() != 4 {
			t.Fatalf("a fixed limit moved to %d", l.Limit())
		}
	}
}

func TestLimit_AIMD(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const rtt = 10 * time.Millisecond
	good := func(n, inflight int) []sample {
		out := make([]sample, n)
		for i := range out {
			out[i] = sample{answer: answerGood, rtt: rtt, inflight: inflight}
		}
		return out
	}
	tests := []struct {
		name    string
		start   float64 // the limit before the samples (0: a fresh limit)
		samples []sample
		want    int
	}{
		{"a fresh limit is 1", 0, nil, 1},
		{"slow start: one more per good answer while the batches fill it", 0, good(7, 32), 8},
		{"it never passes the ceiling", 0, good(100, 64), 32},
		{"it does not grow while the batches fill half of it or less", 8, good(20, 4), 8},
		{"back-pressure halves it", 16, []sample{{answer: answerBackPressure, rtt: rtt, inflight: 16}}, 8},
		{"answers to attempts begun before a cut do not cut again", 16,
			[]sample{{answer: answerBackPressure, sent: 3, latest: 9}, {answer: answerBackPressure, sent: 5, latest: 9},
				{answer: answerBackPressure, sent: 9, latest: 9}}, 8},
		{"an answer to an attempt begun after the cut cuts again", 16,
			[]sample{{answer: answerBackPressure, sent: 3, latest: 9}, {answer: answerBackPressure, sent: 10, latest: 12}}, 4},
		{"a throttled success halves it", 16, []sample{{answer: answerSlowed, rtt: rtt, inflight: 16}}, 8},
		{"isolated failures among successes leave it", 16,
			append(append(good(3, 4), sample{answer: answerFailed, rtt: rtt, inflight: 4}), good(3, 4)...), 16},
		{"a window in which most attempts failed halves it", 8,
			[]sample{{answer: answerFailed}, {answer: answerFailed}, {answer: answerFailed}, {answer: answerFailed},
				{answer: answerFailed}, {answer: answerGood, rtt: rtt, inflight: 2}, {answer: answerFailed}, {answer: answerFailed}}, 4},
		{"Retry-After answers, rejections and aborts say nothing", 16,
			[]sample{{answer: answerNeutral}, {answer: answerNeutral}}, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newAIMDLimit(32)
			if tt.start > 0 {
				l.limit = tt.start
			}
			for i, s := range tt.samples {
				s.now = t0.Add(time.Duration(i) * time.Millisecond)
				if s.sent == 0 {
					s.sent, s.latest = uint64(i+1), uint64(i+1)
				}
				l.Observe(s)
			}
			if got := l.Limit(); got != tt.want {
				t.Fatalf("limit %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLimit_AIMD_InflatedRoundTripHalvesIt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newAIMDLimit(32)
	l.limit = 16
	for i := range 20 {
		l.Observe(sample{answer: answerGood, rtt: 10 * time.Millisecond, inflight: 4, now: t0.Add(time.Duration(i) * time.Millisecond),
			sent: uint64(i + 1), latest: uint64(i + 1)})
	}
	for i := range 10 { // the round trip climbs far above its baseline
		l.Observe(sample{answer: answerGood, rtt: 200 * time.Millisecond, inflight: 4, now: t0.Add(time.Second + time.Duration(i)*time.Second),
			sent: uint64(21 + i), latest: uint64(21 + i)})
	}
	if l.Limit() >= 16 {
		t.Fatalf("limit %d after the round trip inflated 20-fold, want it halved", l.Limit())
	}

}
