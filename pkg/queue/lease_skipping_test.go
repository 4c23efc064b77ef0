package queue_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

// A consumer holding a source (its write key was asked to wait) passes over it: Lease and a
// chain of LeaseAfter take only the other sources, "more" counts only their events, and once
// the source is no longer skipped the chain goes on with it from its own head, in order.
func TestQueue_LeaseSkipping_PassesOverSkippedSources(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{Quantum: 1})
	ctx := context.Background()
	for i := range 6 {
		for _, src := range []string{"held", "free"} {
			if err := q.EnqueueIn(ctx, src, srcEv(src, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := true
	skip := func(s string) bool { return held && s == "held" }
	tests := []struct {
		name   string
		unhold bool   // stop skipping before this lease
		source string // the source the lease must come from ("" for none)
		first  int    // its first event's number
		more   bool   // LeaseAfter's more (Lease says nothing of what follows)
	}{
		{name: "the first lease passes over the held source", source: "free", first: 0},
		{name: "the chain goes on with the free source", source: "free", first: 2, more: true},
		{name: "the free source's last batch: nothing unskipped follows", source: "free", first: 4, more: false},
		{name: "with only the held source left there is nothing to lease", source: ""},
		{name: "once no longer skipped the held source starts at its head", unhold: true, source: "held", first: 0, more: true},
	}
	var last *queue.Lease
	for _, tt := range tests {
		if tt.unhold {
			held = false
		}
		var (
			b    *queue.Lease
			more bool
			err  error
		)
		if last == nil {
			b, err = q.LeaseSkipping(ctx, 2, 1<<20, skip)
		} else {
			b, more, err = q.LeaseAfterSkipping(last, 2, 1<<20, skip)
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		switch {
		case tt.source == "" && b != nil:
			t.Fatalf("%s: leased %s's %s", tt.name, b.Source, b.Events[0])
		case tt.source == "":
			continue
		case b == nil:
			t.Fatalf("%s: nothing leased", tt.name)
		case b.Source != tt.source || string(b.Events[0]) != string(srcEv(tt.source, tt.first)) || (last != nil && more != tt.more):
			t.Fatalf("%s: leased %s's %s (more %v); want %s's event %d (more %v)", tt.name, b.Source, b.Events[0], more, tt.source, tt.first, tt.more)
		}
		last = b
	}
}
