package budget_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"pgregory.net/rapid"
)

// drawConfig draws a valid configuration with small enough numbers that a run stays short.
func drawConfig(t *rapid.T) budget.Config {
	base := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(10*time.Second)).Draw(t, "base"))
	return budget.Config{
		MaxRetries:           rapid.IntRange(0, 40).Draw(t, "max_retries"),
		BackoffBase:          base,
		BackoffCap:           base + time.Duration(rapid.Int64Range(0, int64(2*time.Minute)).Draw(t, "cap_extra")),
		MaxTotalBackoff:      time.Duration(rapid.Int64Range(int64(time.Second), int64(24*time.Hour)).Draw(t, "max_total")),
		RetryAfterCap:        time.Duration(rapid.Int64Range(int64(time.Second), int64(10*time.Minute)).Draw(t, "retry_after_cap")),
		MaxRateLimitDuration: time.Duration(rapid.Int64Range(int64(time.Second), int64(24*time.Hour)).Draw(t, "max_rate_limit")),
	}
}

func seeded(seed uint64) budget.RandFunc {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Float64
}

// clamped is the curve value of retry n, computed independently of backoff/v4.
func clamped(cfg budget.Config, n int) time.Duration {
	d := cfg.BackoffBase
	for i := 0; i < n && d < cfg.BackoffCap; i++ {
		d *= 2
	}
	return min(d, cfg.BackoffCap)
}

// TestBackoff_Properties drives a counted budget to exhaustion over random configurations, seeds
// and attempt durations, checking every answer against the budget's rules.
func TestBackoff_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		clock := budgettest.New(time.Time{})
		b := budget.NewBackoff(cfg, clock, seeded(rapid.Uint64().Draw(t, "seed")))
		var start time.Time
		for n := 0; ; n++ {
			clock.Advance(time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "attempt")))
			if n == 0 {
				start = clock.Now()
			}
			d, err := b.Next()
			elapsed := clock.Now().Sub(start)
			if err != nil {
				var spent *budget.SpentError
				if !errors.As(err, &spent) || !errors.Is(err, budget.ErrSpent) {
					t.Fatalf("error %v is not a *SpentError matching ErrSpent", err)
				}
				switch {
				case n == cfg.MaxRetries:
					if spent.Bound != budget.BoundMaxRetries {
						t.Fatalf("spent after exactly %d retries with bound %s, want %s", n, spent.Bound, budget.BoundMaxRetries)
					}
				case n < cfg.MaxRetries:
					if spent.Bound != budget.BoundMaxTotalBackoff || elapsed+spent.Wait <= cfg.MaxTotalBackoff {
						t.Fatalf("spent at retry %d of %d: bound %s, elapsed %s + wait %s vs total %s",
							n, cfg.MaxRetries, spent.Bound, elapsed, spent.Wait, cfg.MaxTotalBackoff)
					}
					if spent.Wait < clamped(cfg, n)/2 || spent.Wait > clamped(cfg, n) {
						t.Fatalf("refused wait %s outside [%s/2, %s]", spent.Wait, clamped(cfg, n), clamped(cfg, n))
					}
				default:
					t.Fatalf("granted %d retries, more than max_retries %d", n, cfg.MaxRetries)
				}
				if b.Retries() != n {
					t.Fatalf("Retries() = %d after %d grants", b.Retries(), n)
				}
				return
			}
			if d > cfg.BackoffCap {
				t.Fatalf("retry %d: wait %s exceeds the cap %s", n, d, cfg.BackoffCap)
			}
			if c := clamped(cfg, n); d < c/2 || d > c || d <= 0 {
				t.Fatalf("retry %d: wait %s outside [%s/2, %s]", n, d, c, c)
			}
			if elapsed+d > cfg.MaxTotalBackoff {
				t.Fatalf("retry %d: wait %s ends after the total bound (%s elapsed of %s)", n, d, elapsed, cfg.MaxTotalBackoff)
			}
			clock.Advance(d)
		}
	})
}

