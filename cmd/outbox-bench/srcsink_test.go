package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// upload posts events (gzipped) to the collector as the agent would, with key as the Basic
// auth username ("" sends none), and wants the status.
func upload(t *testing.T, s *sourceSink, key string, events ...[]byte) int {
	t.Helper()
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	fmt.Fprintf(zw, `{"batch":[%s]}`, bytes.Join(events, []byte(",")))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.endpoint(), &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "gzip")
	if key != "" {
		req.SetBasicAuth(key, "")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestSourceSinkChecksEveryUploadCarriesOneKeyAndOnlyItsEvents(t *testing.T) {
	plan := newSourcesPlan(630, 100, realTrack) // 70 live events: 10 per small sender
	keyOf := func(id int) string { return senderKey(plan.sender(id)) }
	ev := func(id int) []byte { return realTrack(id) }
	for _, tc := range []struct {
		name      string
		key       string
		ids       []int
		violation string // "" when the upload is in order
	}{
		{"the backlog's events under the big sender's key", senderKey(0), []int{0, 1, 629}, ""},
		{"a small sender's events under its key", senderKey(3), []int{650, 659}, ""},
		{"an event of another sender", senderKey(3), []int{650, 660}, `holds event msg-660 of "bench-source-4"`},
		{"a backlog event under a small sender's key", senderKey(1), []int{5}, `holds event msg-5 of "bench-source-0"`},
		{"no write key", "", []int{7}, "carries no write key"},
		{"an event that is not the run's", senderKey(0), []int{plan.total()}, "is not one of the run's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := startSourceSink(plan.total(), plan.backlog, keyOf)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			s.resume()
			var events [][]byte
			for _, id := range tc.ids {
				events = append(events, ev(id))
			}
			if code := upload(t, s, tc.key, events...); code != http.StatusOK {
				t.Fatalf("status %d, want 200 (a violation is answered 200 and reported)", code)
			}
			r := s.result()
			if tc.violation == "" && r.violations != 0 {
				t.Fatalf("violation %q on an upload in order", r.violation)
			}
			if tc.violation != "" && (r.violations == 0 || !strings.Contains(r.violation, tc.violation)) {
				t.Fatalf("violation %q (%d), want one containing %q", r.violation, r.violations, tc.violation)
			}
		})
	}
}

func TestSourceSinkCountsDistinctEventsAndClosesDoneOnTheLast(t *testing.T) {
	plan := newSourcesPlan(630, 100, realTrack)
	s, err := startSourceSink(plan.total(), plan.backlog, func(int) string { return "k" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if code := upload(t, s, "k", realTrack(0)); code != http.StatusTooManyRequests {
		t.Fatalf("paused collector answered %d, want 429", code)
	}
	if r := s.result(); r.unique != 0 {
		t.Fatalf("a refused upload counted %d events", r.unique)
	}
	s.resume()
	var all [][]byte
	for id := range plan.total() {
		all = append(all, realTrack(id))
	}
	upload(t, s, "k", all[:400]...)
	upload(t, s, "k", all[300:500]...) // 100 duplicates
	if got := s.backlogArrived(); got != 500 {
		t.Fatalf("backlog arrived %d, want 500", got)
	}
	select {
	case <-s.done:
		t.Fatal("done before every event arrived")
	default:
	}
	upload(t, s, "k", all[500:]...)
	upload(t, s, "k", all[0]) // a duplicate after the last: done stays closed once
	select {
	case <-s.done:
	default:
		t.Fatal("done not closed with every event arrived")
	}
	if r := s.result(); r.unique != plan.total() || r.duplicates != 101 {
		t.Fatalf("unique %d duplicates %d, want %d and 101", r.unique, r.duplicates, plan.total())
	}
}

func TestStampedBodyCarriesTheSendTimeTheCollectorReads(t *testing.T) {
	bb, at, err := newStampedBody(realTrack, 1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Date(2026, 12, 6, 4, 0, 0, 123456789, time.UTC).UnixNano()
	stamp := []byte(fmt.Sprintf("%0*d", sentDigits, sent))
	for _, o := range at[:3] {
		copy(bb.buf[o:o+sentDigits], stamp)
	}
	body := bb.patch(2000, 3)
	events := decodeBatch(t, body)
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	for i, e := range events {
		if !json.Valid(e) {
			t.Fatalf("event %d is not JSON: %s", i, e)
		}
	}
	ids, stamps, err := scanUpload(body)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[2000 2001 2002]" {
		t.Fatalf("messageIds %v, want [2000 2001 2002]", ids)
	}
	if len(stamps) != 3 || stamps[0] != sent || stamps[2] != sent {
		t.Fatalf("send times %v, want 3 × %d", stamps, sent)
	}
}

func TestSourcesPlanGivesTheBacklogNinetyPercent(t *testing.T) {
	for _, backlog := range []int{100_000, 1_000_000, 630} {
		p := newSourcesPlan(backlog, 100, realTrack)
		if share := float64(p.backlog) / float64(p.total()); share < 0.899 || share > 0.901 {
			t.Fatalf("backlog %d: share %.4f of %d events, want 0.9", backlog, share, p.total())
		}
		if p.sender(p.backlog-1) != 0 || p.sender(p.backlog) != 1 || p.sender(p.total()-1) != sourceSenders-1 {
			t.Fatalf("backlog %d: senders of the edges %d %d %d", backlog, p.sender(p.backlog-1), p.sender(p.backlog), p.sender(p.total()-1))
		}
	}
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := quantile(d, tc.q); got != tc.want {
			t.Fatalf("quantile %.2f = %s, want %s", tc.q, got, tc.want)
		}
	}
	if quantile(nil, 0.99) != 0 {
		t.Fatal("quantile of nothing is not 0")
	}
}
