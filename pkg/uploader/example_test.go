package uploader_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

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
	client, err := uploader.Open(cfg)
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
