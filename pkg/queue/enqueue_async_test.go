package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

// answers records the done calls of EnqueueAsync calls by number.
type answers struct {
	mu   sync.Mutex
	errs map[int][]error
	all  sync.WaitGroup
}

func newAnswers(n int) *answers {
	a := &answers{errs: map[int][]error{}}
	a.all.Add(n)
	return a
}

func (a *answers) done(i int) func(error) {
	return func(err error) {
		a.mu.Lock()
		a.errs[i] = append(a.errs[i], err)
		a.mu.Unlock()
		a.all.Done()
	}
}

// wait waits for n done calls (one per call), failing the test after 10 s.
func (a *answers) wait(t *testing.T) {
	t.Helper()
	ch := make(chan struct{})
	go func() { a.all.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("not every done was called")
	}
}

func TestEnqueueAsync_EveryCallCommittedInOrderWithOneDoneEach(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	const n = 2000
	a := newAnswers(n)
	for i := range n {
		if err := q.EnqueueAsync(context.Background(), a.done(i), []byte(fmt.Sprintf(`{"id":"%05d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	a.wait(t)
	for i := range n {
		if e := a.errs[i]; len(e) != 1 || e[0] != nil {
			t.Fatalf("call %d: done %v, want once with nil", i, e)
		}
	}
	evs := testutil.DrainAll(t, q)
	if len(evs) != n {
		t.Fatalf("%d events queued, want %d", len(evs), n)
	}
	for i, e := range evs {
		if want := fmt.Sprintf(`{"id":"%05d"}`, i); string(e) != want {
			t.Fatalf("event %d is %s, want %s (FIFO by call)", i, e, want)
		}
	}
	if st := q.Stats(); st.Commits >= n/2 {
		t.Fatalf("%d commits for %d calls from one goroutine: pending calls were not grouped", st.Commits, n)
	}
}

func TestEnqueueAsync_QuotaAndSizeAtTheRightMoment(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 100})
	if err := q.Enqueue(context.Background(), make([]byte, 90)); err != nil {
		t.Fatal(err)
	}
	a := newAnswers(1)
	if err := q.EnqueueAsync(context.Background(), a.done(0), make([]byte, 20)); err != nil {
		t.Fatalf("EnqueueAsync of what does not fit now = %v, want nil (the quota applies at commit)", err)
	}
	a.wait(t)
	if e := a.errs[0]; len(e) != 1 || !errors.Is(e[0], errs.ErrQueueFull) {
		t.Fatalf("done %v, want once with errs.ErrQueueFull", e)
	}
	if err := q.EnqueueAsync(context.Background(), func(error) { t.Error("done called for a refused call") },
		make([]byte, 101)); !errors.Is(err, errs.ErrTooLarge) {
		t.Fatalf("EnqueueAsync over MaxBytes = %v, want errs.ErrTooLarge at once", err)
	}
}

func TestEnqueueAsync_CloseAnswersEveryCallHandedOver(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{WhenFull: queue.Block, MaxBytes: 1000})
	const n = 500 // most of them wait for room that never comes
	a := newAnswers(n)
	committed := make(chan struct{}, n)
	for i := range n {
		done := a.done(i)
		answer := func(err error) {
			done(err)
			if err == nil {
				committed <- struct{}{}
			}
		}
		if err := q.EnqueueAsync(context.Background(), answer, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	// Close once the 10 that fit are committed: calls the writer has not reached yet when Close
	// begins are answered errs.ErrClosed too, so counting before would race with the writer.
	for range 10 {
		select {
		case <-committed:
		case <-time.After(10 * time.Second):
			t.Fatal("the events that fit were not committed")
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	ok, closed := 0, 0
	for i := range n {
		e := a.errs[i]
		switch {
		case len(e) != 1:
			t.Fatalf("call %d: done called %d times", i, len(e))
		case e[0] == nil:
			ok++
		case errors.Is(e[0], errs.ErrClosed):
			closed++
		default:
			t.Fatalf("call %d: done(%v)", i, e[0])
		}
	}
	if ok != 10 || closed != n-10 {
		t.Fatalf("%d committed and %d errs.ErrClosed, want 10 (what fits) and %d", ok, closed, n-10)
	}
	if err := q.EnqueueAsync(context.Background(), nil, []byte("{}")); !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("EnqueueAsync after Close = %v, want errs.ErrClosed", err)
	}
}

// A caller may reuse its buffer as soon as EnqueueAsync returns (the client normalises every
// call into one buffer it reuses): the stored events are the bytes as they were at the call,
// also under when_full: block, where a call that did not fit is appended again later.
func TestEnqueueAsync_CallerMayReuseItsBufferAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  queue.Config
	}{
		{"reject", queue.Config{}},
		{"block, appended again once there is room", queue.Config{WhenFull: queue.Block, MaxBytes: 150}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, _ := testutil.MustOpenQueue(t, c.cfg)
			const n = 3
			a := newAnswers(n)
			buf := make([]byte, 0, 64)
			for i := range n {
				buf = fmt.Appendf(buf[:0], `{"id":"%05d","pad":"%040d"}`, i, 0)
				if err := q.EnqueueAsync(context.Background(), a.done(i), buf); err != nil {
					t.Fatal(err)
				}
				copy(buf, `{"id":"XXXXX","overwritten":"by the caller"}`)
			}
			var evs [][]byte
			for len(evs) < n {
				b, err := q.Lease(context.Background(), 1, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				if b == nil { // the third call of "block" waits for the room the acks make
					select {
					case <-q.Notify():
					case <-time.After(10 * time.Second):
						t.Fatal("the call that waited for room was not appended")
					}
					continue
				}
				evs = append(evs, append([]byte(nil), b.Events[0]...))
				if err := b.Ack(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			a.wait(t)
			for i, e := range evs {
				if want := fmt.Sprintf(`{"id":"%05d","pad":"%040d"}`, i, 0); string(e) != want {
					t.Fatalf("event %d is %s, want %s", i, e, want)
				}
			}
		})
	}
}
