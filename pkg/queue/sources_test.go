package queue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store"
)

func srcEv(src string, i int) []byte {
	return []byte(fmt.Sprintf(`{"type":"track","event":"%s-%d","userId":"u"}`, src, i))
}

// sourceOf returns the source an event made by ev names.
func sourceOf(e []byte) string {
	s := string(e)
	i := strings.Index(s, `"event":"`) + len(`"event":"`)
	return s[i : i+strings.Index(s[i:], "-")]
}

func TestQueue_Sources_BatchesNeverMixAndEachSourceIsFIFO(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i := range 30 {
		for _, src := range []string{"a", "b", "default"} {
			if err := q.EnqueueIn(ctx, src, srcEv(src, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := map[string]int{}
	for {
		b, err := q.Lease(ctx, 4, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for _, e := range b.Events {
			if got := sourceOf(e); got != b.Source {
				t.Fatalf("batch of %s holds %s", b.Source, e)
			}
			if want := srcEv(b.Source, next[b.Source]); string(e) != string(want) {
				t.Fatalf("source %s: got %s, want %s", b.Source, e, want)
			}
			next[b.Source]++
		}
		if err := b.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []string{"a", "b", "default"} {
		if next[src] != 30 {
			t.Fatalf("source %s: %d events drained, want 30", src, next[src])
		}
	}
	if st := q.Stats(); st.Events != 0 || st.Bytes != 0 {
		t.Fatalf("stats after drain: %+v", st)
	}
}

func TestQueue_Sources_LeaseAfterTakesSourcesInTurn(t *testing.T) {
	// One source with a backlog, another with one event: a chain of leases that never acks
	// (several batches in flight) reaches the small source's event in its turn, not after
	// the backlog.
	q, _ := testutil.MustOpenQueue(t, queue.Config{Quantum: 1000})
	ctx := context.Background()
	for i := range 200 {
		if err := q.EnqueueIn(ctx, "big", srcEv("big", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.EnqueueIn(ctx, "small", srcEv("small", 0)); err != nil {
		t.Fatal(err)
	}
	b, err := q.Lease(ctx, 10, 1<<20)
	if err != nil || b == nil {
		t.Fatal(b, err)
	}
	seen := []string{b.Source}
	for range 3 {
		var more bool
		b, more, err = q.LeaseAfter(b, 10, 1<<20)
		if err != nil || b == nil || !more {
			t.Fatalf("lease after: %v, more %v, %v", b, more, err)
		}
		seen = append(seen, b.Source)
	}
	if !strings.Contains(strings.Join(seen, ","), "small") {
		t.Fatalf("sources leased in turn %v: small never had its turn", seen)
	}
}

func TestQueue_Sources_ChainReadsEverySourceOnce(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{Quantum: 100})
	ctx := context.Background()
	for i := range 20 {
		for _, src := range []string{"a", "b"} {
			if err := q.EnqueueIn(ctx, src, srcEv(src, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := map[string]int{}
	b, err := q.Lease(ctx, 3, 1<<20)
	for b != nil && err == nil {
		for _, e := range b.Events {
			if want := srcEv(b.Source, next[b.Source]); string(e) != string(want) {
				t.Fatalf("source %s: got %s, want %s", b.Source, e, want)
			}
			next[b.Source]++
		}
		b, _, err = q.LeaseAfter(b, 3, 1<<20)
	}
	if err != nil || next["a"] != 20 || next["b"] != 20 {
		t.Fatalf("read %v, %v: want every event of a and b once", next, err)
	}
}

func TestQueue_Sources_FullSourceIsRefusedAlone(t *testing.T) {
	var dropped []string
	q, _ := testutil.MustOpenQueue(t, queue.Config{
		SourceMaxBytes: map[string]int64{"a": 200},
		OnDrop:         func(reason string, n int) { dropped = append(dropped, fmt.Sprint(reason, n)) },
	})
	ctx := context.Background()
	big := []byte(`{"type":"track","event":"a-0","userId":"u","p":"` + strings.Repeat("x", 100) + `"}`)
	if err := q.EnqueueIn(ctx, "a", big); err != nil {
		t.Fatal(err)
	}
	err := q.EnqueueIn(ctx, "a", big)
	if !errors.Is(err, errs.ErrQueueFull) {
		t.Fatalf("second event over a's share: %v, want ErrQueueFull", err)
	}
	if err := q.EnqueueIn(ctx, "b", big, big, big); err != nil {
		t.Fatalf("source b while a is full: %v", err)
	}
	st := q.Stats()
	if st.Dropped[store.ReasonSourceFull] != 1 || len(dropped) != 1 || dropped[0] != "source_full1" {
		t.Fatalf("dropped %v, %v: want one source_full", st.Dropped, dropped)
	}
}

func TestQueue_SetSourceMaxBytes_AppliesToTheNextEnqueues(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	ev := []byte(`{"type":"track","event":"a-0","userId":"u","p":"` + strings.Repeat("x", 100) + `"}`)
	if err := q.EnqueueIn(ctx, "a", ev, ev); err != nil {
		t.Fatalf("a without a share: %v", err)
	}
	q.SetSourceMaxBytes(map[string]int64{"a": 300})
	if err := q.EnqueueIn(ctx, "a", ev); !errors.Is(err, errs.ErrQueueFull) || q.Stats().Dropped[store.ReasonSourceFull] != 1 {
		t.Fatalf("a past its new share: %v, %v: want ErrQueueFull and one source_full", err, q.Stats().Dropped)
	}
	if err := q.EnqueueIn(ctx, "b", ev); err != nil {
		t.Fatalf("b without a share: %v", err)
	}
	q.SetSourceMaxBytes(nil)
	if err := q.EnqueueIn(ctx, "a", ev); err != nil {
		t.Fatalf("a with its share removed: %v", err)
	}
}

func TestQueue_Sources_CountsAndRetryStateSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	q := testutil.MustOpenQueueAt(t, dir, queue.Config{})
	ctx := context.Background()
	for i := range 5 {
		if err := q.EnqueueIn(ctx, "a", srcEv("a", i)); err != nil {
			t.Fatal(err)
		}
		if err := q.EnqueueIn(ctx, "b", srcEv("b", i)); err != nil {
			t.Fatal(err)
		}
	}
	var a *queue.Lease
	for a == nil || a.Source != "a" {
		b, err := q.Lease(ctx, 2, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		a = b
	}
	if err := a.Retry(ctx, budget.State{Attempts: 3, Retries: 2}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	got := map[string]queue.SourceStats{}
	for _, st := range q.Sources() {
		got[st.Name] = st
	}
	if got["a"].Events != 5 || got["b"].Events != 5 || got["default"].Events != 0 {
		t.Fatalf("sources after reopen: %+v", got)
	}
	for {
		b, err := q.Lease(ctx, 2, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b.Source == "a" {
			if b.RetryState().Attempts != 3 || b.Len() != 2 {
				t.Fatalf("a's head after reopen: %d events, retry %+v; want the saved batch", b.Len(), b.RetryState())
			}
			break
		}
		if b.RetryState().Attempts != 0 {
			t.Fatalf("b's batch carries a's retry state %+v", b.RetryState())
		}
		if err := b.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueue_Sources_DeadLetterKeepsItsSourceAndReplaysIntoIt(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	if err := q.EnqueueIn(ctx, "a", srcEv("a", 0), srcEv("a", 1)); err != nil {
		t.Fatal(err)
	}
	b, err := q.Lease(ctx, 10, 1<<20)
	if err != nil || b.Source != "a" {
		t.Fatal(b, err)
	}
	if err := b.DeadLetter(ctx, queue.DeadInfo{Reason: "rejected"}); err != nil {
		t.Fatal(err)
	}
	list, err := q.DeadList()
	if err != nil || len(list) != 1 || list[0].Info.Source != "a" {
		t.Fatalf("dead list %+v, %v: want one batch of source a", list, err)
	}
	if n, err := q.DeadReplay(ctx); err != nil || n != 2 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	b, err = q.Lease(ctx, 10, 1<<20)
	if err != nil || b.Source != "a" || b.Len() != 2 {
		t.Fatalf("after replay: %+v, %v; want a's two events back in a", b, err)
	}
}

// The file testdata/release-1/outbox.db was written by the release before several sources
// (release_fixture_gen_test.go): it opens unchanged, its events drain under the default source
// in order, the saved retry state comes back, and its dead batch lists under default.
func TestQueue_Sources_PreviousReleaseFileDrainsAsDefault(t *testing.T) {
	data, err := os.ReadFile("testdata/release-1/outbox.db")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "outbox.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	q := testutil.MustOpenQueueAt(t, dir, queue.Config{})
	ctx := context.Background()
	srcs := q.Sources()
	if len(srcs) != 1 || srcs[0].Name != "default" || srcs[0].Events != 10 {
		t.Fatalf("sources of the old file: %+v, want default with 10 events", srcs)
	}
	b, err := q.Lease(ctx, 100, 1<<20)
	if err != nil || b.Source != "default" || b.Len() != 3 || b.RetryState().Attempts != 2 {
		t.Fatalf("head of the old file: %+v, %v; want the saved batch of 3 with its retry state", b, err)
	}
	if err := b.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	rest := testutil.DrainAll(t, q)
	if len(rest) != 7 || !strings.Contains(string(rest[0]), `"e3"`) || !strings.Contains(string(rest[6]), `"e9"`) {
		t.Fatalf("rest of the old file: %d events", len(rest))
	}
	list, err := q.DeadList()
	if err != nil || len(list) != 1 || list[0].Info.Source != "default" || list[0].Count != 2 {
		t.Fatalf("dead of the old file: %+v, %v", list, err)
	}
	if st := q.Stats(); st.Events != 0 || st.DeadEvents != 2 {
		t.Fatalf("stats: %+v", st)
	}
}
