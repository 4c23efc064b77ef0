package event_test

import (
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/event/eventtest"
)

// BenchmarkNormalize measures one 535-byte track event: "sdk" as SDKs send it
// (messageId, timestamp, context.library present: validation and copy only),
// "bare" with those missing (KSUID, timestamp and library spliced in).
func BenchmarkNormalize(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  func(int) []byte
	}{{"sdk", eventtest.Track}, {"bare", eventtest.TrackBare}} {
		b.Run(bc.name, func(b *testing.B) {
			raw := bc.gen(42)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := event.Normalize(raw, "", event.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkParseBatch measures a batch body of 100 535-byte track events.
func BenchmarkParseBatch(b *testing.B) {
	const n = 100
	for _, bc := range []struct {
		name string
		gen  func(int) []byte
	}{{"sdk", eventtest.Track}, {"bare", eventtest.TrackBare}} {
		b.Run(bc.name, func(b *testing.B) {
			body := eventtest.Batch(n, 0, bc.gen)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				evs, err := event.ParseBatch(body, event.Options{})
				if err != nil || len(evs) != n {
					b.Fatal(len(evs), err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkNormalizeScrub measures the "sdk" track event of BenchmarkNormalize with no rules
// and with three: one that matches nothing, one that masks context.ip and one that hashes a
// property (the 535-byte event has both fields).
func BenchmarkNormalizeScrub(b *testing.B) {
	scrub, err := event.NewScrub([]event.ScrubRule{
		{Path: "context.ip", Action: event.ScrubMask},
		{Path: "properties.revenue", Action: event.ScrubHash},
		{Path: "traits.email", Action: event.ScrubRemove},
	}, []byte("benchmark hash key, 32 bytes...."))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		scrub *event.Scrub
	}{{"none", nil}, {"rules", scrub}} {
		b.Run(bc.name, func(b *testing.B) {
			raw := eventtest.Track(42)
			opt := event.Options{Scrub: bc.scrub}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := event.Normalize(raw, "", opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
