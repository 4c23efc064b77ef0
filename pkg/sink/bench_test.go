package sink_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
)

// benchBody is a 500-event batch of ~535-byte events, the size of real track events.
func benchBody(b *testing.B, batch int) []byte {
	b.Helper()
	pad := strings.Repeat("x", 300)
	var buf strings.Builder
	buf.WriteString(`{"batch":[`)
	for i := range batch {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"type":"track","event":"Order Completed","userId":"user-%06d","messageId":"2Z5pG8kq1vQy0mXcR7tLbN3aD%05d","timestamp":"2024-05-01T12:00:00.000Z","properties":{"revenue":12.5,"currency":"EUR","pad":%q},"context":{"library":{"name":"outbox","version":"dev"}}}`, i, i, pad)
	}
	buf.WriteString(`],"sentAt":"2024-05-01T12:00:01.000Z"}`)
	return []byte(buf.String())
}

// BenchmarkServer_Batch measures the sink's own cost per event (decode, scan, dedupe), without
// the network, on 500-event batches.
func BenchmarkServer_Batch(b *testing.B) {
	raw := benchBody(b, 500)
	for _, tc := range []struct {
		name string
		opts sink.Options
		gzip bool
	}{
		{"plain/validate", sink.Options{DiscardEvents: true}, false},
		{"plain/novalidate", sink.Options{DiscardEvents: true, NoValidate: true}, false},
		{"gzip/novalidate", sink.Options{DiscardEvents: true, NoValidate: true}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := sink.New(tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			payload := raw
			if tc.gzip {
				payload = gzipped(b, raw)
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/batch", bytes.NewReader(payload))
				if tc.gzip {
					req.Header.Set("Content-Encoding", "gzip")
				}
				w := httptest.NewRecorder()
				s.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(s.Stats().Events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkServer_Loopback posts gzipped 500-event batches to a started sink on 127.0.0.1
// from 2 concurrent clients.
func BenchmarkServer_Loopback(b *testing.B) {
	s, err := sink.Start("127.0.0.1:0", sink.Options{DiscardEvents: true, NoValidate: true, MaxRequests: 100})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := gzipped(b, benchBody(b, 500))
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := post(context.Background(), c, s.URL()+"/v1/batch", payload, map[string]string{"Content-Encoding": "gzip"})
			if err != nil || r.status != 200 {
				b.Errorf("post: %v %d", err, r.status)
				return
			}
		}
	})
	b.ReportMetric(float64(s.Stats().Events)/b.Elapsed().Seconds(), "events/s")
}
