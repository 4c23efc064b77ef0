package budgettest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestClock_StartsAtEpochOrTheGivenTime(t *testing.T) {
	if got := budgettest.New(time.Time{}).Now(); !got.Equal(budgettest.Epoch) {
		t.Fatalf("zero start: %v, want Epoch", got)
	}
	start := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	if got := budgettest.NewAuto(start).Now(); !got.Equal(start) {
		t.Fatalf("got %v, want %v", got, start)
	}
}

func TestClock_Advance_FiresDueTimersOnly(t *testing.T) {
	c := budgettest.New(time.Time{})
	start := c.Now()
	short, long := c.NewTimer(time.Second), c.NewTimer(time.Minute)
	if c.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", c.Pending())
	}
	c.Advance(time.Second)
	select {
	case at := <-short.C():
		if !at.Equal(start.Add(time.Second)) {
			t.Fatalf("fired at %v, want %v", at, start.Add(time.Second))
		}
	default:
		t.Fatal("the 1s timer did not fire after Advance(1s)")
	}
	if fired(long.C()) || c.Pending() != 1 {
		t.Fatal("the 1m timer fired early")
	}
	if short.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
	if !long.Stop() || c.Pending() != 0 {
		t.Fatal("Stop of a pending timer did not remove it")
	}
	c.Advance(time.Hour)
	if fired(long.C()) {
		t.Fatal("a stopped timer fired")
	}
}

func TestClock_NonPositiveTimerFiresAtOnce(t *testing.T) {
	c := budgettest.New(time.Time{})
	if !fired(c.NewTimer(0).C()) || !fired(c.NewTimer(-time.Second).C()) || c.Pending() != 0 {
		t.Fatal("a timer of d <= 0 did not fire at once")
	}
}

func TestClock_BlockUntil_WaitsForPendingTimers(t *testing.T) {
	c := budgettest.New(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		c.NewTimer(time.Second)
		c.NewTimer(time.Second)
	}()
	if err := c.BlockUntil(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if c.Pending() < 2 {
		t.Fatalf("BlockUntil returned with %d pending", c.Pending())
	}
}

func TestClock_BlockUntil_ReturnsContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := budgettest.New(time.Time{}).BlockUntil(ctx, 1); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestClock_Auto_TimerFiresAtOnceAndMovesTheClock(t *testing.T) {
	c := budgettest.NewAuto(time.Time{})
	start := c.Now()
	if !fired(c.NewTimer(12 * time.Hour).C()) {
		t.Fatal("auto timer did not fire at once")
	}
	if got := c.Now().Sub(start); got != 12*time.Hour {
		t.Fatalf("clock moved %s, want 12h", got)
	}
}

func TestClock_IsRaceSafe(t *testing.T) {
	c := budgettest.New(time.Time{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				tm := c.NewTimer(time.Millisecond)
				c.Advance(time.Millisecond / 2)
				_ = c.Now()
				tm.Stop()
			}
		})
	}
	wg.Wait()
}
