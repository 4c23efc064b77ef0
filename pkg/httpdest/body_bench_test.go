package httpdest

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
)

// BenchmarkEncode is the gzip-only ceiling of a drain (pkg/uploader's BenchmarkDrain): 20,000
// events in 500-event bodies compressed with the pooled writers, and nothing else.
func BenchmarkEncode(b *testing.B) {
	const events, perBatch = 20000, 500
	enc := newEncoder(true)
	batch := make([][]byte, perBatch)
	for i := range batch {
		batch[i] = testutil.BenchEvent(i)
	}
	batches := events / len(batch)
	b.SetBytes(int64(batches * EncodedSize(batch)))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for j := 0; j < batches; j++ {
			body, err := enc.encode(batch, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			body.Release()
		}
	}
	b.ReportMetric(float64(batches*len(batch)*b.N)/time.Since(start).Seconds(), "events/s")
}
