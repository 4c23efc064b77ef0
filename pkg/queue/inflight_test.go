package queue_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// consumeOutOfOrder is the consumer of the "crash-ooo" child: it leases up to 8 batches ahead
// (Lease, then LeaseAfter the last), saves a retry state for some, and acks or dead-letters
// them on goroutines of their own, in whatever order they finish.
func consumeOutOfOrder(t *testing.T, q *queue.Queue, say func(string)) {
	for n := 0; ; n++ {
		b, err := q.Lease(context.Background(), 20, 1<<20)
		if err != nil {
			say("ERR " + err.Error())
			return
		}
		if b == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		win := []*queue.Lease{b}
		for len(win) < 8 {
			nb, _, err := q.LeaseAfter(win[len(win)-1], 20, 1<<20)
			if err != nil {
				say("ERR " + err.Error())
				return
			}
			if nb == nil {
				break
			}
			win = append(win, nb)
		}
		var wg sync.WaitGroup
		for i, b := range win {
			ids := make([]string, len(b.Events))
			for j, e := range b.Events {
				ids[j] = idOf(t, e)
			}
			say("L " + strings.Join(ids, ","))
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
				var err error
				switch (n + i) % 4 {
				case 3:
					err = b.DeadLetter(context.Background(), queue.DeadInfo{Reason: "test"})
					say("D " + ids[0])
				case 1:
					if err = b.Retry(context.Background(), budget.State{Attempts: 1, Retries: 1}); err == nil {
						err = b.Ack(context.Background())
					}
					say("A " + ids[0])
				default:
					err = b.Ack(context.Background())
					say("A " + ids[0])
				}
				if err != nil {
					say("ERR " + err.Error())
				}
			})
		}
		wg.Wait()
	}
}

func TestQueue_OutOfOrderAcksOfBatchesInFlight_SurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	surviveSIGKILL(t, "crash-ooo")
}

func TestQueue_RetryStateOfEveryBatchInFlight_SurvivesARestart(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	for i := range 10 {
		if err := q.Enqueue(context.Background(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Five batches of 2 in flight: [0 1] [2 3] [4 5] [6 7] [8 9].
	b, err := q.Lease(context.Background(), 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	win := []*queue.Lease{b}
	for len(win) < 5 {
		nb, _, err := q.LeaseAfter(win[len(win)-1], 2, 1<<20)
		if err != nil || nb == nil {
			t.Fatalf("LeaseAfter: %v, %v", nb, err)
		}
		win = append(win, nb)
	}
	at := time.Unix(1_700_000_000, 0)
	st2 := budget.State{Attempts: 3, Retries: 2, BackoffStart: at}
	st4 := budget.State{Attempts: 7, Retries: 1, BackoffStart: at, RateLimitStart: at.Add(time.Second)}
	for _, s := range []struct {
		b  *queue.Lease
		st budget.State
	}{{win[1], st2}, {win[3], st4}, {win[2], budget.State{Attempts: 1}}} {
		if err := s.b.Retry(context.Background(), s.st); err != nil {
			t.Fatal(err)
		}
	}
	// Acks out of order: the third batch (with a saved state) and the fifth.
	if err := win[4].Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := win[2].Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	// With room for 10 events per batch, the head run still stops before the next saved batch,
	// and every saved batch comes back whole with its own state.
	want := []struct {
		events []int
		st     budget.State
	}{{[]int{0, 1}, budget.State{}}, {[]int{2, 3}, st2}, {[]int{6, 7}, st4}}
	var prev *queue.Lease
	for i, w := range want {
		var got *queue.Lease
		if prev == nil {
			got, err = q.Lease(context.Background(), 10, 1<<20)
		} else {
			got, _, err = q.LeaseAfter(prev, 10, 1<<20)
		}
		if err != nil || got == nil {
			t.Fatalf("batch %d after the restart: %v, %v", i, got, err)
		}
		if len(got.Events) != len(w.events) {
			t.Fatalf("batch %d holds %d events, want %v", i, len(got.Events), w.events)
		}
		for j, e := range got.Events {
			if string(e) != string(ev(w.events[j])) {
				t.Fatalf("batch %d event %d = %s, want %s", i, j, e, ev(w.events[j]))
			}
		}
		if st := got.RetryState(); !st.BackoffStart.Equal(w.st.BackoffStart) || !st.RateLimitStart.Equal(w.st.RateLimitStart) ||
			st.Attempts != w.st.Attempts || st.Retries != w.st.Retries {
			t.Fatalf("batch %d retry state = %+v, want %+v", i, st, w.st)
		}
		prev = got
	}
	if nb, _, _ := q.LeaseAfter(prev, 10, 1<<20); nb != nil {
		t.Fatalf("a batch after the last one: %d events", len(nb.Events))
	}
}
