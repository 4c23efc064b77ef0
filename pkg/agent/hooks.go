package agent

import (
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// Hooks returns the uploader callbacks that feed the counters and histograms. Pass them to
// uploader.Open (uploader.WithHooks) before building the Agent. Each callback only updates
// metrics and returns at once. To chain an application's own hooks, call both from a Hooks of
// your own.
func (m *Metrics) Hooks() uploader.Hooks {
	return uploader.Hooks{
		OnEnqueued: func(n int) { m.enqueued.Add(float64(n)) },
		OnDelivered: func(b uploader.BatchInfo) {
			m.uploaded.Add(float64(b.Events))
		},
		OnDeadLetter: func(b uploader.BatchInfo, _ string) {
			m.dead.Add(float64(b.Events))
		},
		OnAttempt: func(a uploader.AttemptInfo) {
			m.uploadRequests.WithLabelValues(a.Code).Inc()
			m.uploadDuration.Observe(a.Duration.Seconds())
			m.batchEvents.Observe(float64(a.Events))
		},
		OnRetry: func(path string, wait time.Duration) {
			m.retries.WithLabelValues(path).Inc()
			m.retryWait.WithLabelValues(path).Add(wait.Seconds())
		},
		OnDrop: func(reason string, n int) {
			m.dropped.WithLabelValues(reason).Add(float64(n))
		},
		OnCommit: func(_ int, d time.Duration) {
			m.commitDuration.Observe(d.Seconds())
		},
	}
}
