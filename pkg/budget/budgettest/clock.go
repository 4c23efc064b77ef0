// Package budgettest provides a fake budget.Clock for tests.
//
// A Clock starts at a fixed instant and moves only when told to. In manual mode (New) a test
// moves it with Advance and uses BlockUntil to wait until the code under test has started a
// wait, so it advances exactly when a worker sleeps. In auto mode (NewAuto) every NewTimer moves
// the clock forward by its duration and fires at once, so a 12-hour budget runs through a real
// worker in milliseconds. All methods are safe for concurrent use.
package budgettest

import (
	"context"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// Epoch is the instant a Clock made with a zero start begins at.
var Epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is a fake budget.Clock. Its times carry no monotonic reading.
type Clock struct {
	auto bool

	mu      sync.Mutex // guards the fields below
	now     time.Time
	pending []*timer      // timers not yet fired nor stopped
	changed chan struct{} // closed and replaced whenever pending changes
}

var _ budget.Clock = (*Clock)(nil)

// New returns a manual clock at start (Epoch when zero).
func New(start time.Time) *Clock { return newClock(start, false) }

// NewAuto returns an auto-advancing clock at start (Epoch when zero): NewTimer(d) moves the
// clock forward by d (firing any timer due by then) and returns a timer that has already fired.
func NewAuto(start time.Time) *Clock { return newClock(start, true) }

func newClock(start time.Time, auto bool) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{auto: auto, now: start.Round(0), changed: make(chan struct{})}
}

// Now returns the fake current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches now+d (at once when d <= 0).
func (c *Clock) NewTimer(d time.Duration) budget.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if c.auto && d > 0 {
		c.advanceLocked(d)
	}
	if !t.at.After(c.now) {
		t.ch <- c.now
		return t
	}
	c.pending = append(c.pending, t)
	c.signalLocked()
	return t
}

// Advance moves the clock forward by d and fires every timer due by then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(d)
}

// Pending returns the number of timers that have neither fired nor been stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// BlockUntil waits until at least n timers are pending (the code under test is sleeping), or ctx
// ends, whose error it returns.
func (c *Clock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		ok, ch := len(c.pending) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Clock) advanceLocked(d time.Duration) {
	if d <= 0 {
		return
	}
	c.now = c.now.Add(d)
	kept := c.pending[:0]
	for _, t := range c.pending {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- t.at // buffered, and a timer fires once: never blocks
	}
	if len(kept) != len(c.pending) {
		clear(c.pending[len(kept):])
		c.pending = kept
		c.signalLocked()
	}
}

func (c *Clock) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type timer struct {
	clock *Clock
	at    time.Time
	ch    chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.pending {
		if p == t {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			c.signalLocked()
			return true
		}
	}
	return false
}
