package uploader_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Rate-limited waits spend no count: under retry.max_retries 1, five 429s with Retry-After
// deliver, and so do five 429s followed by one counted 500. Were a Retry-After charged to the
// counted budget, the 500 would find it spent and dead-letter the batch.
func TestRetry_RetryAfterSpendsNoCount_DeliversWithinMaxRetriesOne(t *testing.T) {
	rateLimited := slices.Repeat([]string{uploader.PathRateLimit}, 5)
	cases := []struct {
		name, script string
		wantCounts   []string // X-Retry-Count per request ("-" = absent)
		wantPaths    []string
	}{
		{"five 429s", "429x5:ra=1", []string{"-", "1", "2", "3", "4", "5"}, rateLimited},
		{"five 429s then a counted 500", "429x5:ra=1,500,ok", []string{"-", "1", "2", "3", "4", "5", "6"},
			append(slices.Clone(rateLimited), uploader.PathBackoff)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startScript(t, tc.script)
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			cfg.Retry.MaxRetries = 1
			rec := newRecorder()
			c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
			enqueue(t, c, 0, 2)
			if err := s.WaitEvents(waitCtx(t), 2); err != nil {
				t.Fatalf("batch not delivered: %v (requests %v)", err, retryCounts(s.Requests()))
			}
			settle(t, c)
			if got := retryCounts(s.Requests()); !slices.Equal(got, tc.wantCounts) {
				t.Errorf("X-Retry-Count per request = %v, want %v", got, tc.wantCounts)
			}
			if got := rec.retryPaths(); !slices.Equal(got, tc.wantPaths) {
				t.Errorf("retry paths = %v, want %v", got, tc.wantPaths)
			}
			if st := c.Stats(); st.Dead.Batches != 0 || st.Counters.EventsUploaded != 2 {
				t.Errorf("dead batches %d, uploaded %d; want 0 and 2", st.Dead.Batches, st.Counters.EventsUploaded)
			}
		})
	}
}

func TestRetry_500ElevenTimes_DeadLettersAfterExactly11Attempts(t *testing.T) {
	s := startScript(t, "500x11")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Retry.MaxRetries = 10
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 3)
	d := rec.waitDead(t)
	if n := len(s.Requests()); n != 11 {
		t.Errorf("sink saw %d requests, want 11", n)
	}
	if d.info.Attempts != 11 || d.info.Status != 500 || d.info.Events != 3 {
		t.Errorf("dead letter info = %+v, want 11 attempts, status 500, 3 events", d.info)
	}
	if !strings.Contains(d.reason, "retry.max_retries") {
		t.Errorf("reason %q does not name retry.max_retries", d.reason)
	}
	st := c.Stats()
	if st.Dead.Batches != 1 || st.Dead.Events != 3 || st.Queue.Events != 0 {
		t.Errorf("stats = %+v, want 1 dead batch of 3 and an empty queue", st)
	}
	list, err := c.DeadLetters().List()
	if err != nil || len(list) != 1 || list[0].Info.Attempts != 11 || list[0].Info.Status != 500 {
		t.Errorf("DeadList = %+v, %v", list, err)
	}
}

func TestRetry_RetryAfterUsability_ChoosesThePath(t *testing.T) {
	tests := []struct {
		name string
		spec string
		path string
	}{
		{"503 without Retry-After is counted", "503", uploader.PathBackoff},
		{"Retry-After 0 counts as absent", "503:ra=0", uploader.PathBackoff},
		{"garbage Retry-After counts as absent", "503:ra=soon", uploader.PathBackoff},
		{"past date counts as absent", "503:ra=date-1h", uploader.PathBackoff},
		{"503 with seconds is rate-limited", "503:ra=2", uploader.PathRateLimit},
		{"529 with seconds is rate-limited", "529:ra=2", uploader.PathRateLimit},
		{"429 with a future date is rate-limited", "429:ra=date+1h", uploader.PathRateLimit},
		{"408 without Retry-After is counted", "408", uploader.PathBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := autoClock()
			sc, err := sink.ParseFaults(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			// The sink renders Retry-After dates on the client's (fake) clock.
			s := sinktest.Start(t, sink.Options{Script: sc, Now: clock.Now})
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			rec := newRecorder()
			c := open(t, cfg, uploader.WithClock(clock), uploader.WithHooks(rec.hooks()))
			enqueue(t, c, 0, 1)
			if err := s.WaitEvents(waitCtx(t), 1); err != nil {
				t.Fatalf("not delivered: %v", err)
			}
			settle(t, c)
			if got := rec.retryPaths(); !slices.Equal(got, []string{tt.path}) {
				t.Errorf("retry paths = %v, want [%s]", got, tt.path)
			}
			if got := retryCounts(s.Requests()); !slices.Equal(got, []string{"-", "1"}) {
				t.Errorf("X-Retry-Count = %v, want [- 1]", got)
			}
		})
	}
}

func TestRetry_CountedBudgetOf12h_IsSpentOnTheFakeClock(t *testing.T) {
	s := startScript(t, "500:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Retry.MaxRetries = 100000
	cfg.Retry.BackoffBase = time.Second
	cfg.Retry.BackoffCap = 10 * time.Minute
	cfg.Retry.MaxTotalBackoff = 12 * time.Hour
	clock := autoClock()
	start := clock.Now()
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(clock), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 1)
	d := rec.waitDead(t)
	if !strings.Contains(d.reason, "retry.max_total_backoff") {
		t.Errorf("reason %q does not name retry.max_total_backoff", d.reason)
	}
	elapsed := clock.Now().Sub(start)
	if elapsed > 12*time.Hour+10*time.Minute || elapsed < 12*time.Hour-20*time.Minute {
		t.Errorf("budget spent after %s on the fake clock, want about 12h", elapsed)
	}
}

func TestRetry_RateLimitBudgetOf12h_IsSpentOnTheFakeClock(t *testing.T) {
	s := startScript(t, "429:ra=300:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Retry.MaxRetries = 1 // Retry-After waits must not spend it
	clock := autoClock()
	start := clock.Now()
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(clock), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 1)
	d := rec.waitDead(t)
	if !strings.Contains(d.reason, "retry.max_rate_limit_duration") {
		t.Errorf("reason %q does not name retry.max_rate_limit_duration", d.reason)
	}
	// 12h of 300s waits: 144 waits, so 145 attempts, the last one refused a wait.
	if n := len(s.Requests()); n != 145 {
		t.Errorf("sink saw %d requests, want 145", n)
	}
	counts := retryCounts(s.Requests())
	if counts[len(counts)-1] != "144" {
		t.Errorf("last X-Retry-Count = %s, want 144", counts[len(counts)-1])
	}
	if elapsed := clock.Now().Sub(start); elapsed < 12*time.Hour || elapsed > 12*time.Hour+time.Minute {
		t.Errorf("budget spent after %s on the fake clock, want 12h", elapsed)
	}
}
