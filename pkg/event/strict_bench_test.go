package event_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
)

// BenchmarkParseBatch_NonASCII measures a batch body of 100 events whose text is not ASCII
// (city and product names in several scripts) and whose numbers have exponents: the input the
// strict checks (UTF-8, surrogate pairs, finite numbers) look at byte by byte.
func BenchmarkParseBatch_NonASCII(b *testing.B) {
	const n = 100
	var sb strings.Builder
	sb.WriteString(`{"batch":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"type":"track","userId":"user-%d","event":"Commande passée","properties":`+
			`{"city":"Zürich","shop":"東京店 – São Paulo","note":"\ud83d\ude00 très bien","total":4.25e2,"ratio":1e-3},`+
			`"messageId":"m-%d","timestamp":"2024-05-01T12:00:00.000Z","context":{"library":{"name":"x","version":"1"},"locale":"fr-CH"}}`, i, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		evs, err := event.ParseBatch(body, event.Options{})
		if err != nil || len(evs) != n {
			b.Fatal(len(evs), err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
