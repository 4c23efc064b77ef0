package agent

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestRing_KeepsTheNewestRowsOldestFirst(t *testing.T) {
	cases := []struct {
		name   string
		adds   int
		since  int64
		wantTs []int64
	}{
		{name: "empty ring has no rows", adds: 0, wantTs: []int64{}},
		{name: "partly filled ring keeps every row", adds: 2, wantTs: []int64{1, 2}},
		{name: "full ring keeps every row", adds: 3, wantTs: []int64{1, 2, 3}},
		{name: "wrapped ring drops the oldest", adds: 5, wantTs: []int64{3, 4, 5}},
		{name: "since skips rows at or before it", adds: 5, since: 3, wantTs: []int64{4, 5}},
		{name: "since past the newest row gives none", adds: 5, since: 9, wantTs: []int64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(3, 2)
			for i := 1; i <= tc.adds; i++ {
				r.add(int64(i), []int64{int64(i) * 10, int64(i) * 100})
			}
			ts, cols := r.since(tc.since)
			if !reflect.DeepEqual(ts, tc.wantTs) {
				t.Fatalf("times = %v, want %v", ts, tc.wantTs)
			}
			for k, at := range ts {
				if cols[0][k] != at*10 || cols[1][k] != at*100 {
					t.Fatalf("row at %d = (%d, %d), want (%d, %d)", at, cols[0][k], cols[1][k], at*10, at*100)
				}
			}
		})
	}
}

func TestSampler_HourOfSamplesStaysUnderAFewHundredKiB(t *testing.T) {
	s := newSampler(budgettest.New(time.Time{}), sampleInterval, sampleCapacity, func() snapshot { return snapshot{} })
	if got := s.ring.capacity(); time.Duration(got)*sampleInterval != time.Hour {
		t.Fatalf("ring holds %d samples of %s, want one hour", got, sampleInterval)
	}
	size := int(unsafe.Sizeof(int64(0))) * (len(s.ring.t) + len(s.ring.vals))
	if size > 400<<10 {
		t.Fatalf("ring holds %d bytes, want at most 400 KiB", size)
	}
}

// fakeSource is a stats source whose counters the test moves.
type fakeSource struct {
	mu    sync.Mutex
	stats uploader.Stats
	codes map[string]int64
}

func (f *fakeSource) set(queued, enqueued, uploaded int64, codes map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.Queue.Events = queued
	f.stats.Counters.EventsEnqueued = enqueued
	f.stats.Counters.EventsUploaded = uploaded
	f.codes = codes
}

func (f *fakeSource) read() snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return snapshot{stats: f.stats, codes: f.codes}
}

func TestSampler_StoresLevelsAsIsAndCountersAsChanges(t *testing.T) {
	clock := budgettest.New(time.Time{})
	src := &fakeSource{}
	src.set(5, 100, 90, map[string]int64{"200": 9}) // before the sampler starts: the baseline
	s := newSampler(clock, time.Second, 10, src.read)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	steps := []struct {
		queued, enqueued, uploaded int64
		codes                      map[string]int64
	}{
		{7, 110, 95, map[string]int64{"200": 10}},
		{7, 110, 95, map[string]int64{"200": 10}},
		{2, 115, 115, map[string]int64{"200": 11, "503": 2, "maybe_sent": 1}},
	}
	for _, st := range steps {
		waitTimer(t, clock)
		src.set(st.queued, st.enqueued, st.uploaded, st.codes)
		clock.Advance(time.Second)
	}
	waitTimer(t, clock) // the last sample is in once the next wait began

	got := s.samples(0)
	want := map[string][]int64{
		"queue_events": {7, 7, 2},
		"enqueued":     {10, 0, 5},
		"uploaded":     {5, 0, 20},
		"attempts":     {1, 0, 4},
		"errors":       {0, 0, 3},
	}
	for name, w := range want {
		if !reflect.DeepEqual(got.Series[name], w) {
			t.Errorf("series %s = %v, want %v", name, got.Series[name], w)
		}
	}
	start := budgettest.Epoch.UnixMilli()
	if wantT := []int64{start + 1000, start + 2000, start + 3000}; !reflect.DeepEqual(got.T, wantT) {
		t.Errorf("times = %v, want %v", got.T, wantT)
	}
	if len(got.Results) != 2 || !reflect.DeepEqual(got.Results[0].Codes, map[string]int64{"200": 1, "503": 2, "maybe_sent": 1}) {
		t.Errorf("results = %+v, want two seconds with attempts, newest first", got.Results)
	}
	if got.Codes["503"] != 2 || got.Codes["200"] != 11 {
		t.Errorf("codes since start = %v", got.Codes)
	}
	if newer := s.samples(start + 2000); !reflect.DeepEqual(newer.T, []int64{start + 3000}) {
		t.Errorf("samples since the second = %v, want only the third", newer.T)
	}
}

func TestSampler_KeepsTheLastResultsBounded(t *testing.T) {
	s := newSampler(budgettest.New(time.Time{}), time.Second, 10, nil)
	s.baseline(snapshot{})
	for i := 1; i <= maxResults+5; i++ {
		s.take(budgettest.Epoch.Add(time.Duration(i)*time.Second), snapshot{codes: map[string]int64{"200": int64(i)}})
	}
	got := s.samples(0).Results
	if len(got) != maxResults {
		t.Fatalf("kept %d results, want %d", len(got), maxResults)
	}
	if newest := got[0].At; !newest.Equal(budgettest.Epoch.Add((maxResults + 5) * time.Second)) {
		t.Fatalf("first result at %s, want the newest", newest)
	}
}

func TestIsSuccessCode_OnlyThreeDigit2xxStatusesCount(t *testing.T) {
	for code, want := range map[string]bool{"200": true, "204": true, "299": true, "2xx": false, "503": false,
		"429": false, "maybe_sent": false, "20": false, "2000": false} {
		if got := isSuccessCode(code); got != want {
			t.Errorf("isSuccessCode(%q) = %v, want %v", code, got, want)
		}
	}
}

// waitTimer waits until the sampler has started its next wait on clock.
func waitTimer(t *testing.T, clock *budgettest.Clock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("sampler never waited: %v", err)
	}
}