func TestBackoff_DefaultCurveWithoutJitterIsClampedDoubling(t *testing.T) {
	clock := budgettest.New(time.Time{})
	b := budget.NewBackoff(budget.DefaultConfig(), clock, func() float64 { return 0 })
	start := clock.Now()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}
	for i, w := range want {
		d, err := b.Next()
		if err != nil || d != w {
			t.Fatalf("retry %d: got %s, %v; want %s", i, d, err, w)
		}
		if u, sum := budget.Unjittered(budget.DefaultConfig(), i+1), clock.Now().Add(d).Sub(start); u != sum {
			t.Fatalf("Unjittered(%d) = %s, want the sum of the unjittered waits %s", i+1, u, sum)
		}
		clock.Advance(d)
	}
	if _, err := b.Next(); !errors.Is(err, budget.ErrSpent) {
		t.Fatalf("11th failure: got %v, want spent (10 retries = 11 attempts)", err)
	}
	if u := budget.Unjittered(budget.DefaultConfig(), 0); u != 0 {
		t.Fatalf("Unjittered(0) = %s, want 0 (no failure, no wait)", u)
	}
}

func TestBackoff_MaximalJitterHalvesTheWait(t *testing.T) {
	b := budget.NewBackoff(budget.DefaultConfig(), budgettest.New(time.Time{}), func() float64 { return 1 })
	if d, _ := b.Next(); d != 250*time.Millisecond {
		t.Fatalf("got %s, want 250ms", d)
	}
}

func TestBackoff_JitterSpreadsTwoBudgetsStartedTogether(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s1 := rapid.Uint64().Draw(t, "seed1")
		s2 := rapid.Uint64().Filter(func(s uint64) bool { return s != s1 }).Draw(t, "seed2")
		cfg := budget.DefaultConfig()
		clock := budgettest.New(time.Time{})
		a, b := budget.NewBackoff(cfg, clock, seeded(s1)), budget.NewBackoff(cfg, clock, seeded(s2))
		same := 0
		for range cfg.MaxRetries {
			da, _ := a.Next()
			db, _ := b.Next()
			if da == db {
				same++
			}
		}
		if same == cfg.MaxRetries {
			t.Fatalf("seeds %d and %d gave identical waits for all %d retries", s1, s2, same)
		}
	})
}

func TestBackoff_SpentByTotalBeforeMaxRetries(t *testing.T) {
	cfg := budget.DefaultConfig()
	cfg.MaxRetries = 1000
	cfg.MaxTotalBackoff = 5 * time.Minute
	clock := budgettest.New(time.Time{})
	b := budget.NewBackoff(cfg, clock, func() float64 { return 0 })
	start := clock.Now()
	for {
		d, err := b.Next()
		if err != nil {
			var spent *budget.SpentError
			if !errors.As(err, &spent) || spent.Bound != budget.BoundMaxTotalBackoff {
				t.Fatalf("got %v, want spent on %s", err, budget.BoundMaxTotalBackoff)
			}
			if el := clock.Now().Sub(start); el+spent.Wait <= cfg.MaxTotalBackoff {
				t.Fatalf("spent early: %s elapsed + %s wait fits in %s", el, spent.Wait, cfg.MaxTotalBackoff)
			}
			return
		}
		clock.Advance(d)
	}
}

func TestJitter_StaysWithinHalfAndWhole(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		r    float64
		want time.Duration
	}{
		{"zero random keeps the wait", time.Second, 0, time.Second},
		{"random one halves it", time.Second, 1, 500 * time.Millisecond},
		{"random above one is clamped", time.Second, 7, 500 * time.Millisecond},
		{"negative random is clamped", time.Second, -3, time.Second},
		{"NaN random is taken as zero", time.Second, nan(), time.Second},
		{"odd nanoseconds round up", 3, 1, 2},
		{"zero wait stays zero", 0, 0.5, 0},
		{"negative wait is zero", -time.Second, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := budget.Jitter(tt.d, tt.r); got != tt.want {
				t.Fatalf("Jitter(%s, %v) = %s, want %s", tt.d, tt.r, got, tt.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }
