package budget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"pgregory.net/rapid"
)

// TestRateLimit_Properties checks each answer against the model: the wait is
// min(Retry-After, cap), and the budget is spent exactly when that wait would take the episode
// past max_rate_limit_duration.
func TestRateLimit_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		clock := budgettest.New(time.Time{})
		r := budget.NewRateLimit(cfg, clock)
		var start time.Time
		for n := 0; n < 500; n++ {
			clock.Advance(time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "attempt")))
			if n == 0 {
				start = clock.Now()
			}
			ra := time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "retry_after"))
			want := min(ra, cfg.RetryAfterCap)
			elapsed := clock.Now().Sub(start)
			d, err := r.Next(ra)
			if elapsed+want > cfg.MaxRateLimitDuration {
				var spent *budget.SpentError
				if !errors.As(err, &spent) || spent.Bound != budget.BoundMaxRateLimitDuration || !errors.Is(err, budget.ErrSpent) {
					t.Fatalf("elapsed %s + wait %s > %s: got %s, %v; want spent", elapsed, want, cfg.MaxRateLimitDuration, d, err)
				}
				return
			}
			if err != nil || d != want {
				t.Fatalf("elapsed %s, Retry-After %s: got %s, %v; want %s", elapsed, ra, d, err, want)
			}
			clock.Advance(d)
		}
	})
}

func TestRateLimit_SpentExactlyWhenDurationExceeded(t *testing.T) {
	cfg := budget.DefaultConfig()
	cfg.MaxRateLimitDuration = time.Hour
	tests := []struct {
		name    string
		elapsed time.Duration
		spent   bool
	}{
		{"a wait ending exactly at the bound is granted", time.Hour - cfg.RetryAfterCap, false},
		{"a wait ending one nanosecond past the bound is spent", time.Hour - cfg.RetryAfterCap + 1, true},
		{"after the bound is spent", 2 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := budgettest.New(time.Time{})
			r := budget.NewRateLimit(cfg, clock)
			if _, err := r.Next(time.Second); err != nil {
				t.Fatal(err)
			}
			clock.Advance(tt.elapsed)
			_, err := r.Next(time.Hour) // capped to 300s
			if got := errors.Is(err, budget.ErrSpent); got != tt.spent {
				t.Fatalf("spent = %v (%v), want %v", got, err, tt.spent)
			}
		})
	}
}

func TestRateLimit_CapsEachWait(t *testing.T) {
	r := budget.NewRateLimit(budget.DefaultConfig(), budgettest.New(time.Time{}))
	for _, tt := range []struct{ in, want time.Duration }{
		{time.Second, time.Second},
		{300 * time.Second, 300 * time.Second},
		{301 * time.Second, 300 * time.Second},
		{100 * 365 * 24 * time.Hour, 300 * time.Second},
		{-time.Second, 0},
	} {
		if d, err := r.Next(tt.in); err != nil || d != tt.want {
			t.Errorf("Next(%s) = %s, %v; want %s", tt.in, d, err, tt.want)
		}
	}
}

func TestRateLimit_DefaultEpisodeOnAutoClockGrants144FiveMinuteWaits(t *testing.T) {
	clock := budgettest.NewAuto(time.Time{})
	b := budget.New(budget.DefaultConfig(), clock, nil)
	start, waits := clock.Now(), 0
	for {
		d, err := b.RateLimited(time.Hour) // capped to 300s
		if err != nil {
			if !errors.Is(err, budget.ErrSpent) {
				t.Fatal(err)
			}
			break
		}
		if err := budget.Sleep(context.Background(), clock, d, nil); err != nil {
			t.Fatal(err)
		}
		waits++
	}
	if waits != 144 || clock.Now().Sub(start) != 12*time.Hour || b.Retries() != 0 || b.Attempts() != 145 {
		t.Fatalf("waits %d over %s, retries %d, attempts %d; want 144 over 12h, 0, 145",
			waits, clock.Now().Sub(start), b.Retries(), b.Attempts())
	}
}
