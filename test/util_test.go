package test_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
)

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// mustJSON encodes v.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ctxFor is a context bounded by d and the test's own end.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitDelivered waits up to d for the sink to have every one of ids, and returns how many it
// still lacks. A count of events is not enough: duplicates after a crash count too.
func waitDelivered(t testing.TB, s *sink.Server, ids []string, d time.Duration) (missing int) {
	t.Helper()
	missing = len(ids)
	deadline := time.Now().Add(d)
	for missing > 0 && time.Now().Before(deadline) {
		_ = s.WaitEvents(ctxFor(t, 200*time.Millisecond), len(ids))
		missing = 0
		for _, id := range ids {
			if s.Deliveries(id) == 0 {
				missing++
			}
		}
	}
	return missing
}

// ackLog is the ids of every event an agent answered 200 for, across its kills.
type ackLog struct {
	mu  sync.Mutex
	ids []string
}

// load is how produce sends: producers goroutines, batches of perBatch events, at most max
// batches each (0: until stopped), every other request gzipped when gzip is set.
type load struct {
	producers, perBatch, max int
	gzip                     bool
}

// produce POSTs batches to url (event ids prefix-g<G>-n<N>) until stop is closed or the agent
// is gone, recording each acknowledged batch's ids. requests counts the acknowledged requests;
// wait waits for the producers to return.
func (l *ackLog) produce(url, prefix string, ld load, stop <-chan struct{}) (requests *atomic.Int64, wait func()) {
	requests = new(atomic.Int64)
	var wg sync.WaitGroup
	for g := range ld.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ld.max == 0 || n < ld.max; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body, ids := trackBatch(fmt.Sprintf("%s-g%d-n%d", prefix, g, n), ld.perBatch)
				code, _, err := tryPost(url, body, ld.gzip && n%2 == 0)
				if err != nil {
					return // the agent is gone
				}
				if code == http.StatusOK {
					l.mu.Lock()
					l.ids = append(l.ids, ids...)
					l.mu.Unlock()
					requests.Add(1)
				}
			}
		}()
	}
	return requests, wg.Wait
}
