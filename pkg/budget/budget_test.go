package budget_test

import (
	"errors"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"pgregory.net/rapid"
)

func TestBudget_RateLimitedWaitsNeverChangeTheRetryCount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := budget.DefaultConfig()
		cfg.MaxRetries = 1000
		clock := budgettest.New(time.Time{})
		b := budget.New(cfg, clock, seeded(rapid.Uint64().Draw(t, "seed")))
		retries, attempts := 0, 0
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			var d time.Duration
			if rapid.Bool().Draw(t, "rate_limited") {
				d, _ = b.RateLimited(time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "retry_after")))
			} else {
				var err error
				if d, err = b.Failed(); err == nil {
					retries++
				}
			}
			attempts++
			if b.Retries() != retries || b.Attempts() != attempts {
				t.Fatalf("Retries/Attempts = %d/%d, want %d/%d", b.Retries(), b.Attempts(), retries, attempts)
			}
			if st := b.State(); st.Retries != retries || st.Attempts != attempts {
				t.Fatalf("State %+v, want retries %d attempts %d", st, retries, attempts)
			}
			clock.Advance(d)
		}
	})
}

func TestBudget_StateHasNoMonotonicReading(t *testing.T) {
	b := budget.New(budget.DefaultConfig(), budget.System, nil)
	if _, err := b.Failed(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RateLimited(time.Second); err != nil {
		t.Fatal(err)
	}
	st := b.State()
	for name, ts := range map[string]time.Time{"BackoffStart": st.BackoffStart, "RateLimitStart": st.RateLimitStart} {
		if ts.IsZero() || ts != ts.Round(0) {
			t.Errorf("%s = %v: want a wall-clock time without a monotonic reading", name, ts)
		}
	}
}

func TestBudget_RestoreContinuesTheCurveAndCounts(t *testing.T) {
	cfg := budget.DefaultConfig()
	clock := budgettest.New(time.Time{})
	zero := func() float64 { return 0 }
	a := budget.New(cfg, clock, zero)
	for range 4 {
		d, _ := a.Failed()
		clock.Advance(d)
	}
	_, _ = a.RateLimited(time.Second)
	st := a.State()

	b := budget.New(cfg, clock, zero) // a "restarted" process
	b.Restore(st)
	if got := b.State(); got != st {
		t.Fatalf("State after Restore = %+v, want %+v", got, st)
	}
	da, _ := a.Failed()
	db, _ := b.Failed()
	if da != 8*time.Second || db != da {
		t.Fatalf("next waits: original %s, restored %s; want 8s both", da, db)
	}
	if b.Attempts() != 6 {
		t.Fatalf("Attempts = %d, want 6 (4 counted + 1 rate-limited + 1)", b.Attempts())
	}
}

func TestBudget_RestoredStartsMeasureWallClockAcrossRestart(t *testing.T) {
	cfg := budget.DefaultConfig()
	clock := budgettest.New(time.Time{})
	b := budget.New(cfg, clock, func() float64 { return 0 })
	b.Restore(budget.State{
		Attempts:       3,
		Retries:        3,
		BackoffStart:   clock.Now().Add(-cfg.MaxTotalBackoff + time.Second),
		RateLimitStart: clock.Now().Add(-cfg.MaxRateLimitDuration - time.Second),
	})
	var spent *budget.SpentError
	if _, err := b.Failed(); !errors.As(err, &spent) || spent.Bound != budget.BoundMaxTotalBackoff {
		t.Fatalf("counted: got %v, want spent on %s (4s wait, 1s left)", err, budget.BoundMaxTotalBackoff)
	}
	if _, err := b.RateLimited(time.Second); !errors.As(err, &spent) || spent.Bound != budget.BoundMaxRateLimitDuration {
		t.Fatalf("rate limit: got %v, want spent on %s", err, budget.BoundMaxRateLimitDuration)
	}
}

func TestBudget_WallClockGoingBackCountsAsNoTimeElapsed(t *testing.T) {
	clock := budgettest.New(time.Time{})
	b := budget.New(budget.DefaultConfig(), clock, func() float64 { return 0 })
	b.Restore(budget.State{Retries: 2, BackoffStart: clock.Now().Add(time.Hour)})
	if d, err := b.Failed(); err != nil || d != 2*time.Second {
		t.Fatalf("got %s, %v; want 2s", d, err)
	}
}

func TestBudget_ResetStartsOver(t *testing.T) {
	cfg := budget.DefaultConfig()
	cfg.MaxRetries = 2
	clock := budgettest.New(time.Time{})
	b := budget.New(cfg, clock, func() float64 { return 0 })
	_, _ = b.Failed()
	_, _ = b.Failed()
	_, _ = b.RateLimited(time.Second)
	if _, err := b.Failed(); !errors.Is(err, budget.ErrSpent) {
		t.Fatalf("third counted failure with max_retries 2: got %v, want spent", err)
	}
	b.Reset()
	if st := b.State(); st != (budget.State{}) {
		t.Fatalf("State after Reset = %+v, want zero", st)
	}
	if d, err := b.Failed(); err != nil || d != cfg.BackoffBase {
		t.Fatalf("first failure after Reset: %s, %v; want %s", d, err, cfg.BackoffBase)
	}
}

func TestBudget_ZeroMaxRetriesNeverRetries(t *testing.T) {
	cfg := budget.DefaultConfig()
	cfg.MaxRetries = 0
	b := budget.New(cfg, budgettest.New(time.Time{}), nil)
	if _, err := b.Failed(); !errors.Is(err, budget.ErrSpent) {
		t.Fatalf("got %v, want spent", err)
	}
	if d, err := b.RateLimited(time.Second); err != nil || d != time.Second {
		t.Fatalf("rate-limited with max_retries 0: %s, %v; want 1s (the count is not involved)", d, err)
	}
}

func TestBudget_Postpone_KeepsTimeHeldOffTheTotalBounds(t *testing.T) {
	cfg := budget.DefaultConfig()
	cfg.MaxTotalBackoff = time.Hour
	clk := budgettest.New(time.Time{})
	b := budget.New(cfg, clk, func() float64 { return 0 })
	if _, err := b.Failed(); err != nil { // the episode starts
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // held two hours by something that is not the batch's failure
	b.Postpone(2 * time.Hour)
	if _, err := b.Failed(); err != nil {
		t.Errorf("Failed after a postponed hold = %v, want a wait: the hold is not charged", err)
	}
	if st := b.State(); st.BackoffStart != budgettest.Epoch.Add(2*time.Hour) || st.Attempts != 2 {
		t.Errorf("state = %+v, want the start moved by the hold and both attempts counted", st)
	}
	b.Reset()
	b.Postpone(time.Hour) // no episode open: nothing to move
	if st := b.State(); !st.BackoffStart.IsZero() || !st.RateLimitStart.IsZero() {
		t.Errorf("Postpone opened an episode: %+v", st)
	}
}
