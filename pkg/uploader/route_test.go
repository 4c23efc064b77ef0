package uploader_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// rejectWhen answers status to every batch that satisfies bad, and the scripted response to
// the others.
func rejectWhen(status int, bad func(sink.Request) bool) sink.RespondFunc {
	return func(req sink.Request, scripted sink.Response) sink.Response {
		if bad(req) {
			return sink.Response{Status: status}
		}
		return scripted
	}
}

func holdsBadEvent(req sink.Request) bool {
	for _, e := range req.Events {
		if bytes.Contains(e, []byte(`"event":"bad"`)) {
			return true
		}
	}
	return false
}

// enqueueWithBad stores n events, the one at index bad named "bad".
func enqueueWithBad(t *testing.T, c *uploader.Client, n, bad int) {
	t.Helper()
	evs := make([]any, n)
	for i := range evs {
		ev := track(i)
		if i == bad {
			ev["event"] = "bad"
		}
		evs[i] = ev
	}
	if err := c.Enqueue(t.Context(), evs...); err != nil {
		t.Fatal(err)
	}
}

func TestRoute_400_BisectsToDeliverTheGoodEventsAndDeadLetterTheBadOne(t *testing.T) {
	s := sinktest.Start(t, sink.Options{Respond: rejectWhen(400, holdsBadEvent)})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueueWithBad(t, c, 8, 5)
	d := rec.waitDead(t)
	if err := s.WaitEvents(waitCtx(t), 7); err != nil {
		t.Fatalf("good events not delivered: %v", err)
	}
	if d.info.Events != 1 || d.info.Status != 400 || !strings.Contains(d.reason, "400") {
		t.Errorf("dead letter = %+v %q, want the one bad event with status 400", d.info, d.reason)
	}
	if got := s.Stats().Events; got != 7 {
		t.Errorf("sink accepted %d events, want 7", got)
	}
	list, _ := c.DeadLetters().List()
	if len(list) != 1 || list[0].Count != 1 {
		t.Fatalf("dead letters = %+v, want one batch of one event", list)
	}
	got, err := c.DeadLetters().Get(list[0].ID)
	if err != nil || len(got.Events) != 1 || !bytes.Contains(got.Events[0], []byte(`"m-5"`)) {
		t.Errorf("dead batch = %q, %v; want event m-5", got.Events, err)
	}
	if n := len(s.Requests()); n != 7 {
		t.Errorf("sink saw %d requests, want 7 (8 → 4+4 → 2+2 → 1+1)", n)
	}
}

func TestRoute_400_WithoutSplitRejected_DeadLettersTheWholeBatchAfterOneRequest(t *testing.T) {
	s := sinktest.Start(t, sink.Options{Respond: rejectWhen(400, holdsBadEvent)})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Upload.SplitRejected = false
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueueWithBad(t, c, 8, 5)
	d := rec.waitDead(t)
	if d.info.Events != 8 || len(s.Requests()) != 1 {
		t.Errorf("dead letter of %d events after %d requests, want 8 after 1", d.info.Events, len(s.Requests()))
	}
}

func TestRoute_413_SplitsUntilTheCollectorAccepts(t *testing.T) {
	s := sinktest.Start(t, sink.Options{Respond: rejectWhen(413, func(r sink.Request) bool { return r.EventCount > 2 })})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 8)
	if err := s.WaitEvents(waitCtx(t), 8); err != nil {
		t.Fatalf("not delivered: %v", err)
	}
	var sizes []int
	for _, r := range s.Accepted() {
		sizes = append(sizes, r.EventCount)
	}
	if !slices.Equal(sizes, []int{2, 2, 2, 2}) {
		t.Errorf("accepted batch sizes = %v, want [2 2 2 2]", sizes)
	}
	// The halves of a split are new batches: none carries X-Retry-Count.
	for _, rc := range retryCounts(s.Requests()) {
		if rc != "-" {
			t.Errorf("X-Retry-Count per request = %v, want all absent", retryCounts(s.Requests()))
			break
		}
	}
	if st := c.Stats(); st.Dead.Batches != 0 {
		t.Errorf("dead batches = %d, want 0", st.Dead.Batches)
	}
}

