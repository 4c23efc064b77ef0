// Package testutil holds fixtures and rules shared by the tests of several packages.
package testutil

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/pkg/queue"
)

// MustOpenQueue opens a queue in a fresh t.TempDir() and closes it on
// cleanup. It returns the queue and its directory.
func MustOpenQueue(t testing.TB, cfg queue.Config) (*queue.Queue, string) {
	t.Helper()
	dir := t.TempDir()
	return MustOpenQueueAt(t, dir, cfg), dir
}

// MustOpenQueueAt opens the queue in dir (for a restart) and closes it on
// cleanup; closing it earlier is fine.
func MustOpenQueueAt(t testing.TB, dir string, cfg queue.Config) *queue.Queue {
	t.Helper()
	q, err := queue.Open(dir, cfg)
	if err != nil {
		t.Fatalf("open queue in %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// DrainAll leases and acks until the queue is empty and returns every event
// in order.
func DrainAll(t testing.TB, q *queue.Queue) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		b, err := q.Lease(context.Background(), 1000, 1<<20)
		if err != nil {
			t.Fatalf("lease: %v", err)
		}
		if b == nil {
			return out
		}
		out = append(out, b.Events...)
		if err := b.Ack(context.Background()); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
}
