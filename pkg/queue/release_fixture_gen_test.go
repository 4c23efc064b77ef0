package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// TestGenerateReleaseFixture writes testdata/release-1/outbox.db with the code of the release
// before several sources: ten queued events (the first three a batch with a saved retry state)
// and one dead batch of two events. It runs only with OUTBOX_WRITE_RELEASE_FIXTURE=1; the file
// it wrote is kept, so that later releases are tested against what this one wrote.
func TestGenerateReleaseFixture(t *testing.T) {
	if os.Getenv("OUTBOX_WRITE_RELEASE_FIXTURE") != "1" {
		t.Skip("set OUTBOX_WRITE_RELEASE_FIXTURE=1 to rewrite testdata/release-1")
	}
	dir := t.TempDir()
	q, err := queue.Open(dir, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		if err := q.Enqueue(ctx, []byte(fmt.Sprintf(`{"type":"track","event":"dead-%d","userId":"u","messageId":"dead-%d"}`, i, i))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := q.Lease(ctx, 2, 1<<20)
	if err != nil || b.Len() != 2 {
		t.Fatalf("lease the dead batch: %v, %v", b, err)
	}
	if err := b.DeadLetter(ctx, queue.DeadInfo{Reason: "rejected", Status: 400, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := q.Enqueue(ctx, []byte(fmt.Sprintf(`{"type":"track","event":"e%d","userId":"u","messageId":"m-%d"}`, i, i))); err != nil {
			t.Fatal(err)
		}
	}
	b, err = q.Lease(ctx, 3, 1<<20)
	if err != nil || b.Len() != 3 {
		t.Fatalf("lease: %v, %v", b, err)
	}
	if err := b.Retry(ctx, budget.State{Attempts: 2, Retries: 1, BackoffStart: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata/release-1", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/release-1/outbox.db", data, 0o644); err != nil {
		t.Fatal(err)
	}
}
