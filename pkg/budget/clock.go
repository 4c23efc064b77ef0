package budget

import (
	"context"
	"fmt"
	"time"
)

// Clock is the source of time for the budgets and for Sleep. System is the real one;
// budgettest.Clock is a fake for tests. A Clock also satisfies backoff/v4's Clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d after now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel on which the firing time is delivered.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped a pending timer.
	Stop() bool
}

// SystemClock is the real clock: time.Now and time.NewTimer. Its zero value is ready to use.
type SystemClock struct{}

// System is the real clock. It is a zero-size value: there is nothing in it to change.
var System SystemClock

// Now returns time.Now(), which carries a monotonic reading.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }

// Sleep is the one interruptible wait of the code base. It waits d on c and returns:
//   - nil when d has passed (at once when d <= 0);
//   - ctx.Err() when ctx ends first (or has already ended);
//   - ErrWoken when a value arrives on wake or wake is closed (a nil wake never fires);
//   - an error matching both ErrBeyondDeadline and context.DeadlineExceeded, at once and without
//     waiting, when ctx has a deadline that comes before the wait would end. The deadline is
//     compared with the real time (context deadlines are real time), whatever c is.
//
// A wait is therefore never started when it cannot finish before the deadline (shutdown:
// a wait longer than the time left is not waited).
func Sleep(ctx context.Context, c Clock, d time.Duration, wake <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); d > left {
			return fmt.Errorf("%w (%s > %s left): %w", ErrBeyondDeadline, d, left.Round(time.Millisecond), context.DeadlineExceeded)
		}
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return ErrWoken
	}
}