func TestRoute_413_OnASingleEvent_DeadLetters(t *testing.T) {
	s := startScript(t, "413:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 1)
	d := rec.waitDead(t)
	if d.info.Status != 413 || !strings.Contains(d.reason, "too large") {
		t.Errorf("dead letter = %+v %q", d.info, d.reason)
	}
}

func TestRoute_401_WithOnAuthFailureDeadLetter_DeadLettersWithTheReason(t *testing.T) {
	s := sinktest.Start(t, sink.Options{WriteKey: "another_key"})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Upload.OnAuthFailure = uploader.OnAuthFailureDeadLetter
	rec := newRecorder()
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
	enqueue(t, c, 0, 2)
	d := rec.waitDead(t)
	if d.info.Status != 401 || d.info.Events != 2 || !strings.Contains(d.reason, "rejected") || !strings.Contains(d.reason, "401") {
		t.Errorf("dead letter = %+v %q, want 2 events rejected with 401", d.info, d.reason)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("sink saw %d requests, want 1", n)
	}
	list, _ := c.DeadLetters().List()
	if len(list) != 1 || list[0].Info.Status != 401 || list[0].Info.Reason == "" || len(list[0].Info.Body) == 0 {
		t.Errorf("stored dead letter = %+v, want status 401, a reason and a body snippet", list)
	}
}

func TestRoute_Redirects(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		hops      int
		delivered bool
	}{
		{"307 is followed with the body", 307, 1, true},
		{"308 is followed with the body", 308, 1, true},
		{"three 307 hops are followed", 307, 3, true},
		{"a fourth hop is not followed", 307, 4, false},
		{"301 is not followed", 301, 1, false},
		{"302 is not followed", 302, 1, false},
		{"303 is not followed", 303, 1, false},
		{"304 is a failure", 304, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sinktest.Start(t, sink.Options{})
			steps := make([]sink.Response, tt.hops)
			for i := range steps {
				steps[i] = sink.Response{Status: tt.status, Location: fmt.Sprintf("%s/v1/batch?hop=%d", s.URL(), i+1)}
			}
			if err := s.SetScript(sink.Script{Steps: steps}); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			rec := newRecorder()
			c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
			enqueue(t, c, 0, 2)
			if tt.delivered {
				if err := s.WaitEvents(waitCtx(t), 2); err != nil {
					t.Fatalf("not delivered: %v", err)
				}
				settle(t, c)
			} else {
				d := rec.waitDead(t)
				if d.info.Status != tt.status || !strings.Contains(d.reason, fmt.Sprint(tt.status)) {
					t.Errorf("dead letter = %+v %q, want status %d", d.info, d.reason, tt.status)
				}
			}
			reqs := s.Requests()
			wantReqs := tt.hops + 1
			if !tt.delivered {
				wantReqs = min(tt.hops, 4)
			}
			if len(reqs) != wantReqs {
				t.Errorf("sink saw %d requests, want %d", len(reqs), wantReqs)
			}
			for _, r := range reqs {
				if r.Method != "POST" || r.EventCount != 2 {
					t.Errorf("request %d: %s with %d events, want POST with 2 (no GET, body kept)", r.Seq, r.Method, r.EventCount)
				}
			}
			if got := rec.codes(); len(got) != 1 {
				t.Errorf("attempts = %v, want 1 (redirects are part of one attempt)", got)
			}
		})
	}
}

func TestRoute_NetworkErrors_TakeTheCountedPathWithTheirClass(t *testing.T) {
	t.Run("connection refused is never_sent", func(t *testing.T) {
		cfg := testConfig(t.TempDir(), closedPort(t))
		cfg.Retry.MaxRetries = 2
		rec := newRecorder()
		c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
		enqueue(t, c, 0, 1)
		d := rec.waitDead(t)
		if got := rec.codes(); !slices.Equal(got, []string{"never_sent", "never_sent", "never_sent"}) {
			t.Errorf("attempt codes = %v, want 3 × never_sent", got)
		}
		if got := rec.retryPaths(); !slices.Equal(got, []string{uploader.PathBackoff, uploader.PathBackoff}) {
			t.Errorf("retry paths = %v, want 2 × backoff", got)
		}
		if d.info.Error != "never_sent" || d.info.Attempts != 3 {
			t.Errorf("dead letter = %+v, want error class never_sent after 3 attempts", d.info)
		}
	})
	t.Run("reset after the body is maybe_sent", func(t *testing.T) {
		s := startScript(t, "reset-after-body")
		cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
		rec := newRecorder()
		c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithHooks(rec.hooks()))
		enqueue(t, c, 0, 1)
		if err := s.WaitEvents(waitCtx(t), 1); err != nil {
			t.Fatalf("not delivered: %v", err)
		}
		settle(t, c)
		if got := rec.codes(); !slices.Equal(got, []string{"maybe_sent", "200"}) {
			t.Errorf("attempt codes = %v, want [maybe_sent 200]", got)
		}
		if got := rec.retryPaths(); !slices.Equal(got, []string{uploader.PathBackoff}) {
			t.Errorf("retry paths = %v, want [backoff]", got)
		}
		if got := retryCounts(s.Requests()); !slices.Equal(got, []string{"-", "1"}) {
			t.Errorf("X-Retry-Count = %v, want [- 1]", got)
		}
	})
}
