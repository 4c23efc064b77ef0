package uploader_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// A dead batch replayed keeps its events byte for byte, and each time it dies again it records
// one more replay; once the collector takes it, it arrives with its messageIds.
func TestDeadLetters_ReplayKeepsMessageIDsAndCountsTheReplays(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	s := sinktest.Start(t, sink.Options{Respond: func(_ sink.Request, scripted sink.Response) sink.Response {
		if refuse.Load() {
			return sink.Response{Status: 400, Body: `{"error":"bad"}`}
		}
		return scripted
	}})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Upload.SplitRejected = false // one batch of both events, dead or delivered whole
	c := open(t, cfg, uploader.WithClock(autoClock()))
	ctx := waitCtx(t)
	enqueue(t, c, 0, 2)
	dl := c.DeadLetters()
	deadOnce := func(wantReplays int) uploader.DeadBatch {
		t.Helper()
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		list, err := dl.ListMatching(uploader.DeadFilter{Reason: uploader.DeadRejected, Status: "400"})
		if err != nil || len(list) != 1 {
			t.Fatalf("rejected dead letters: %+v, %v; want one", list, err)
		}
		d := list[0]
		if d.Info.Replays != wantReplays || d.Info.Code != "400" || !strings.Contains(d.Info.Detail, "400") || d.Count != 2 {
			t.Fatalf("dead letter %+v; want 2 events, code 400, %d replays", d.Info, wantReplays)
		}
		return d
	}
	first := deadOnce(0)
	sent, err := dl.Get(first.ID)
	if err != nil || len(sent.Events) != 2 {
		t.Fatalf("first dead letter: %+v, %v", sent, err)
	}
	for replays := 1; replays <= 2; replays++ {
		res, err := dl.ReplayMatching(ctx, uploader.DeadFilter{Source: "default", Reason: uploader.DeadRejected})
		if err != nil || res != (uploader.DeadResult{Batches: 1, Events: 2}) {
			t.Fatalf("replay: %+v, %v", res, err)
		}
		again := deadOnce(replays)
		got, err := dl.Get(again.ID)
		if err != nil || again.ID == first.ID || !slices.EqualFunc(got.Events, sent.Events, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("dead again: %q, %v; want a new dead batch of the events as first dead-lettered, %q", got.Events, err, sent.Events)
		}
	}
	refuse.Store(false)
	if res, err := dl.ReplayMatching(ctx, uploader.DeadFilter{Status: "400"}); err != nil || res.Events != 2 {
		t.Fatalf("last replay: %+v, %v", res, err)
	}
	if err := s.WaitEvents(ctx, 2); err != nil {
		t.Fatal(err)
	}
	acc := s.Accepted()
	if len(acc) != 1 || !slices.Equal(acc[0].MessageIDs, []string{"m-0", "m-1"}) {
		t.Fatalf("accepted: %+v; want one batch with the messageIds as enqueued", acc)
	}
	if list, _ := dl.List(); len(list) != 0 {
		t.Fatalf("dead letters left: %+v", list)
	}
}

// testdata/dead-release-1 was written by the release before dead-letter reasons and codes
// (dead_fixture_gen_test.go): its dead batches list with their reason, code and sentence, and
// filters pick them.
func TestDeadLetters_PreviousReleaseFileReadsWithReasonsAndFilters(t *testing.T) {
	data, err := os.ReadFile("testdata/dead-release-1/outbox.db")
	if err != nil {
		t.Fatal(err)
	}
	cfg := uploader.DefaultConfig()
	cfg.DataDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "outbox.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := uploader.OpenOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	dl := o.DeadLetters()
	list, err := dl.List()
	if err != nil || len(list) != 4 {
		t.Fatalf("dead letters of the old file: %d, %v; want 4", len(list), err)
	}
	want := []struct{ reason, code, source, detail string }{
		{uploader.DeadRejected, "400", "default", "rejected: collector answered 400"},
		{uploader.DeadTooLarge, "413", "default", "too large: collector answered 413"},
		{uploader.DeadBudgetSpent, "500", "default", "retry budget spent: retry.max_retries"},
		{uploader.DeadRejected, "400", "a", "rejected: collector answered 400"},
	}
	for i, w := range want {
		in := list[i].Info
		if in.Reason != w.reason || in.Code != w.code || in.Source != w.source || !strings.HasPrefix(in.Detail, w.detail) || in.Replays != 0 {
			t.Errorf("dead batch %d: %+v; want reason %s, code %s, source %s, detail %q…", i, in, w.reason, w.code, w.source, w.detail)
		}
	}
	for _, tt := range []struct {
		f    uploader.DeadFilter
		want int
	}{
		{uploader.DeadFilter{Reason: uploader.DeadRejected}, 2},
		{uploader.DeadFilter{Reason: uploader.DeadTooLarge}, 1},
		{uploader.DeadFilter{Status: "500"}, 1},
		{uploader.DeadFilter{Source: "a"}, 1},
		{uploader.DeadFilter{Source: "default", Reason: uploader.DeadRejected}, 1},
		{uploader.DeadFilter{Until: list[0].At}, 0},
	} {
		if got, err := dl.ListMatching(tt.f); err != nil || len(got) != tt.want {
			t.Errorf("ListMatching(%+v) = %d batches, %v; want %d", tt.f, len(got), err, tt.want)
		}
	}
	res, err := dl.PurgeMatching(context.Background(), uploader.DeadFilter{Reason: uploader.DeadTooLarge})
	if err != nil || res != (uploader.DeadResult{Batches: 1, Events: 1}) {
		t.Fatalf("purge too_large: %+v, %v", res, err)
	}
	res, err = dl.ReplayMatching(context.Background(), uploader.DeadFilter{Source: "a"})
	if err != nil || res != (uploader.DeadResult{Batches: 1, Events: 1}) {
		t.Fatalf("replay a's: %+v, %v", res, err)
	}
	if st := o.Stats(); st.Queue.Events != 1 || st.Dead.Batches != 2 {
		t.Fatalf("after the purge and the replay: queue %+v, dead %+v", st.Queue, st.Dead)
	}
}
