package store

import (
	"testing"
	"time"

	"github.com/segmentio/ksuid"
)

// White-box: the ring's bounds and merging cannot be reached cheaply through the Store (they
// need tens of thousands of commits).

func keyAt(t *testing.T, at time.Time, seq byte) ksuid.KSUID {
	t.Helper()
	var payload [16]byte
	payload[15] = seq
	k, err := ksuid.FromParts(at, payload[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIntakeRing_TimeOf(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a1, a2 := keyAt(t, t0, 1), keyAt(t, t0, 2) // one run at t0+853ms
	b1 := keyAt(t, t0, 3)                      // a run at t0+900ms
	c1, c2 := keyAt(t, t0, 4), keyAt(t, t0, 5) // t0+900.5ms: merged into b's run
	d1 := keyAt(t, t0.Add(time.Second), 6)     // a run at t0+1.2s
	old := keyAt(t, t0.Add(-time.Hour), 7)     // appended by an earlier process
	gap := keyAt(t, t0.Add(time.Second), 5)    // between runs: never recorded
	var r intakeRing
	r.add(a1, a2, t0.Add(853*time.Millisecond))
	r.add(b1, b1, t0.Add(900*time.Millisecond))
	r.add(c1, c2, t0.Add(900*time.Millisecond+500*time.Microsecond))
	r.add(d1, d1, t0.Add(1200*time.Millisecond))
	if len(r.runs) != 3 {
		t.Fatalf("%d runs, want 3 (a run within 1ms of the previous one joins it)", len(r.runs))
	}
	tests := []struct {
		name string
		head ksuid.KSUID
		want time.Time
	}{
		{"a key from before the process opened reports its second", old, old.Time()},
		{"the first key of a run reports the run's time", a1, t0.Add(853 * time.Millisecond)},
		{"a later key of a run reports the run's time", a2, t0.Add(853 * time.Millisecond)},
		{"a merged run reports the earlier time", c2, t0.Add(900 * time.Millisecond)},
		{"a key no run covers reports its second", gap, t0.Add(time.Second)},
		{"the last run", d1, t0.Add(1200 * time.Millisecond)},
	}
	for _, tt := range tests { // heads only move forward, as the queue drains
		t.Run(tt.name, func(t *testing.T) {
			if got := r.timeOf(tt.head); !got.Equal(tt.want) {
				t.Fatalf("timeOf = %v, want %v", got, tt.want)
			}
		})
	}
	if got := r.timeOf(ksuid.Nil); !got.IsZero() || len(r.runs) != 0 {
		t.Fatalf("empty queue: timeOf = %v with %d runs left, want zero and none", got, len(r.runs))
	}
}

func TestIntakeRing_ForgetsOldestRunsPastTheBound(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var r intakeRing
	var keys []ksuid.KSUID
	k := keyAt(t, t0, 0)
	n := maxIntakeRuns + 100
	for i := 0; i < n; i++ {
		k = k.Next()
		keys = append(keys, k)
		r.add(k, k, t0.Add(time.Duration(i)*2*time.Millisecond))
	}
	if live := len(r.runs) - r.off; live != maxIntakeRuns {
		t.Fatalf("%d live runs, want the bound %d", live, maxIntakeRuns)
	}
	if cap(r.runs) > 4*maxIntakeRuns {
		t.Fatalf("buffer of %d runs for a bound of %d", cap(r.runs), maxIntakeRuns)
	}
	if got := r.timeOf(keys[50]); !got.Equal(t0) {
		t.Fatalf("forgotten run: timeOf = %v, want its key's second %v", got, t0)
	}
	if got, want := r.timeOf(keys[100]), t0.Add(200*time.Millisecond); !got.Equal(want) {
		t.Fatalf("oldest remembered run: timeOf = %v, want %v", got, want)
	}
	if got, want := r.timeOf(keys[n-1]), t0.Add(time.Duration(n-1)*2*time.Millisecond); !got.Equal(want) {
		t.Fatalf("newest run: timeOf = %v, want %v", got, want)
	}
}
