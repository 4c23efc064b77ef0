package uploader_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Example embeds outbox in a program: open a client on a data directory, enqueue events (durable
// when Enqueue returns), and close it, which uploads what is queued within the deadline.
func Example() {
	// A local collector stands in for https://api.segment.io/v1/batch.
	collector, err := sink.Start("127.0.0.1:0", sink.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer collector.Close()
	dir, err := os.MkdirTemp("", "outbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = collector.URL() + "/v1/batch"
	cfg.Upload.WriteKey = "YOUR_WRITE_KEY"
	client, err := segment.Open(cfg)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	err = client.Enqueue(ctx,
		map[string]any{"type": "identify", "userId": "user-1", "traits": map[string]any{"plan": "pro"}},
		map[string]any{"type": "track", "userId": "user-1", "event": "Signed Up"},
		[]byte(`{"type":"page","anonymousId":"a-1","name":"Pricing"}`),
	)
	if err != nil {
		log.Fatal(err)
	}

	// On shutdown: stop intake, upload what is queued, leave the rest on disk.
	closeCtx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	if err := client.Close(closeCtx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("events delivered:", collector.Stats().Events)
	// Output: events delivered: 3
}

// ExampleClient_EnqueueAsync sends events from a loop that must not wait for a disk commit per
// event, as apps call an analytics SDK: EnqueueAsync returns once an event is accepted in
// memory, and its done says when it is durable (nil) or why it is not. Everything pending goes
// into the next commit, so one goroutine fills commits of hundreds of events.
func ExampleClient_EnqueueAsync() {
	collector, err := sink.Start("127.0.0.1:0", sink.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer collector.Close()
	dir, err := os.MkdirTemp("", "outbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = collector.URL() + "/v1/batch"
	client, err := segment.Open(cfg)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	var durable, failed atomic.Int64
	done := func(err error) { // called once per call, from the client's own goroutine
		if err != nil {
			failed.Add(1) // e.g. errs.ErrQueueFull under queue.when_full: reject; log or retry it
			return
		}
		durable.Add(1) // committed (fsynced with queue.sync: always): survives a crash
	}
	for i := range 1000 {
		ev := map[string]any{"type": "track", "userId": fmt.Sprintf("user-%d", i%10), "event": "Item Viewed"}
		// Bad input is returned at once (done is not called); past queue.max_pending_bytes
		// this waits for room or ctx.
		if err := client.EnqueueAsync(ctx, done, ev); err != nil {
			log.Fatal(err)
		}
	}

	// Close first waits for every pending event's done, then uploads what is queued.
	closeCtx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	if err := client.Close(closeCtx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("durable:", durable.Load(), "failed:", failed.Load(), "delivered:", collector.Stats().Events)
	// Output: durable: 1000 failed: 0 delivered: 1000
}

// ExampleClient_DeadLetters lists, replays and purges the batches the collector rejected for
// good, then inspects the data directory offline once the client is closed.
func ExampleClient_DeadLetters() {
	// The collector rejects the first batch for good (400 on its one event), then accepts.
	faults, err := sink.ParseFaults("400,200")
	if err != nil {
		log.Fatal(err)
	}
	collector, err := sink.Start("127.0.0.1:0", sink.Options{Script: faults})
	if err != nil {
		log.Fatal(err)
	}
	defer collector.Close()
	dir, err := os.MkdirTemp("", "outbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = collector.URL() + "/v1/batch"
	client, err := segment.Open(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := client.Enqueue(ctx, map[string]any{"type": "track", "userId": "u1", "event": "Paid"}); err != nil {
		log.Fatal(err)
	}
	if err := client.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	dead := client.DeadLetters()
	list, err := dead.List()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead batches:", len(list), "status", list[0].Info.Status)
	n, err := dead.Replay(ctx) // no IDs: every dead batch goes back to the queue
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("replayed events:", n, "delivered:", collector.Stats().Events)
	if err := client.Close(ctx); err != nil {
		log.Fatal(err)
	}

	off, err := uploader.OpenOffline(cfg) // a stopped app's directory; nothing is uploaded
	if err != nil {
		log.Fatal(err)
	}
	defer off.Close()
	st := off.Stats()
	fmt.Println("queued:", st.Queue.Events, "dead:", st.Dead.Batches)
	// Output:
	// dead batches: 1 status 400
	// replayed events: 1 delivered: 1
	// queued: 0 dead: 0
}
