package uploader_test

import (
	"slices"
	"testing"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// Rate-limited waits spend no count: five 429s with Retry-After, then one counted 500, then
// success, delivers under retry.max_retries 1. Were a Retry-After charged to the counted budget,
// the 500 would find it spent and dead-letter the batch.
func TestRetry_RetryAfterThenCountedFailure_DeliversWithinMaxRetriesOne(t *testing.T) {
	s := startScript(t, "429x5:ra=1,500,ok")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Retry.MaxRetries = 1
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 2)
	if err := s.WaitEvents(waitCtx(t), 2); err != nil {
		t.Fatalf("batch not delivered: %v (requests %v)", err, retryCounts(s.Requests()))
	}
	settle(t, c)
	if want, got := []string{"-", "1", "2", "3", "4", "5", "6"}, retryCounts(s.Requests()); !slices.Equal(got, want) {
		t.Errorf("X-Retry-Count per request = %v, want %v", got, want)
	}
	wantPaths := append(slices.Repeat([]string{uploader.PathRateLimit}, 5), uploader.PathBackoff)
	if got := rec.retryPaths(); !slices.Equal(got, wantPaths) {
		t.Errorf("retry paths = %v, want %v", got, wantPaths)
	}
	if st := c.Stats(); st.Dead.Batches != 0 || st.Counters.EventsUploaded != 2 {
		t.Errorf("dead batches %d, uploaded %d; want 0 and 2", st.Dead.Batches, st.Counters.EventsUploaded)
	}
}
