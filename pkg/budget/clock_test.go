package budget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

// sleepAsync runs budget.Sleep in a goroutine and returns its result channel.
func sleepAsync(ctx context.Context, c budget.Clock, d time.Duration, wake <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() { done <- budget.Sleep(ctx, c, d, wake) }()
	return done
}

func waitSleeping(t *testing.T, c *budgettest.Clock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("Sleep never started its timer: %v", err)
	}
}

func TestSleep_ReturnsNilWhenTheWaitEnds(t *testing.T) {
	c := budgettest.New(time.Time{})
	done := sleepAsync(context.Background(), c, time.Minute, nil)
	waitSleeping(t, c)
	c.Advance(time.Minute - 1)
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v before its wait ended", err)
	default:
	}
	c.Advance(1)
	if err := <-done; err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if c.Pending() != 0 {
		t.Fatalf("%d timers left pending", c.Pending())
	}
}

func TestSleep_ContextCancelEndsTheWait(t *testing.T) {
	c := budgettest.New(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	done := sleepAsync(ctx, c, time.Hour, nil)
	waitSleeping(t, c)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if c.Pending() != 0 {
		t.Fatalf("the timer was not stopped")
	}
}

func TestSleep_WakeEndsTheWait(t *testing.T) {
	for _, tt := range []struct {
		name string
		wake func(chan struct{})
	}{
		{"a value on wake", func(w chan struct{}) { w <- struct{}{} }},
		{"closing wake", func(w chan struct{}) { close(w) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := budgettest.New(time.Time{})
			wake := make(chan struct{})
			done := sleepAsync(context.Background(), c, time.Hour, wake)
			waitSleeping(t, c)
			tt.wake(wake)
			if err := <-done; !errors.Is(err, budget.ErrWoken) {
				t.Fatalf("got %v, want ErrWoken", err)
			}
		})
	}
}

func TestSleep_ReturnsAtOnce(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	short, cancelShort := context.WithTimeout(context.Background(), time.Hour)
	defer cancelShort()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want []error
	}{
		{"a zero wait returns nil", context.Background(), 0, nil},
		{"a negative wait returns nil", context.Background(), -time.Second, nil},
		{"an ended context returns its error", canceled, time.Second, []error{context.Canceled}},
		{"a wait past the deadline is not started", short, 2 * time.Hour, []error{budget.ErrBeyondDeadline, context.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := budgettest.New(time.Time{}) // manual: nothing advances it
			err := budget.Sleep(tt.ctx, c, tt.d, nil)
			if tt.want == nil && err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Fatalf("got %v, want it to match %v", err, w)
				}
			}
			if c.Pending() != 0 {
				t.Fatalf("a timer was started")
			}
		})
	}
}

func TestSleep_AutoClockRunsTwelveHoursAtOnce(t *testing.T) {
	c := budgettest.NewAuto(time.Time{})
	start := c.Now()
	for range 144 {
		if err := budget.Sleep(context.Background(), c, 5*time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Now().Sub(start); got != 12*time.Hour {
		t.Fatalf("clock moved %s, want 12h", got)
	}
}

func TestSystem_TimerFiresAndStops(t *testing.T) {
	tm := budget.System.NewTimer(0)
	<-tm.C()
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
	if !budget.System.NewTimer(time.Hour).Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if now := budget.System.Now(); now == now.Round(0) {
		t.Fatal("System.Now has no monotonic reading")
	}
}
