package agent_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

func TestPage_IsOneSelfContainedHTMLFile(t *testing.T) {
	h := start(t, setup{})
	r := h.get("/")
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %q, want 200 text/html", r.code, r.header.Get("Content-Type"))
	}
	csp := r.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("Content-Security-Policy = %q, want nothing but the agent itself", csp)
	}
	// No external asset: no src or href attribute, no URL with a scheme other than the SVG
	// namespace, no @import.
	external := regexp.MustCompile(`(?i)(\ssrc\s*=|\shref\s*=|@import|https?://(?:[^"\s]*)|//[a-z0-9.-]+\.[a-z]{2,}/)`)
	for _, m := range external.FindAllString(string(r.body), -1) {
		if m != "http://www.w3.org/2000/svg" {
			t.Errorf("page refers to something outside itself: %q", m)
		}
	}
	if r := h.get("/nope"); r.code != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404 (only / itself is the page)", r.code)
	}
}

func TestSamples_ReportsTheSampledHistory(t *testing.T) {
	clock := budgettest.New(time.Time{})
	h := start(t, setup{agent: agent.Config{Clock: clock, QueueMaxBytes: 1 << 20}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		if err := clock.BlockUntil(ctx, 1); err != nil {
			t.Fatalf("sampler never waited: %v", err)
		}
		if i == 1 {
			if r := h.post("/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E"},{"type":"track","userId":"u","event":"E"}]}`); r.code != http.StatusOK {
				t.Fatalf("ingest: %d %s", r.code, r.body)
			}
		}
		clock.Advance(time.Second)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var s agent.PageSamples
	h.get("/v1/samples").json(t, &s)
	if len(s.T) != 3 || s.Capacity != 3600 || s.IntervalSeconds != 1 || s.QueueMaxBytes != 1<<20 {
		t.Fatalf("samples: %d times, capacity %d, interval %v, max %d; want 3, 3600, 1, 1 MiB",
			len(s.T), s.Capacity, s.IntervalSeconds, s.QueueMaxBytes)
	}
	if got := s.Series["queue_events"]; len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 2 {
		t.Errorf("queue_events = %v, want [0 2 2]", got)
	}
	if got := s.Series["enqueued"]; len(got) != 3 || got[1] != 2 || got[2] != 0 {
		t.Errorf("enqueued (per sample) = %v, want [0 2 0]", got)
	}

	var newer agent.PageSamples
	h.get("/v1/samples?since="+strconv.FormatInt(s.T[1], 10)).json(t, &newer)
	if len(newer.T) != 1 || newer.T[0] != s.T[2] {
		t.Errorf("since the second sample: %v, want only the third", newer.T)
	}
	for _, bad := range []string{"yesterday", "-1", "1.5"} {
		if r := h.get("/v1/samples?since=" + bad); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "Unix milliseconds") {
			t.Errorf("since=%s: %d %s, want 400 saying what it wants", bad, r.code, r.body)
		}
	}
}

func TestSamples_CountFailedUploadAttempts(t *testing.T) {
	clock := budgettest.New(time.Time{})
	h := start(t, setup{agent: agent.Config{Clock: clock}, faults: "400x2"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for range 3 { // 400, 400 (both dead-lettered), then 200
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		h.flush()
	}
	clock.Advance(time.Second)
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var s agent.PageSamples
	h.get("/v1/samples").json(t, &s)
	if len(s.T) != 1 || s.Series["attempts"][0] != 3 || s.Series["errors"][0] != 2 {
		t.Fatalf("attempts %v errors %v, want 3 attempts, 2 of them failed, in the one sample", s.Series["attempts"], s.Series["errors"])
	}
	if len(s.Results) != 1 || s.Results[0].Codes["400"] != 2 || s.Results[0].Codes["200"] != 1 {
		t.Fatalf("results = %+v, want one second with two 400s and a 200", s.Results)
	}
}

func TestMetrics_ExportTheConfiguredQueueMax(t *testing.T) {
	cases := []struct {
		name string
		max  int64
		want string
	}{
		{name: "set max is exported", max: 64 << 20, want: "outbox_queue_max_bytes 6.7108864e+07"},
		{name: "unset max is not exported, so ratios stay empty", max: 0, want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: agent.Config{QueueMaxBytes: tc.max}})
			body := string(h.get("/metrics").body)
			has := strings.Contains(body, "outbox_queue_max_bytes ")
			if tc.want == "" && has || tc.want != "" && !strings.Contains(body, tc.want+"\n") {
				t.Fatalf("metrics do not match %q:\n%s", tc.want, grepLines(body, "queue_max"))
			}
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
