package agent_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// deadThree runs an agent whose collector refuses three single-event batches: 400 (rejected),
// 413 (too_large) and 500 with no retry (budget_spent); the next answer is a 400 again, then
// 200s.
func deadThree(t *testing.T) *harness {
	t.Helper()
	h := start(t, setup{faults: "400,413,500,400", upload: func(c *uploader.Config) { c.Retry.MaxRetries = 0 }})
	for i := range 3 {
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		if fr := h.flush(); !fr.Done {
			t.Fatalf("flush %d = %+v", i, fr)
		}
	}
	return h
}

// deadList lists the dead letters with query q, which must be answered 200.
func (h *harness) deadList(t *testing.T, q string) []agent.DeadBatch {
	t.Helper()
	var list agent.DeadList
	mustJSON(t, h.get("/v1/dead?"+q), &list)
	return list.Batches
}

func TestDead_List_FiltersByQuery(t *testing.T) {
	h := deadThree(t)
	all := h.deadList(t, "")
	if len(all) != 3 {
		t.Fatalf("dead letters: %+v, want 3", all)
	}
	wantReasons := []string{uploader.DeadRejected, uploader.DeadTooLarge, uploader.DeadBudgetSpent}
	for i, d := range all {
		if d.Reason != wantReasons[i] || d.Code != []string{"400", "413", "500"}[i] || d.Source != "default" || d.Detail == "" || d.Replays != 0 {
			t.Errorf("dead batch %d: %+v; want reason %s with its code, source and detail", i, d, wantReasons[i])
		}
	}
	after := url.QueryEscape(all[2].At.Add(time.Second).Format(time.RFC3339))
	tests := []struct {
		name  string
		query string
		want  []string // reasons
	}{
		{"no filter lists every batch", "", wantReasons},
		{"reason picks its batches", "reason=too_large", []string{uploader.DeadTooLarge}},
		{"status picks the last answer's code", "status=500", []string{uploader.DeadBudgetSpent}},
		{"source default holds them all", "source=default", wantReasons},
		{"another source holds none", "source=other", nil},
		{"since a duration ago holds them all", "since=1h", wantReasons},
		{"since after the last death holds none", "since=" + after, nil},
		{"until after the last death holds them all", "until=" + after, wantReasons},
		{"filters combine", "reason=rejected&status=413", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range h.deadList(t, tt.query) {
				got = append(got, d.Reason)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("GET /v1/dead?%s = %v, want %v", tt.query, got, tt.want)
			}
		})
	}
}

func TestDead_BadFilterIsRefusedNamingTheParameter(t *testing.T) {
	h := deadThree(t)
	tests := []struct {
		name, method, path, body, want string
	}{
		{"an unknown reason lists the reasons", "GET", "/v1/dead?reason=nope", "",
			`query parameter reason \"nope\": not a dead-letter reason; use one of rejected, too_large, budget_spent`},
		{"an unknown parameter lists the filters", "GET", "/v1/dead?reasons=rejected", "", `query parameter reasons \"rejected\": not a dead-letter filter`},
		{"a parameter given twice", "GET", "/v1/dead?status=400&status=500", "", `query parameter status given 2 times`},
		{"a bad time in a replay's body", "POST", "/v1/dead/replay", `{"since":"yesterday"}`, `body field since \"yesterday\": not a time`},
		{"an unknown body field on replay", "POST", "/v1/dead/replay", `{"reasons":"rejected"}`, `unknown field \"reasons\"`},
		{"ids and a filter together", "POST", "/v1/dead/purge", `{"ids":["x"],"reason":"rejected"}`, `give either \"ids\" or a filter`},
		{"a filter in the body and the query", "POST", "/v1/dead/purge?status=400", `{"reason":"rejected"}`, `in the query or in the body, not both`},
		{"purge with nothing", "POST", "/v1/dead/purge", `{}`, `purge needs batch ids`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(req{method: tt.method, path: tt.path, body: []byte(tt.body)})
			if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), tt.want) {
				t.Errorf("%s %s %s = %d %s, want 400 with %s", tt.method, tt.path, tt.body, r.code, r.body, tt.want)
			}
		})
	}
	if n := len(h.deadList(t, "")); n != 3 || h.status().Queue.Events != 0 {
		t.Fatalf("after refused requests: %d dead batches, %d queued; want the 3 untouched", n, h.status().Queue.Events)
	}
}

func TestDead_ReplayAndPurgeByFilter_CountTheReplays(t *testing.T) {
	h := deadThree(t)
	var rr agent.DeadReplayResult
	mustJSON(t, h.post("/v1/dead/replay?reason=rejected", ``), &rr)
	if rr != (agent.DeadReplayResult{Batches: 1, Events: 1}) {
		t.Fatalf("replay of the rejected batch = %+v", rr)
	}
	if fr := h.flush(); !fr.Done { // the collector refuses it once more
		t.Fatalf("flush = %+v", fr)
	}
	again := h.deadList(t, "reason=rejected")
	if len(again) != 1 || again[0].Replays != 1 {
		t.Fatalf("the replayed batch dead again: %+v; want one replay counted", again)
	}
	var one agent.DeadBatch
	mustJSON(t, h.get("/v1/dead/"+again[0].ID), &one)
	if one.Replays != 1 || len(one.Batch) != 1 {
		t.Fatalf("show of the replayed batch: %+v", one)
	}
	// A body filter: replay the budget_spent batch; the collector takes it now.
	mustJSON(t, h.post("/v1/dead/replay", `{"status":"500"}`), &rr)
	if rr != (agent.DeadReplayResult{Batches: 1, Events: 1}) {
		t.Fatalf("replay of status 500 = %+v", rr)
	}
	if fr := h.flush(); !fr.Done || h.sink.Stats().Events != 1 {
		t.Fatalf("replayed event not delivered: %+v, sink %+v", fr, h.sink.Stats())
	}
	var pr agent.DeadPurgeResult
	mustJSON(t, h.post("/v1/dead/purge", `{"all":true,"reason":"too_large"}`), &pr)
	if pr != (agent.DeadPurgeResult{Batches: 1, Events: 1}) {
		t.Fatalf("purge of too_large = %+v", pr)
	}
	left := h.deadList(t, "")
	if len(left) != 1 || left[0].Reason != uploader.DeadRejected {
		t.Fatalf("left: %+v; want the rejected batch alone", left)
	}
	mustJSON(t, h.post("/v1/dead/purge?source=other", ``), &pr)
	if pr.Batches != 0 || len(h.deadList(t, "")) != 1 {
		t.Fatalf("purge of a source with no dead letters = %+v", pr)
	}
}
