package httpdest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchEvent returns a normalised-looking event of about 535 bytes. Its padding varies with
// i, so that gzip does not see one repeated byte.
func benchEvent(i int) []byte {
	var pad strings.Builder
	for x := uint32(i)*2654435761 + 1; pad.Len() < 535-275; x = x*1103515245 + 12345 {
		pad.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[(x>>16)%36])
	}
	return fmt.Appendf(nil, `{"type":"track","event":"Benchmark Event","userId":"user-%08d","messageId":"bench-%010d",`+
		`"timestamp":"2025-01-01T00:00:00.000Z","properties":{"plan":"pro","amount":42.5,"pad":"%s"},`+
		`"context":{"library":{"name":"outbox","version":"dev"}}}`, i%1000, i, pad.String())
}

// BenchmarkEncode is the gzip-only ceiling of a drain (pkg/uploader's BenchmarkDrain): 20,000
// events in 500-event bodies compressed with the pooled writers, and nothing else.
func BenchmarkEncode(b *testing.B) {
	const events, perBatch = 20000, 500
	enc := newEncoder(true)
	batch := make([][]byte, perBatch)
	for i := range batch {
		batch[i] = benchEvent(i)
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
